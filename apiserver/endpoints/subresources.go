package endpoints

import (
	"fmt"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiffkube/skiff/apiserver/registry"
)

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// serveScale serves <name>/scale as autoscaling/v1 Scale.
func (h *Handler) serveScale(req *request) error {
	paths := req.res.Subresources.Scale
	if paths == nil {
		return errors.NewNotFound(req.res.GroupResource(), req.info.Name)
	}
	switch req.info.Verb {
	case "get":
		obj, _, err := h.load(req, req.info.Namespace, req.info.Name)
		if err != nil {
			return err
		}
		sc, err := toScale(obj, paths)
		if err != nil {
			return err
		}
		req.reply(http.StatusOK, sc)
		return nil
	case "update", "patch":
	default:
		return errors.NewMethodNotSupported(schema.GroupResource{Group: req.res.Group, Resource: req.res.Name + "/scale"}, req.info.Verb)
	}
	body, err := readBody(req)
	if err != nil {
		return err
	}
	dry, err := req.dryRun()
	if err != nil {
		return err
	}
	media := contentType(req.r.Header.Get("Content-Type"))
	var put *autoscalingv1.Scale
	if req.info.Verb == "update" {
		put = &autoscalingv1.Scale{}
		if err := decodeOptions(media, body, put); err != nil {
			return err
		}
		// As Kubernetes' UpdateResource, before the object is read: the
		// Scale must name the URL's object.
		if err := checkSubresourceName(req, &put.ObjectMeta, true); err != nil {
			return err
		}
	}
	out, err := h.guaranteedUpdate(req, req.res.Strategy, req.info.Name, dry, func(cur runtime.Object) (runtime.Object, error) {
		current, err := toScale(cur, paths)
		if err != nil {
			return nil, err
		}
		want := &autoscalingv1.Scale{}
		if put != nil {
			put.DeepCopyInto(want)
		} else {
			curJSON, err := encodeObject(current)
			if err != nil {
				return nil, errors.NewInternalError(err)
			}
			var patched []byte
			switch media {
			case mediaMergePatch:
				patched, err = jsonpatch.MergePatch(curJSON, body)
			case mediaJSONPatch:
				var p jsonpatch.Patch
				if p, err = jsonpatch.DecodePatch(body); err == nil {
					patched, err = p.Apply(curJSON)
				}
			case mediaStrategic:
				patched, err = strategicpatch.StrategicMergePatch(curJSON, body, &autoscalingv1.Scale{})
			default:
				return nil, unsupportedPatch(media)
			}
			if err != nil {
				return nil, errors.NewBadRequest(fmt.Sprintf("error applying patch to Scale: %v", err))
			}
			if err := jsonUnmarshal(patched, want); err != nil {
				return nil, errors.NewBadRequest(fmt.Sprintf("error decoding patched Scale: %v", err))
			}
			// As Kubernetes' patcher: the patched Scale must still name
			// the URL's object.
			if err := checkSubresourceName(req, &want.ObjectMeta, true); err != nil {
				return nil, err
			}
		}
		if want.Spec.Replicas < 0 {
			return nil, errors.NewInvalid(scaleGVK.GroupKind(), req.info.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), want.Spec.Replicas, "must be greater than or equal to 0")})
		}
		obj, err := setReplicas(cur, paths, int64(want.Spec.Replicas))
		if err != nil {
			return nil, err
		}
		accessor(obj).SetResourceVersion(want.ResourceVersion)
		return obj, nil
	}, nil)
	if err != nil {
		return err
	}
	sc, err := toScale(out.obj, paths)
	if err != nil {
		return err
	}
	req.reply(http.StatusOK, sc)
	return nil
}

// checkSubresourceName refuses a subresource body (Scale, a finalized
// Namespace) that names another object than the URL, as Kubernetes' update
// and patch handlers do for every body (EnsureObjectNamespaceMatchesRequest-
// Namespace, then checkName): 400 rather than a write to the URL's object.
// A body without a namespace takes the URL's.
func checkSubresourceName(req *request, m *metav1.ObjectMeta, namespaced bool) error {
	if namespaced && m.Namespace != "" && m.Namespace != req.info.Namespace {
		return errors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if m.Name != req.info.Name {
		return errors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.Name, req.info.Name))
	}
	return nil
}

func contentOf(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// toScale reads the Scale view of an object.
func toScale(obj runtime.Object, paths *registry.ScalePaths) (*autoscalingv1.Scale, error) {
	content, err := contentOf(obj)
	if err != nil {
		return nil, errors.NewInternalError(err)
	}
	m := accessor(obj)
	sc := &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp(),
		},
	}
	if v, ok, _ := unstructured.NestedFieldNoCopy(content, strings.Split(paths.SpecReplicas, ".")...); ok {
		sc.Spec.Replicas = int32(toInt(v))
	} else if !obj.GetObjectKind().GroupVersionKind().Empty() && paths.SpecReplicas == "spec.replicas" {
		sc.Spec.Replicas = 1 // Kubernetes defaults workload replicas to 1
	}
	if v, ok, _ := unstructured.NestedFieldNoCopy(content, strings.Split(paths.StatusReplicas, ".")...); ok {
		sc.Status.Replicas = int32(toInt(v))
	}
	if paths.LabelSelector != "" {
		if v, ok, _ := unstructured.NestedFieldNoCopy(content, strings.Split(paths.LabelSelector, ".")...); ok {
			switch t := v.(type) {
			case string:
				sc.Status.Selector = t
			case map[string]any:
				if paths.LabelSet {
					set := labels.Set{}
					for k, v := range t {
						s, _ := v.(string)
						set[k] = s
					}
					sc.Status.Selector = labels.SelectorFromSet(set).String()
					break
				}
				var ls metav1.LabelSelector
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(t, &ls); err == nil {
					if s, err := metav1.LabelSelectorAsSelector(&ls); err == nil {
						sc.Status.Selector = s.String()
					}
				}
			}
		}
	}
	return sc, nil
}

