package admission_test

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/admission"
	"github.com/skiffkube/skiff/storage/storagetest"
)

// TestPodSecurityReadsTheNamespaceAsStored checks that pod security judges
// each pod by its namespace's labels as stored at that moment: admission
// keeps decoded namespaces by key and revision, and a relabelled namespace
// must be decoded again.
func TestPodSecurityReadsTheNamespaceAsStored(t *testing.T) {
	st := storagetest.Open(t, storagetest.SQLiteEndpoint(t))
	chain := admission.New(st, nil)
	ctx := context.Background()
	key := "/registry/namespaces/ns"
	rev := int64(0)
	label := func(level string) {
		t.Helper()
		data, _ := json.Marshal(&corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"pod-security.kubernetes.io/enforce": level}}})
		if rev == 0 {
			kv, err := st.Create(ctx, key, data, 0)
			if err != nil {
				t.Fatal(err)
			}
			rev = kv.ModRevision
			return
		}
		kv, err := st.Update(ctx, key, data, rev, 0)
		if err != nil {
			t.Fatal(err)
		}
		rev = kv.ModRevision
	}
	privileged := func(step string, wantRefused bool) {
		t.Helper()
		a := podAttrs("ns", "p", "default")
		pod := a.Object.(*corev1.Pod)
		pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		_, err := chain.Validate(ctx, a)
		if refused := apierrors.IsForbidden(err); refused != wantRefused || (err != nil && !refused) {
			t.Errorf("%s: privileged pod: %v, want refused %v", step, err, wantRefused)
		}
	}
	label("baseline")
	privileged("enforce baseline", true)
	privileged("the same namespace again", true)
	label("privileged")
	privileged("relabelled privileged", false)
	label("baseline")
	privileged("relabelled baseline", true)
}
