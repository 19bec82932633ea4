package revision

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func template(image string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
	}
}

func TestDataRoundTripsAndUndoesAsAPatch(t *testing.T) {
	old := template("web:1")
	data, err := Data(old)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Template(&appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: data}})
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(got, old) {
		t.Fatalf("round trip: %+v", got)
	}
	// kubectl rollout undo applies the data as a strategic merge patch: the template is replaced.
	cur := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: *template("web:2")}}
	cur.Spec.Template.Spec.Containers = append(cur.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "s:1"})
	curJSON, _ := json.Marshal(cur)
	out, err := strategicpatch.StrategicMergePatch(curJSON, data, &appsv1.DaemonSet{})
	if err != nil {
		t.Fatal(err)
	}
	var undone appsv1.DaemonSet
	if err := json.Unmarshal(out, &undone); err != nil {
		t.Fatal(err)
	}
	if c := undone.Spec.Template.Spec.Containers; len(c) != 1 || c[0].Image != "web:1" {
		t.Fatalf("after undo: %+v", c)
	}
	if Hash(old, nil) == Hash(template("web:2"), nil) || Hash(old, nil) != Hash(template("web:1"), nil) {
		t.Fatal("hash must follow the template")
	}
}
