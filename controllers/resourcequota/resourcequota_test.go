package resourcequota

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

func TestUsageOnARealServer(t *testing.T) {
	srv := apiservertest.Start(t)
	client := kubernetes.NewForConfigOrDie(srv.Config)
	md := metadata.NewForConfigOrDie(srv.Config)
	ctx, cancel := context.WithCancel(context.Background())
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, client.Discovery(), md, f.Core().V1().ResourceQuotas(), f.Core().V1().Pods(), f.Core().V1().Services(),
		record.NewFakeRecorder(100), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Resync: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	done := make(chan struct{})
	go func() { c.Run(ctx, 1); close(done) }()
	t.Cleanup(func() { cancel(); <-done; f.Shutdown() })

	const ns = "quota"
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}))
	pod := func(name, cpu, mem string, phase corev1.PodPhase) {
		p, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
			}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if phase != "" {
			p.Status.Phase = phase
			must(client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}))
		}
	}
	pod("a", "500m", "256Mi", "")
	pod("b", "250m", "128Mi", "")
	pod("done", "4", "4Gi", corev1.PodSucceeded) // terminal pods use nothing
	must(client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}}, metav1.CreateOptions{}))
	must(client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "np"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Name: "a", Port: 80}, {Name: "b", Port: 81}}}}, metav1.CreateOptions{}))
	one := int32(1)
	must(client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{
		Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}},
	}}, metav1.CreateOptions{}))
	cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	hard := corev1.ResourceList{
		"pods": resource.MustParse("10"), "requests.cpu": resource.MustParse("2"), "limits.memory": resource.MustParse("1Gi"),
		"configmaps": resource.MustParse("5"), "count/deployments.apps": resource.MustParse("2"), "services.nodeports": resource.MustParse("4"),
	}
	must(client.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{}))

	want := map[corev1.ResourceName]string{
		"pods": "2", "requests.cpu": "750m", "limits.memory": "384Mi", "configmaps": fmt.Sprint(len(cms.Items)),
		"count/deployments.apps": "1", "services.nodeports": "2",
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		q, err := client.CoreV1().ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ok := len(q.Status.Hard) == len(hard)
		var diff []string
		for r, w := range want {
			got, has := q.Status.Used[r]
			if !has || got.Cmp(resource.MustParse(w)) != 0 {
				ok = false
				diff = append(diff, fmt.Sprintf("%s=%s (want %s)", r, got.String(), w))
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("quota status never right: %v; status %+v", diff, q.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestScopes(t *testing.T) {
	deadline := int64(30)
	be := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	burst := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: &deadline, Containers: []corev1.Container{{Name: "c",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	q := func(scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: scopes}}
	}
	cases := []struct {
		q          *corev1.ResourceQuota
		be, bursty bool
	}{
		{q(), true, true},
		{q(corev1.ResourceQuotaScopeBestEffort), true, false},
		{q(corev1.ResourceQuotaScopeNotBestEffort), false, true},
		{q(corev1.ResourceQuotaScopeTerminating), false, true},
		{q(corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeBestEffort), true, false},
	}
	for i, tc := range cases {
		if got := matchesScopes(tc.q, be); got != tc.be {
			t.Errorf("case %d best-effort pod: %v", i, got)
		}
		if got := matchesScopes(tc.q, burst); got != tc.bursty {
			t.Errorf("case %d burstable terminating pod: %v", i, got)
		}
	}
}
