package apiserver_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// Events written through events.k8s.io/v1 (kube-scheduler's and most
// controllers' API) are the same objects as core/v1 Events (what kubectl
// describe lists), field for field, as in Kubernetes: both APIs share one
// store and each converts.
func TestEventsShareOneStoreAcrossAPIs(t *testing.T) {
	srv := apiservertest.Start(t)
	c := kubernetes.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	pod := corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", UID: "u-1", APIVersion: "v1"}
	at := metav1.NewMicroTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))

	// events.k8s.io/v1 → core/v1.
	if _, err := c.EventsV1().Events("default").Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web.scheduled"}, EventTime: at,
		ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-host",
		Action: "Binding", Reason: "Scheduled", Type: corev1.EventTypeNormal, Regarding: pod,
		Note:   "Successfully assigned default/web to node-1",
		Series: &eventsv1.EventSeries{Count: 2, LastObservedTime: at},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	core, err := c.CoreV1().Events("default").Get(ctx, "web.scheduled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if core.InvolvedObject != pod || core.Message != "Successfully assigned default/web to node-1" ||
		core.ReportingController != "default-scheduler" || core.ReportingInstance != "default-scheduler-host" ||
		core.Reason != "Scheduled" || core.Action != "Binding" || core.Type != corev1.EventTypeNormal ||
		!core.EventTime.Equal(&at) || core.Series == nil || core.Series.Count != 2 {
		t.Fatalf("events.k8s.io Event read as core/v1: %+v", core)
	}

	// core/v1 → events.k8s.io/v1, the deprecated* fields included.
	first := metav1.NewTime(time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC))
	if _, err := c.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web.pulled"}, InvolvedObject: pod, Reason: "Pulled",
		Message: "Container image already present", Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "kubelet", Host: "node-1"}, FirstTimestamp: first, LastTimestamp: first, Count: 3,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev, err := c.EventsV1().Events("default").Get(ctx, "web.pulled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Regarding != pod || ev.Note != "Container image already present" || ev.DeprecatedCount != 3 ||
		ev.DeprecatedSource.Host != "node-1" || !ev.DeprecatedFirstTimestamp.Equal(&first) {
		t.Fatalf("core/v1 Event read as events.k8s.io: %+v", ev)
	}

	// kubectl describe finds a pod's Events by involvedObject; the
	// events.k8s.io API selects by regarding. Both see both Events.
	sel := fields.Set{"involvedObject.name": "web", "involvedObject.uid": "u-1"}.AsSelector().String()
	coreList, err := c.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	evList, err := c.EventsV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(coreList.Items) != 2 || len(evList.Items) != 2 {
		t.Fatalf("field selectors: %d core Events, %d events.k8s.io Events; want 2 and 2", len(coreList.Items), len(evList.Items))
	}

	// An update through one API keeps what only the other shows.
	if _, err := c.EventsV1().Events("default").Patch(ctx, "web.scheduled", types.MergePatchType,
		[]byte(`{"series":{"count":3,"lastObservedTime":"2026-11-30T12:00:05.000000Z"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	core, err = c.CoreV1().Events("default").Get(ctx, "web.scheduled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if core.Series == nil || core.Series.Count != 3 || core.InvolvedObject != pod {
		t.Fatalf("after an events.k8s.io patch, core/v1 reads %+v", core)
	}
	if _, err := c.CoreV1().Events("default").Patch(ctx, "web.scheduled", types.MergePatchType,
		[]byte(`{"message":"Successfully assigned default/web to node-2"}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	ev, err = c.EventsV1().Events("default").Get(ctx, "web.scheduled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Note != "Successfully assigned default/web to node-2" || ev.ReportingController != "default-scheduler" {
		t.Fatalf("after a core/v1 patch, events.k8s.io reads %+v", ev)
	}
}
