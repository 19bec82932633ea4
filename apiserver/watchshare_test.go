package apiserver_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// TestWatchersShareEvents: watchers of one resource in different forms
// (JSON, protobuf, Table, a label selector) receive the same writes, each
// in its own form, although the server decodes and encodes each event once
// per form and shares the result.
func TestWatchersShareEvents(t *testing.T) {
	srv := apiservertest.Start(t)
	cs, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newClient(t, srv)
	c.hc.Timeout = 0
	path := "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion="
	list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := list.ResourceVersion

	type stream struct {
		name, query, accept string
		want                []string
		got                 []string
		rvs                 []string
	}
	streams := []*stream{
		{name: "json", accept: "application/json", want: []string{"ADDED s1 v1", "MODIFIED s1 v2", "MODIFIED s1 v3", "DELETED s1 v3"}},
		{name: "json-2", accept: "application/json", want: []string{"ADDED s1 v1", "MODIFIED s1 v2", "MODIFIED s1 v3", "DELETED s1 v3"}},
		{name: "table", accept: "application/json;as=Table;v=v1;g=meta.k8s.io", want: []string{"ADDED s1 Table", "MODIFIED s1 Table", "MODIFIED s1 Table", "DELETED s1 Table"}},
		// The label leaves and comes back: DELETED then ADDED for this one.
		// The DELETED carries the last state it selected (v1), at the
		// revision of the update that made it leave, as Kubernetes' watch
		// cache sends it.
		{name: "selector", query: "&labelSelector=keep%3Dyes", accept: "application/json", want: []string{"ADDED s1 v1", "DELETED s1 v1", "ADDED s1 v3", "DELETED s1 v3"}},
		{name: "selector-table", query: "&labelSelector=keep%3Dyes", accept: "application/json;as=Table;v=v1;g=meta.k8s.io", want: []string{"ADDED s1 yes", "DELETED s1 yes", "ADDED s1 yes", "DELETED s1 yes"}},
	}
	var wg sync.WaitGroup
	for _, st := range streams {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path+rv+st.query, nil)
		req.Header.Set("Authorization", "Bearer "+apiservertest.AdminToken)
		req.Header.Set("Accept", st.accept)
		resp, err := c.hc.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("watch %s: %v %v", st.name, err, resp)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer resp.Body.Close()
			for _, ev := range watchLines(t, resp.Body, len(st.want)) {
				obj := ev["object"].(map[string]any)
				md, _ := obj["metadata"].(map[string]any)
				name, detail := "", ""
				if obj["kind"] == "Table" {
					rows := obj["rows"].([]any)
					md = rows[0].(map[string]any)["object"].(map[string]any)["metadata"].(map[string]any)
					detail = "Table"
					if st.query != "" {
						detail = fmt.Sprint(md["labels"].(map[string]any)["keep"])
					}
				} else {
					detail = fmt.Sprint(obj["data"].(map[string]any)["v"])
				}
				name = fmt.Sprint(md["name"])
				st.rvs = append(st.rvs, fmt.Sprint(md["resourceVersion"]))
				st.got = append(st.got, fmt.Sprintf("%s %s %s", ev["type"], name, detail))
			}
		}()
	}
	pw, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Stop()

	cms := cs.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "s1", Labels: map[string]string{"keep": "yes"}}, Data: map[string]string{"v": "v1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Labels["keep"], cm.Data["v"] = "no", "v2"
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	leftAt := cm.ResourceVersion
	cm.Labels["keep"], cm.Data["v"] = "yes", "v3"
	if _, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "s1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var proto []string
	for len(proto) < 4 {
		select {
		case ev := <-pw.ResultChan():
			c, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				t.Fatalf("protobuf watch: %v %T", ev.Type, ev.Object)
			}
			proto = append(proto, fmt.Sprintf("%s %s %s", ev.Type, c.Name, c.Data["v"]))
		case <-ctx.Done():
			t.Fatalf("protobuf watch saw only %v", proto)
		}
	}
	wg.Wait()
	if want := []string{"ADDED s1 v1", "MODIFIED s1 v2", "MODIFIED s1 v3", "DELETED s1 v3"}; strings.Join(proto, ",") != strings.Join(want, ",") {
		t.Errorf("protobuf watch %v, want %v", proto, want)
	}
	for _, st := range streams {
		if strings.Join(st.got, ",") != strings.Join(st.want, ",") {
			t.Errorf("%s watch %v, want %v", st.name, st.got, st.want)
		}
		if st.query != "" && len(st.rvs) > 1 && st.rvs[1] != leftAt {
			t.Errorf("%s watch: DELETED at resourceVersion %s, want the leaving update's %s", st.name, st.rvs[1], leftAt)
		}
	}
}
