package resourcequota_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/controllers/resourcequota"
)

// TestQuotaIsChargedAndFreed runs the controller against a real API server:
// the quota's status is filled, creates past it are refused, and deleting a
// pod gives its unit back.
func TestQuotaIsChargedAndFreed(t *testing.T) {
	srv := apiservertest.Start(t)
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := informers.NewSharedInformerFactory(cs, 0)
	core := f.Core().V1()
	c, err := resourcequota.New(cs, resourcequota.Informers{Quotas: core.ResourceQuotas(), Pods: core.Pods(), Services: core.Services(),
		ConfigMaps: core.ConfigMaps(), Secrets: core.Secrets()}, resourcequota.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	go c.Run(ctx, 1)

	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2"), corev1.ResourceRequestsCPU: resource.MustParse("1"), "count/configmaps": resource.MustParse("5")}
	if _, err := cs.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed := func(pods, cpu string) {
		t.Helper()
		var q *corev1.ResourceQuota
		for ctx.Err() == nil {
			q, err = cs.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
			if err == nil && q.Status.Used.Pods().String() == pods && q.Status.Used.Name(corev1.ResourceRequestsCPU, resource.DecimalSI).String() == cpu {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("quota used %v, want pods=%s requests.cpu=%s", q.Status.Used, pods, cpu)
	}
	waitUsed("1", "100m")
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("second"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod("third"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("third pod: %v, want exceeded quota", err)
	}
	waitUsed("2", "200m")
	if err := cs.CoreV1().Pods("default").Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed("1", "100m")
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("third"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("after a delete freed quota: %v", err)
	}
	// Object counts are charged on create and given back on delete.
	countIs := func(want int64) {
		t.Helper()
		for ctx.Err() == nil {
			q, err := cs.CoreV1().ResourceQuotas("default").Get(ctx, "q", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if n := q.Status.Used["count/configmaps"]; n.Value() == want {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		q, _ := cs.CoreV1().ResourceQuotas("default").Get(context.Background(), "q", metav1.GetOptions{})
		cms, _ := cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
		t.Fatalf("count/configmaps never reached %d: used %v, %d configmaps", want, q.Status.Used, len(cms.Items))
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	countIs(1)
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	countIs(0)
}
