package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// How long a watch of a custom resource may stay open once its definition
// was deleted or changed: Kubernetes ends such watches after about a
// second (the teardown of the resource's storage), not at their timeout.
const watchEndWithin = 5 * time.Second

var crdsGVR = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// twoVersionCRD is a namespaced CRD of example.com/<plural> served in v1
// (the storage version) and v2.
func twoVersionCRD(plural, kind string) map[string]any {
	version := func(name string, storage bool) map[string]any {
		return map[string]any{
			"name": name, "served": true, "storage": storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
				"spec": map[string]any{"type": "object", "properties": map[string]any{"size": map[string]any{"type": "integer"}}},
			}}},
		}
	}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind)},
			"versions": []any{version("v1", true), version("v2", false)},
		},
	}
}

func customObject(gvr schema.GroupVersionResource, kind, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind, "metadata": map[string]any{"name": name},
	}}
}

// streamEnd reports what a watch delivered once its stream has ended.
type streamEnd struct {
	name string
	done chan struct{}

	mu    sync.Mutex
	types []string // read without mu once done is closed
}

func (s *streamEnd) add(typ string) {
	s.mu.Lock()
	s.types = append(s.types, typ)
	s.mu.Unlock()
}

// seen returns the event types received so far.
func (s *streamEnd) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.types...)
}

// follow collects the event types of a client-go watch until its result
// channel closes.
func follow(name string, w watch.Interface) *streamEnd {
	s := &streamEnd{name: name, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for ev := range w.ResultChan() {
			s.add(string(ev.Type))
		}
	}()
	return s
}

// followRaw collects the event types of a raw JSON watch stream until the
// server ends the response.
func followRaw(t *testing.T, srv *apiservertest.Running, name, path string) *streamEnd {
	t.Helper()
	c := newClient(t, srv)
	req, err := http.NewRequest("GET", srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+apiservertest.AdminToken)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d", path, resp.StatusCode)
	}
	s := &streamEnd{name: name, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev struct{ Type string }
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				ev.Type = "UNDECODABLE " + sc.Text()
			}
			s.add(ev.Type)
		}
		if sc.Err() != nil {
			s.add("READ-ERROR: " + sc.Err().Error())
		}
	}()
	return s
}

// waitEnded requires the stream to end cleanly within watchEndWithin: no
// ERROR event (Kubernetes just closes the stream), and, when wantDeleted,
// the DELETED event of the objects removed with the definition first.
func (s *streamEnd) waitEnded(t *testing.T, wantDeleted bool) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(watchEndWithin):
		t.Errorf("%s: still open %v after the change, want it ended", s.name, watchEndWithin)
		return
	}
	for _, typ := range s.types {
		switch watch.EventType(typ) {
		case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		default:
			t.Errorf("%s: got event %s before the end, want the stream just to end (events %v)", s.name, typ, s.types)
		}
	}
	if wantDeleted && !containsType(s, watch.Deleted) {
		t.Errorf("%s: events %v, want the DELETED of the removed object before the end", s.name, s.types)
	}
}

