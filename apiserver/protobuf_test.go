package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// contentTypes records the Content-Type of every reply, by "METHOD path".
type contentTypes struct {
	mu   sync.Mutex
	seen map[string][]string
	next http.RoundTripper
}

func (c *contentTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		c.mu.Lock()
		key := r.Method + " " + r.URL.Path
		if r.URL.Query().Get("watch") == "true" {
			key = "WATCH " + r.URL.Path
		}
		c.seen[key] = append(c.seen[key], resp.Header.Get("Content-Type"))
		c.mu.Unlock()
	}
	return resp, err
}

func (c *contentTypes) get(key string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen[key]...)
}

// TestProtobufReplies drives a client-go typed client with its defaults
// (protobuf bodies, Accept protobuf then JSON) and checks the server answers
// in protobuf: single objects, lists, errors as Status, and watch events
// framed as length-prefixed WatchEvents. Custom resources stay JSON.
func TestProtobufReplies(t *testing.T) {
	srv := apiservertest.Start(t)
	rec := &contentTypes{seen: map[string][]string{}}
	cfg := rest.CopyConfig(srv.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cms := cs.CoreV1().ConfigMaps("default")

	w, err := cms.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "proto"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if cm.UID == "" || cm.ResourceVersion == "" || cm.Data["a"] != "1" {
		t.Fatalf("created object decoded badly: %+v", cm)
	}
	got, err := cms.Get(ctx, "proto", metav1.GetOptions{})
	if err != nil || got.UID != cm.UID || got.Data["a"] != "1" {
		t.Fatalf("get: %v %+v", err, got)
	}
	got.Data["a"] = "2"
	if _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Data["a"] != "2" || list.ResourceVersion == "" {
		t.Fatalf("list: %v %+v", err, list)
	}
	_, err = cms.Get(ctx, "absent", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `configmaps "absent" not found`) {
		t.Fatalf("get absent: %v, want NotFound", err)
	}
	// A stale update is a 409 Status in protobuf.
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v, want Conflict", err)
	}
	if err := cms.Delete(ctx, "proto", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}

	var events []string
	for len(events) < 3 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %v", events)
			}
			if ev.Type == watch.Error {
				t.Fatalf("watch error: %v", apierrors.FromObject(ev.Object))
			}
			c, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				t.Fatalf("watch object %T", ev.Object)
			}
			events = append(events, string(ev.Type)+" "+c.Name+" "+c.Data["a"])
		case <-ctx.Done():
			t.Fatalf("watch saw only %v", events)
		}
	}
	if want := "ADDED proto 1,MODIFIED proto 2,DELETED proto 2"; strings.Join(events, ",") != want {
		t.Errorf("watch events %v, want %s", events, want)
	}

	const proto = "application/vnd.kubernetes.protobuf"
	path := "/api/v1/namespaces/default/configmaps"
	for key, want := range map[string]string{
		"POST " + path:              proto,
		"GET " + path + "/proto":    proto,
		"GET " + path + "/absent":   proto,
		"PUT " + path + "/proto":    proto,
		"GET " + path:               proto,
		"DELETE " + path + "/proto": proto,
		"WATCH " + path:             proto + ";stream=watch",
	} {
		types := rec.get(key)
		if len(types) == 0 {
			t.Errorf("%s: no request recorded", key)
		}
		for _, ct := range types {
			if ct != want {
				t.Errorf("%s: reply Content-Type %q, want %q", key, ct, want)
			}
		}
	}

	// The metadata client asks PartialObjectMetadataList in protobuf.
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "meta", Labels: map[string]string{"x": "y"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pl, err := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(pl.Items) != 1 || pl.Items[0].Labels["x"] != "y" {
		t.Fatalf("metadata list: %v %+v", err, pl)
	}
	if types := rec.get("GET " + path); types[len(types)-1] != proto {
		t.Errorf("metadata list reply %q, want protobuf", types[len(types)-1])
	}

	// Raw requests: custom resources and Tables have no protobuf form.
	createGadgetCRD(t, srv)
	c := newClient(t, srv)
	gadgets := "/apis/example.com/v1/namespaces/default/gadgets"
	for _, tc := range []struct {
		path, accept string
		code         int
		ctype        string
	}{
		{gadgets, proto + ",application/json", http.StatusOK, "application/json"},
		// The 406 Status itself goes out in the encoding the client named.
		{gadgets, proto, http.StatusNotAcceptable, proto},
		{gadgets, proto + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", http.StatusOK, proto},
		{path, proto + ";as=Table;g=meta.k8s.io;v=v1,application/json", http.StatusOK, "application/json"},
		{path, proto + ";as=Table;g=meta.k8s.io;v=v1", http.StatusNotAcceptable, proto},
		{path + "/absent", proto, http.StatusNotFound, proto},
	} {
		resp, body := c.do(http.MethodGet, tc.path, "", nil, "Accept", tc.accept)
		if resp.StatusCode != tc.code || resp.Header.Get("Content-Type") != tc.ctype {
			t.Errorf("GET %s (Accept %q): %d %q, want %d %q: %.200s", tc.path, tc.accept, resp.StatusCode, resp.Header.Get("Content-Type"), tc.code, tc.ctype, body)
		}
		if tc.ctype == proto && !strings.HasPrefix(string(body), "k8s\x00") {
			t.Errorf("GET %s (Accept %q): body lacks the protobuf envelope", tc.path, tc.accept)
		}
	}
}
