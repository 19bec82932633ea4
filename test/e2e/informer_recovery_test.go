package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// watchGate sits between client-go and the server. While closed it ends
// every open watch cleanly (as a server's timeout would) and holds new watch
// requests back, so an informer's watch is down while the test writes and
// compacts; opening it lets the held requests through. It records the status
// of every watch reply, and how many watches began with the ERROR event
// of an expired resourceVersion (a 200 whose one event is the 410, as
// Kubernetes answers a watch from a compacted revision).
type watchGate struct {
	next http.RoundTripper

	mu      sync.Mutex
	closed  bool
	opened  chan struct{}
	bodies  map[*gatedBody]bool
	replies []int
	expired int
}

func newWatchGate() *watchGate {
	return &watchGate{bodies: map[*gatedBody]bool{}}
}

func (g *watchGate) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("watch") != "true" {
		return g.next.RoundTrip(r)
	}
	g.mu.Lock()
	wait := g.opened
	g.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	resp, err := g.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.replies = append(g.replies, resp.StatusCode)
	b := &gatedBody{ReadCloser: resp.Body, gate: g}
	g.bodies[b] = true
	resp.Body = b
	return resp, nil
}

// close ends the open watches and holds new ones.
func (g *watchGate) close() {
	g.mu.Lock()
	g.closed = true
	g.opened = make(chan struct{})
	var open []*gatedBody
	for b := range g.bodies {
		open = append(open, b)
	}
	g.mu.Unlock()
	for _, b := range open {
		_ = b.ReadCloser.Close()
	}
}

// open lets watches through again.
func (g *watchGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = false
	close(g.opened)
	g.opened = nil
}

func (g *watchGate) expiredWatches() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.expired
}

func (g *watchGate) statuses() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.replies...)
}

// gatedBody turns the read error of a watch the gate cut into a clean end
// of stream, which client-go answers by watching again from its last
// resourceVersion.
type gatedBody struct {
	io.ReadCloser
	gate *watchGate
	head []byte // the stream's first bytes, looked at for the 410 event
	seen bool
}

// expiredEvent is in the message of the 410 ERROR event, in JSON and
// protobuf streams alike.
const expiredEvent = "too old resource version"

func (b *gatedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.seen && len(b.head) < 4096 {
		b.head = append(b.head, p[:n]...)
		if strings.Contains(string(b.head), expiredEvent) {
			b.seen = true
			b.gate.mu.Lock()
			b.gate.expired++
			b.gate.mu.Unlock()
		}
	}
	if err != nil {
		b.gate.mu.Lock()
		cut := b.gate.closed
		b.gate.mu.Unlock()
		if cut && !errors.Is(err, io.EOF) {
			return n, io.EOF
		}
	}
	return n, err
}

func (b *gatedBody) Close() error {
	b.gate.mu.Lock()
	delete(b.gate.bodies, b)
	b.gate.mu.Unlock()
	return b.ReadCloser.Close()
}

// TestInformerRecoversFromCompaction takes typed and dynamic informers'
// watches down, changes objects (add, update, delete, and an object that
// lives and dies while they are away), compacts the store past the
// informers' resourceVersion, and lets them reconnect: the server answers
// their watch with 410 Expired (an ERROR event), they relist, and each sees exactly the
// changes, its cache matching the server's list.
func TestInformerRecoversFromCompaction(t *testing.T) {
	srv := apiservertest.Start(t)
	gate := newWatchGate()
	cfg := rest.CopyConfig(srv.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { gate.next = rt; return gate })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Writes go around the gate.
	writer, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "recovery"
	if _, err := writer.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := writer.CoreV1().ConfigMaps(ns)
	for i := 0; i < 3; i++ {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("before-%d", i)}, Data: map[string]string{"v": "old"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	typed := &recorder{}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	typedInf := factory.Core().V1().ConfigMaps().Informer()
	if _, err := typedInf.AddEventHandler(typed.handler()); err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn := &recorder{}
	dfactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, ns, nil)
	dynInf := dfactory.ForResource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Informer()
	if _, err := dynInf.AddEventHandler(dyn.handler()); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	dfactory.Start(ctx.Done())
	syncCtx, syncCancel := context.WithTimeout(ctx, 20*time.Second)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), typedInf.HasSynced, dynInf.HasSynced) {
		t.Fatal("informers did not sync within 20s")
	}
	// One live event, so the informers' watches are established and past
	// their first second (a shorter watch that ends counts as a failure and
	// makes client-go relist without trying its resourceVersion).
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*recorder{typed, dyn} {
		r.waitFor(t, "add live")
	}
	time.Sleep(1200 * time.Millisecond)
	typedRV := typedInf.LastSyncResourceVersion()

	gate.close()
	before, expiredBefore := len(gate.statuses()), gate.expiredWatches()
	mark := map[*recorder]int{typed: typed.count(), dyn: dyn.count()}

	// Changes while the informers are away.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "during"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := cms.Get(ctx, "before-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["v"] = "new"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "before-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "transient"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "transient", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rev, err := srv.Store.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if typedInf.LastSyncResourceVersion() != typedRV {
		t.Fatalf("the typed informer moved from resourceVersion %s to %s while its watch was held", typedRV, typedInf.LastSyncResourceVersion())
	}
	gate.open()

	for _, r := range []*recorder{typed, dyn} {
		r.waitFor(t, "add during")
		r.waitFor(t, "update before-0")
		r.waitFor(t, "delete before-1")
	}
	saw410 := gate.expiredWatches() > expiredBefore
	for _, code := range gate.statuses()[before:] {
		if code == http.StatusGone {
			saw410 = true
		}
	}
	if !saw410 {
		t.Errorf("no watch was answered 410 after the compaction (watch replies %v, none carried the ERROR event)", gate.statuses()[before:])
	}
	for _, r := range []*recorder{typed, dyn} {
		for _, e := range r.since(mark[r]) {
			if strings.HasSuffix(e, " transient") {
				t.Errorf("informer saw %q of an object that lived only while it was away", e)
			}
		}
	}

	// The caches match the server, and recovered informers keep following.
	if err := cms.Delete(ctx, "before-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*recorder{typed, dyn} {
		r.waitFor(t, "delete before-2")
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, it := range list.Items {
		want[it.Name] = it.ResourceVersion + " " + it.Data["v"]
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		gotTyped, gotDyn := map[string]string{}, map[string]string{}
		for _, o := range typedInf.GetStore().List() {
			c := o.(*corev1.ConfigMap)
			gotTyped[c.Name] = c.ResourceVersion + " " + c.Data["v"]
		}
		for _, o := range dynInf.GetStore().List() {
			u := o.(*unstructured.Unstructured)
			v, _, _ := unstructured.NestedString(u.Object, "data", "v")
			gotDyn[u.GetName()] = u.GetResourceVersion() + " " + v
		}
		if fmt.Sprint(gotTyped) == fmt.Sprint(want) && fmt.Sprint(gotDyn) == fmt.Sprint(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("informer caches differ from the server's list:\n server  %v\n typed   %v\n dynamic %v", sorted(want), sorted(gotTyped), sorted(gotDyn))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if want["before-0"] == "" || !strings.HasSuffix(want["before-0"], " new") {
		t.Errorf("server list: before-0 = %q, want the updated value", want["before-0"])
	}
}

func sorted(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