// waitServed polls until gvr is served (want true) or not (false).
func waitServed(t *testing.T, srv *apiservertest.Running, gvr schema.GroupVersionResource, want bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, ok := srv.Server.Registry().Get(gvr); ok == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s served=%v, want %v", gvr, !want, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCustomResourceWatchesEndWithTheirDefinition: deleting a CRD ends
// the watches open on its resource (client-go's dynamic JSON watch, a
// metadata-only watch, a raw JSON stream, in every served version) soon,
// after the DELETED events of its objects and without an ERROR event, as
// Kubernetes tears down the resource's storage; a new watch is then a 404;
// other resources' watches go on; and a re-created CRD serves watches
// again.
func TestCustomResourceWatchesEndWithTheirDefinition(t *testing.T) {
	srv := apiservertest.Start(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	md := metadata.NewForConfigOrDie(srv.Config)
	cs := clientsetFor(t, srv.Config)
	ctx := context.Background()
	v1 := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	v2 := v1.GroupResource().WithVersion("v2")
	createCRD(t, srv, twoVersionCRD("widgets", "Widget"), v1)
	if _, err := dyn.Resource(v1).Namespace("default").Create(ctx, customObject(v1, "Widget", "w1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var streams []*streamEnd
	open := func(name string, w watch.Interface, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(w.Stop)
		streams = append(streams, follow(name, w))
	}
	w, err := dyn.Resource(v1).Namespace("default").Watch(ctx, metav1.ListOptions{})
	open("dynamic watch of v1", w, err)
	w, err = dyn.Resource(v2).Watch(ctx, metav1.ListOptions{AllowWatchBookmarks: true})
	open("dynamic watch of v2 in all namespaces", w, err)
	w, err = md.Resource(v1).Namespace("default").Watch(ctx, metav1.ListOptions{})
	open("metadata watch of v1", w, err)
	streams = append(streams, followRaw(t, srv, "raw JSON watch of v1", "/apis/example.com/v1/namespaces/default/widgets?watch=true"))
	cmWatch, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer cmWatch.Stop()

	if err := dyn.Resource(crdsGVR).Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, s := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.waitEnded(t, true)
		}()
	}
	wg.Wait()

	// A watch of another resource is not touched.
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, cmWatch, watch.Added)

	if _, err := dyn.Resource(v1).Namespace("default").Watch(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("watch after the CRD is gone: %v, want NotFound", err)
	}

	createCRD(t, srv, twoVersionCRD("widgets", "Widget"), v1)
	w, err = dyn.Resource(v1).Namespace("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch of the re-created CRD: %v", err)
	}
	defer w.Stop()
	mw, err := md.Resource(v1).Namespace("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("metadata watch of the re-created CRD: %v", err)
	}
	defer mw.Stop()
	if _, err := dyn.Resource(v1).Namespace("default").Create(ctx, customObject(v1, "Widget", "w2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, w, watch.Added)
	expectEvents(t, mw, watch.Added)
}

// TestCustomResourceWatchesEndWithDefinitionChanges: Kubernetes tears
// down a custom resource's storage, ending every watch of every version,
// when the CRD's spec changes (a version no longer served, the storage
// version moved, a schema edited); a change outside the spec (a label)
// leaves them open. After a teardown the served versions take new watches
// and an unserved one is a 404.
func TestCustomResourceWatchesEndWithDefinitionChanges(t *testing.T) {
	srv := apiservertest.Start(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	md := metadata.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	versions := func(crd *unstructured.Unstructured) []any {
		vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		return vs
	}
	for _, tc := range []struct {
		name, plural, kind string
		change             func(crd *unstructured.Unstructured)
		ends               bool
		unserved           string
	}{
		{name: "a label on the definition", plural: "labelleds", kind: "Labelled", change: func(crd *unstructured.Unstructured) {
			crd.SetLabels(map[string]string{"team": "a"})
		}},
		{name: "v2 no longer served", plural: "unserveds", kind: "Unserved", ends: true, unserved: "v2", change: func(crd *unstructured.Unstructured) {
			vs := versions(crd)
			vs[1].(map[string]any)["served"] = false
			_ = unstructured.SetNestedSlice(crd.Object, vs, "spec", "versions")
		}},
		{name: "the storage version moved to v2", plural: "moveds", kind: "Moved", ends: true, change: func(crd *unstructured.Unstructured) {
			vs := versions(crd)
			vs[0].(map[string]any)["storage"] = false
			vs[1].(map[string]any)["storage"] = true
			_ = unstructured.SetNestedSlice(crd.Object, vs, "spec", "versions")
		}},
		{name: "a schema edited", plural: "reshapeds", kind: "Reshaped", ends: true, change: func(crd *unstructured.Unstructured) {
			vs := versions(crd)
			props := vs[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)["properties"].(map[string]any)
			props["colour"] = map[string]any{"type": "string"}
			_ = unstructured.SetNestedSlice(crd.Object, vs, "spec", "versions")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v1 := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: tc.plural}
			v2 := v1.GroupResource().WithVersion("v2")
			createCRD(t, srv, twoVersionCRD(tc.plural, tc.kind), v1)
			waitServed(t, srv, v2, true)
			var streams []*streamEnd
			var watches []watch.Interface
			for _, o := range []struct {
				name string
				open func() (watch.Interface, error)
			}{
				{"dynamic watch of v1", func() (watch.Interface, error) {
					return dyn.Resource(v1).Namespace("default").Watch(ctx, metav1.ListOptions{})
				}},
				{"dynamic watch of v2", func() (watch.Interface, error) {
					return dyn.Resource(v2).Namespace("default").Watch(ctx, metav1.ListOptions{})
				}},
				{"metadata watch of v1", func() (watch.Interface, error) {
					return md.Resource(v1).Watch(ctx, metav1.ListOptions{})
				}},
			} {
				w, err := o.open()
				if err != nil {
					t.Fatalf("%s: %v", o.name, err)
				}
				t.Cleanup(w.Stop)
				watches = append(watches, w)
				streams = append(streams, follow(o.name, w))
			}

			// The controller's status write may come between get and update.
			if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				crd, err := dyn.Resource(crdsGVR).Get(ctx, tc.plural+".example.com", metav1.GetOptions{})
				if err != nil {
					return err
				}
				tc.change(crd)
				_, err = dyn.Resource(crdsGVR).Update(ctx, crd, metav1.UpdateOptions{})
				return err
			}); err != nil {
				t.Fatal(err)
			}

			if !tc.ends {
				// Past the teardown's second, the watches still deliver.
				time.Sleep(2 * time.Second)
				for _, s := range streams {
					select {
					case <-s.done:
						t.Errorf("%s ended (events %v); a change outside the spec must leave it open", s.name, s.types)
					default:
					}
				}
				if _, err := dyn.Resource(v1).Namespace("default").Create(ctx, customObject(v1, tc.kind, "after"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				deadline := time.After(10 * time.Second)
				for _, s := range streams {
					for !containsType(s, watch.Added) {
						select {
						case <-deadline:
							t.Fatalf("%s: events %v, want the ADDED of a new object", s.name, s.seen())
						case <-time.After(20 * time.Millisecond):
						}
					}
				}
				return
			}

			var wg sync.WaitGroup
			for _, s := range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.waitEnded(t, false)
				}()
			}
			wg.Wait()
			if tc.unserved != "" {
				waitServed(t, srv, v1.GroupResource().WithVersion(tc.unserved), false)
				if _, err := dyn.Resource(v1.GroupResource().WithVersion(tc.unserved)).Watch(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("watch of unserved %s: %v, want NotFound", tc.unserved, err)
				}
			}
			w, err := dyn.Resource(v1).Namespace("default").Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("new watch of v1: %v", err)
			}
			defer w.Stop()
			if _, err := dyn.Resource(v1).Namespace("default").Create(ctx, customObject(v1, tc.kind, "after"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			expectEvents(t, w, watch.Added)
		})
	}
}

// containsType tells whether s has received an event of typ so far.
func containsType(s *streamEnd, typ watch.EventType) bool {
	for _, t := range s.seen() {
		if t == string(typ) {
			return true
		}
	}
	return false
}

// TestKubectlWatchEndsWithDefinition: `kubectl get <cr> -w` (kubectl
// 1.33) returns soon after the CRD is deleted instead of waiting for its
// watch to time out.
func TestKubectlWatchEndsWithDefinition(t *testing.T) {
	kubectl := kubectlAt(t, 33)
	srv := apiservertest.Start(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	v1 := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	createCRD(t, srv, twoVersionCRD("widgets", "Widget"), v1)
	if _, err := dyn.Resource(v1).Namespace("default").Create(ctx, customObject(v1, "Widget", "first"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(kubectl, "--kubeconfig="+userKubeconfig(t, srv, "admin", "system:masters"), "get", "widgets", "-n", "default", "-w")
	cmd.Env = []string{"HOME=" + t.TempDir()}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	waitLine := func(name string) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("kubectl ended before printing %s", name)
				}
				if strings.HasPrefix(l, name+" ") {
					return
				}
			case <-timeout:
				t.Fatalf("kubectl did not print %s", name)
			}
		}
	}
	waitLine("first")
	// Once kubectl prints an object created now, its watch is open.
	if _, err := dyn.Resource(v1).Namespace("default").Create(ctx, customObject(v1, "Widget", "second"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLine("second")

	if err := dyn.Resource(crdsGVR).Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range lines { // keep kubectl's output flowing
		}
	}()
	select {
	case err := <-exited:
		t.Logf("kubectl get -w ended: %v", err)
	case <-time.After(watchEndWithin):
		t.Fatalf("kubectl get -w still running %v after the CRD was deleted", watchEndWithin)
	}
}

// TestCustomResourceJSONWatchLines: a JSON watch of a custom resource has
// one event a line, as Kubernetes writes every JSON watch (the object's
// encoder ends it with a newline, which stays out of the event), so that
// line readers (curl | jq, scripts) see whole events.
func TestCustomResourceJSONWatchLines(t *testing.T) {
	srv := apiservertest.Start(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	v1 := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	createCRD(t, srv, twoVersionCRD("widgets", "Widget"), v1)
	for _, name := range []string{"a", "b"} {
		if _, err := dyn.Resource(v1).Namespace("default").Create(context.Background(), customObject(v1, "Widget", name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	resp, data := newClient(t, srv).do("GET", "/apis/example.com/v1/namespaces/default/widgets?watch=true&timeoutSeconds=1", "", nil, "Accept", "application/json")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one for each of the 2 ADDED events:\n%s", len(lines), data)
	}
	for i, line := range lines {
		var ev struct {
			Type   string
			Object struct{ Metadata struct{ Name string } }
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Type != "ADDED" || ev.Object.Metadata.Name != []string{"a", "b"}[i] {
			t.Errorf("line %d = %s (%v), want the ADDED event of %s", i, line, err, []string{"a", "b"}[i])
		}
	}
}
