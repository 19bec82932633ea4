package apiserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// Watches of pods selecting one node by spec.nodeName (what each kubelet
// keeps open; the store indexes them by node) see the pods of their node
// come, change and go — a pod being bound arrives as ADDED and leaves the
// unbound watch as DELETED — and nothing of other nodes' pods.
func TestPodWatchesByNode(t *testing.T) {
	cs, _ := clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods := cs.CoreV1().Pods("default")
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watchNode := func(node string) watch.Interface {
		w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node, ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return w
	}
	n1, n2, unbound := watchNode("n1"), watchNode("n2"), watchNode("")

	if _, err := pods.Create(ctx, testPod("a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := testPod("b")
	b.Spec.NodeName = "n2"
	if _, err := pods.Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, err := pods.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Status.Phase = corev1.PodRunning
	if _, err := pods.UpdateStatus(ctx, a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := testPod("c")
	c.Spec.NodeName = "n1"
	if _, err := pods.Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "b", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}

	read := func(name string, w watch.Interface, want []string) {
		t.Helper()
		var got []string
		for len(got) < len(want) {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("%s: watch ended after %v", name, got)
				}
				pod, isPod := ev.Object.(*corev1.Pod)
				if !isPod {
					t.Fatalf("%s: %s %T", name, ev.Type, ev.Object)
				}
				got = append(got, fmt.Sprintf("%s %s %s", ev.Type, pod.Name, pod.Status.Phase))
			case <-ctx.Done():
				t.Fatalf("%s: got %v, want %v", name, got, want)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	read("n1", n1, []string{"ADDED a Pending", "MODIFIED a Running", "ADDED c Pending", "DELETED a Running"})
	read("n2", n2, []string{"ADDED b Pending", "DELETED b Pending"})
	read("unbound", unbound, []string{"ADDED a Pending", "DELETED a Pending"})
}
