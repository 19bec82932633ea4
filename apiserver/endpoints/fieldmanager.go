package endpoints

import (
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"

	"github.com/skiffkube/skiff/apiserver/registry"
)

// fieldManagers builds and caches one structured-merge-diff field manager
// per kind and subresource: it tracks managedFields on every write and does
// server-side apply.
type fieldManagers struct {
	mu      sync.Mutex
	byKey   map[string]*managedfields.FieldManager
	builtin managedfields.TypeConverter
	deduced managedfields.TypeConverter
}

func newFieldManagers() *fieldManagers {
	return &fieldManagers{
		byKey:   map[string]*managedfields.FieldManager{},
		builtin: applyconfigurations.NewTypeConverter(Scheme),
		deduced: managedfields.NewDeducedTypeConverter(),
	}
}

func (f *fieldManagers) get(res *registry.Resource, subresource string) (*managedfields.FieldManager, error) {
	key := res.GVK().String() + "/" + subresource
	f.mu.Lock()
	defer f.mu.Unlock()
	if fm, ok := f.byKey[key]; ok {
		return fm, nil
	}
	var (
		fm  *managedfields.FieldManager
		err error
	)
	if res.Unstructured() {
		conv := unstructuredConvertor{}
		fm, err = managedfields.NewDefaultCRDFieldManager(f.deduced, conv, conv, conv, res.GVK(), res.GroupVersion(), subresource, nil)
	} else if !builtinSchema[res.Group] {
		// Typed kinds outside k8s.io/api (CRDs themselves) have no schema
		// in client-go's parser: their fields are deduced from the object.
		fm, err = managedfields.NewDefaultFieldManager(f.deduced, Scheme, Scheme, Scheme, res.GVK(), res.GroupVersion(), subresource, nil)
	} else {
		fm, err = managedfields.NewDefaultFieldManager(f.builtin, Scheme, Scheme, Scheme, res.GVK(), res.GroupVersion(), subresource, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("field manager for %s: %w", res.GVK(), err)
	}
	f.byKey[key] = fm
	return fm, nil
}

// builtinSchema lists the groups whose types client-go's structured-merge
// schema knows.
var builtinSchema = func() map[string]bool {
	m := map[string]bool{}
	for _, gv := range Scheme.PrioritizedVersionsAllGroups() {
		if gv.Group != "apiextensions.k8s.io" && gv.Group != "meta.k8s.io" {
			m[gv.Group] = true
		}
	}
	return m
}()

// managerName is the field manager of a non-apply write: the fieldManager
// parameter, else the client's user agent program name as Kubernetes does.
func managerName(req *request) string {
	if m := req.query("fieldManager"); m != "" {
		return m
	}
	ua := req.r.UserAgent()
	if i := strings.IndexAny(ua, "/ "); i > 0 {
		ua = ua[:i]
	}
	if ua == "" {
		return "unknown"
	}
	if len(ua) > 128 {
		ua = ua[:128]
	}
	return ua
}

// unstructuredConvertor is the identity conversion, defaulting and
// creation for custom resources, which are served in one version.
type unstructuredConvertor struct{}

func (unstructuredConvertor) Convert(in, out, context any) error {
	src, ok1 := in.(*unstructured.Unstructured)
	dst, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("cannot convert %T to %T", in, out)
	}
	dst.Object = runtime.DeepCopyJSON(src.Object)
	return nil
}

func (unstructuredConvertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	kind := in.GetObjectKind().GroupVersionKind()
	if target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{kind}); ok && target != kind {
		return nil, fmt.Errorf("custom resources are served in one version: cannot convert %s to %s", kind, target)
	}
	return in, nil
}

func (unstructuredConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

func (unstructuredConvertor) Default(runtime.Object) {}

func (unstructuredConvertor) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(kind)
	return u, nil
}