func toInt(v any) int64 {
	switch t := v.(type) {
	case int64:
		return t
	case int32:
		return int64(t)
	case int:
		return int64(t)
	case float64:
		return int64(t)
	}
	return 0
}

// setReplicas returns a copy of obj with the scale's replica path set.
func setReplicas(obj runtime.Object, paths *registry.ScalePaths, n int64) (runtime.Object, error) {
	content, err := contentOf(obj)
	if err != nil {
		return nil, errors.NewInternalError(err)
	}
	content = runtime.DeepCopyJSON(content)
	if err := unstructured.SetNestedField(content, n, strings.Split(paths.SpecReplicas, ".")...); err != nil {
		return nil, errors.NewInternalError(err)
	}
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return &unstructured.Unstructured{Object: content}, nil
	}
	out := obj.DeepCopyObject()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, out); err != nil {
		return nil, errors.NewInternalError(err)
	}
	out.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return out, nil
}

// passthrough is the strategy of subresources that act on the parent on the
// server's behalf (binding, finalize): no client-facing preparation.
type passthrough struct{}

func (passthrough) PrepareForCreate(runtime.Object)                        {}
func (passthrough) PrepareForUpdate(obj, old runtime.Object)               {}
func (passthrough) Validate(runtime.Object) field.ErrorList                { return nil }
func (passthrough) ValidateUpdate(obj, old runtime.Object) field.ErrorList { return nil }

// untracked is a strategy whose writes leave the object's managedFields as
// they are.
type untracked interface{ untracked() }

// bindingStrategy writes a pod's binding as Kubernetes' BindingREST does:
// straight to storage, outside field management (no manager comes to own
// spec.nodeName), which also spares every binding the comparison of the
// whole pod that field tracking costs.
type bindingStrategy struct{ passthrough }

func (bindingStrategy) untracked() {}

// serveFinalize serves PUT namespaces/<name>/finalize: only spec.finalizers change.
func (h *Handler) serveFinalize(req *request) error {
	if !req.res.Subresources.Finalize || req.info.Verb != "update" {
		return errors.NewMethodNotSupported(schema.GroupResource{Resource: "namespaces/finalize"}, req.info.Verb)
	}
	body, err := readBody(req)
	if err != nil {
		return err
	}
	want := &corev1.Namespace{}
	if err := decodeOptions(contentType(req.r.Header.Get("Content-Type")), body, want); err != nil {
		return err
	}
	// A Namespace is cluster-scoped: a namespace in the body is ignored, as
	// Kubernetes clears it; its name must be the URL's.
	if err := checkSubresourceName(req, &want.ObjectMeta, false); err != nil {
		return err
	}
	out, err := h.guaranteedUpdate(req, passthrough{}, req.info.Name, false, func(cur runtime.Object) (runtime.Object, error) {
		ns := cur.DeepCopyObject().(*corev1.Namespace)
		ns.Spec.Finalizers = want.Spec.Finalizers
		ns.ResourceVersion = want.ResourceVersion
		return ns, nil
	}, nil)
	if err != nil {
		return err
	}
	return h.respond(req, http.StatusOK, out.obj)
}

// serveBinding serves POST pods/<name>/binding: assigns the pod to a node once.
func (h *Handler) serveBinding(req *request) error {
	if !req.res.Subresources.Binding || req.info.Verb != "create" {
		return errors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/binding"}, req.info.Verb)
	}
	body, err := readBody(req)
	if err != nil {
		return err
	}
	b := &corev1.Binding{}
	if err := decodeOptions(contentType(req.r.Header.Get("Content-Type")), body, b); err != nil {
		return err
	}
	if b.Name != req.info.Name {
		// As Kubernetes' BindingREST: a Binding names the pod it binds.
		return errors.NewBadRequest("name in URL does not match name in Binding object")
	}
	if b.Target.Name == "" {
		return errors.NewInvalid(schema.GroupKind{Kind: "Binding"}, b.Name, field.ErrorList{field.Required(field.NewPath("target", "name"), "")})
	}
	dry, err := req.dryRun()
	if err != nil {
		return err
	}
	_, err = h.guaranteedUpdate(req, bindingStrategy{}, req.info.Name, dry, func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.DeepCopyObject().(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			return nil, errors.NewConflict(req.res.GroupResource(), pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, errors.NewConflict(req.res.GroupResource(), pod.Name, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName))
		}
		// A gated pod is not ready to be scheduled, whoever binds it.
		if len(pod.Spec.SchedulingGates) != 0 {
			return nil, errors.NewConflict(req.res.GroupResource(), pod.Name, fmt.Errorf("pod %s has non-empty .spec.schedulingGates", pod.Name))
		}
		if b.UID != "" && b.UID != pod.UID {
			return nil, errors.NewConflict(req.res.GroupResource(), pod.Name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", b.UID, pod.UID))
		}
		pod.Spec.NodeName = b.Target.Name
		for k, v := range b.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodScheduled(pod)
		pod.ResourceVersion = ""
		return pod, nil
	}, nil)
	if err != nil {
		return err
	}
	req.reply(http.StatusCreated, statusSuccess(http.StatusCreated))
	return nil
}

func setPodScheduled(pod *corev1.Pod) {
	// As Kubernetes' UpdatePodCondition: the reason and message of an
	// earlier Unschedulable or SchedulingGated verdict go, and the
	// transition time moves only with the status.
	setPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
}
