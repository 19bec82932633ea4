package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// recorder collects informer notifications.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(kind string, obj any) {
	name := ""
	switch o := obj.(type) {
	case metav1.Object:
		name = o.GetName()
	case cache.DeletedFinalStateUnknown:
		// A delete the informer learnt of by relisting.
		name = o.Key
		if m, ok := o.Obj.(metav1.Object); ok {
			name = m.GetName()
		}
	}
	r.mu.Lock()
	r.events = append(r.events, kind+" "+name)
	r.mu.Unlock()
}

func (r *recorder) handler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.add("add", o) },
		UpdateFunc: func(_, o any) { r.add("update", o) },
		DeleteFunc: func(o any) { r.add("delete", o) },
	}
}

// count is the number of notifications so far.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// since returns the notifications after the first n.
func (r *recorder) since(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events[n:]...)
}

func (r *recorder) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, e := range r.events {
			if e == want {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Fatalf("informer never saw %q; saw %v", want, r.events)
}

// TestInformers runs client-go 0.37 typed and dynamic informers with their
// default settings (protobuf requests, streaming list) against the server:
// they sync the existing objects and then see adds, updates and deletes.
func TestInformers(t *testing.T) {
	s := startServer(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := "informers"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace (protobuf body): %v", err)
	}
	for i := 0; i < 3; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("before-%d", i), Namespace: ns}, Data: map[string]string{"i": fmt.Sprint(i)}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create configmap: %v", err)
		}
	}

	typed := &recorder{}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	cmInformer := factory.Core().V1().ConfigMaps().Informer()
	if _, err := cmInformer.AddEventHandler(typed.handler()); err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn := &recorder{}
	dfactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, ns, nil)
	dInformer := dfactory.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Informer()
	if _, err := dInformer.AddEventHandler(dyn.handler()); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	dfactory.Start(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, 20*time.Second)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), cmInformer.HasSynced, dInformer.HasSynced) {
		t.Fatal("informers did not sync within 20s")
	}
	for _, r := range []*recorder{typed, dyn} {
		r.waitFor(t, "add before-2")
	}
	// The root-ca-cert-publisher adds kube-root-ca.crt to the namespace
	// at its own pace: only the test's ConfigMaps are counted.
	ours := 0
	for _, o := range cmInformer.GetStore().List() {
		if strings.HasPrefix(o.(*corev1.ConfigMap).Name, "before-") {
			ours++
		}
	}
	if ours != 3 {
		t.Errorf("typed informer store has %d of the test's ConfigMaps after sync, want 3", ours)
	}

	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"changed": "yes"}
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "live", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*recorder{typed, dyn} {
		r.waitFor(t, "add live")
		r.waitFor(t, "update live")
		r.waitFor(t, "delete live")
	}
	obj, ok, err := dInformer.GetStore().GetByKey(ns + "/before-1")
	if err != nil || !ok {
		t.Fatalf("dynamic store lacks before-1: %v", err)
	}
	if u := obj.(*unstructured.Unstructured); u.GetKind() != "ConfigMap" {
		t.Errorf("dynamic informer object kind %q", u.GetKind())
	}
}
