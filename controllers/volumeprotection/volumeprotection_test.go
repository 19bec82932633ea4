package volumeprotection

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

func TestClaimProtection(t *testing.T) {
	ts := metav1.NewTime(time.Now())
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns",
		DeletionTimestamp: &ts, Finalizers: []string{PVCProtectionFinalizer}}}
	pod := func(name string, phase corev1.PodPhase, claimName string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	tests := []struct {
		name     string
		claim    *corev1.PersistentVolumeClaim
		cached   []runtime.Object // pods in the informer
		live     []runtime.Object // pods only the API knows yet
		wantKept bool
	}{
		{name: "a terminating claim no pod uses is released", claim: claim},
		{name: "a running pod keeps it", claim: claim, cached: []runtime.Object{pod("p", corev1.PodRunning, "data")}, wantKept: true},
		{name: "a pending pod keeps it", claim: claim, cached: []runtime.Object{pod("p", corev1.PodPending, "data")}, wantKept: true},
		{name: "a finished pod does not", claim: claim, cached: []runtime.Object{pod("p", corev1.PodSucceeded, "data")}},
		{name: "a pod of another claim does not", claim: claim, cached: []runtime.Object{pod("p", corev1.PodRunning, "other")}},
		{name: "a pod the cache has not seen yet keeps it", claim: claim, live: []runtime.Object{pod("new", corev1.PodPending, "data")}, wantKept: true},
		{name: "a claim not being deleted is left alone", claim: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns",
			Finalizers: []string{PVCProtectionFinalizer}}}, wantKept: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := append(append([]runtime.Object{tc.claim}, tc.cached...), tc.live...)
			client := controllertest.NewClient(objs...)
			f := informers.NewSharedInformerFactory(client, 0)
			c, err := New(client, f.Core().V1().PersistentVolumeClaims(), f.Core().V1().PersistentVolumes(), f.Core().V1().Pods(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			controllertest.Load(t, f.Core().V1().PersistentVolumeClaims().Informer(), tc.claim)
			controllertest.Load(t, f.Core().V1().Pods().Informer(), tc.cached...)
			if err := c.sync(context.Background(), claimKeyPrefix+"ns/data"); err != nil {
				t.Fatal(err)
			}
			got, err := client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), "data", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if kept := has(got.Finalizers, PVCProtectionFinalizer); kept != tc.wantKept {
				t.Fatalf("finalizer kept %v, want %v", kept, tc.wantKept)
			}
		})
	}
}

func TestVolumeProtection(t *testing.T) {
	ts := metav1.NewTime(time.Now())
	for _, tc := range []struct {
		phase    corev1.PersistentVolumePhase
		wantKept bool
	}{{corev1.VolumeBound, true}, {corev1.VolumeReleased, false}, {corev1.VolumeAvailable, false}} {
		t.Run(string(tc.phase), func(t *testing.T) {
			pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", DeletionTimestamp: &ts, Finalizers: []string{PVProtectionFinalizer}},
				Status: corev1.PersistentVolumeStatus{Phase: tc.phase}}
			client := controllertest.NewClient(pv)
			f := informers.NewSharedInformerFactory(client, 0)
			c, err := New(client, f.Core().V1().PersistentVolumeClaims(), f.Core().V1().PersistentVolumes(), f.Core().V1().Pods(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			controllertest.Load(t, f.Core().V1().PersistentVolumes().Informer(), pv)
			if err := c.sync(context.Background(), volumeKeyPrefix+"pv"); err != nil {
				t.Fatal(err)
			}
			got, _ := client.CoreV1().PersistentVolumes().Get(context.Background(), "pv", metav1.GetOptions{})
			if kept := has(got.Finalizers, PVProtectionFinalizer); kept != tc.wantKept {
				t.Fatalf("%s volume: finalizer kept %v, want %v", tc.phase, kept, tc.wantKept)
			}
		})
	}
}
