package tables

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// scheme knows the Go types of the kinds printed here: it turns a kind into a
// type (for unstructured input) and a type into a kind (for row objects).
var scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme,
		appsv1.AddToScheme,
		batchv1.AddToScheme,
		coordinationv1.AddToScheme,
		discoveryv1.AddToScheme,
		eventsv1.AddToScheme,
		networkingv1.AddToScheme,
		policyv1.AddToScheme,
		rbacv1.AddToScheme,
		schedulingv1.AddToScheme,
		storagev1.AddToScheme,
		apiextensionsv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			// Registration of generated types cannot fail at run time
			// unless the k8s.io/api packages themselves are broken.
			panic(err)
		}
	}
	return s
}
