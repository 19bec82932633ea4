package tables

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkConvertPodList measures a 10,000-pod `kubectl get pods -A` table
// with metadata row objects; it reports the time per list and per pod.
func BenchmarkConvertPodList(b *testing.B) {
	list := &corev1.PodList{Items: make([]corev1.Pod, 10000)}
	for i := range list.Items {
		p := makePod(fmt.Sprintf("pod-%05d", i)).containers("app", "sidecar").phase(corev1.PodRunning).
			status(running("app", true, 0)).status(running("sidecar", true, 1)).pod
		p.Labels = map[string]string{"app": "bench", "shard": fmt.Sprint(i % 16)}
		p.Spec.NodeName = fmt.Sprintf("node-%03d", i%500)
		list.Items[i] = *p
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := ConvertToTable(list, Options{IncludeObject: metav1.IncludeMetadata}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/float64(len(list.Items)), "ns/pod")
}
