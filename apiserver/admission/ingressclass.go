package admission

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The DefaultIngressClass plugin, as Kubernetes' (on by default since
// v1.18): a new Ingress that names no class, neither in
// spec.ingressClassName nor in the kubernetes.io/ingress.class annotation,
// gets the default IngressClass, the one annotated
// ingressclass.kubernetes.io/is-default-class: "true". With several
// defaults the newest wins (ties by name), as its getDefaultClass; with
// none the Ingress is left as it is. Updates are not touched.

var ingressesResource = schema.GroupResource{Group: networkingv1.GroupName, Resource: "ingresses"}

// ingressClassPrefix is where IngressClasses are stored.
const ingressClassPrefix = "/registry/networking.k8s.io/ingressclasses/"

// ingressClassAnnotation is the class annotation ingressClassName replaced.
const ingressClassAnnotation = "kubernetes.io/ingress.class"

func (c *Chain) defaultIngressClass(ctx context.Context, a *Attributes) error {
	ing, ok := a.Object.(*networkingv1.Ingress)
	if !ok || a.Subresource != "" || ing.Spec.IngressClassName != nil {
		return nil
	}
	if _, ok := ing.Annotations[ingressClassAnnotation]; ok {
		return nil
	}
	classes, _, err := listInto[networkingv1.IngressClass](ctx, c.store, ingressClassPrefix, false)
	if err != nil {
		return err
	}
	pick := newestDefault(classes, func(ic *networkingv1.IngressClass) bool {
		return ic.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true"
	})
	if pick != nil {
		name := pick.Name
		ing.Spec.IngressClassName = &name
	}
	return nil
}
