package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// TestListOptionsValidation: the resourceVersion, resourceVersionMatch,
// continue, sendInitialEvents and allowWatchBookmarks combinations that
// Kubernetes' ValidateListOptions refuses are 422 Invalid on
// ListOptions.meta.k8s.io naming each broken rule, and the ones it allows
// (a watch with sendInitialEvents=false and resourceVersionMatch) are served.
func TestListOptionsValidation(t *testing.T) {
	srv := apiservertest.Start(t)
	c := newClient(t, srv)
	cases := []struct {
		query string
		want  []string // substrings of the message, in order
	}{
		{"resourceVersionMatch=Exact", []string{`ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided`}},
		{"resourceVersionMatch=NotOlderThan", []string{"resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"}},
		{"resourceVersion=0&resourceVersionMatch=Exact", []string{`resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"`}},
		{"resourceVersion=1&resourceVersionMatch=Newest", []string{`resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""`}},
		{"resourceVersion=1&resourceVersionMatch=NotOlderThan&continue=abc", []string{"resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided"}},
		{"resourceVersionMatch=Exact&continue=abc", []string{"[resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided", "resourceVersionMatch is forbidden when continue is provided]"}},
		{"sendInitialEvents=true", []string{"sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"}},
		{"watch=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", []string{"resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"}},
		{"watch=true&sendInitialEvents=true&allowWatchBookmarks=true", []string{"resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"}},
		{"watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", []string{"allowWatchBookmarks: Forbidden: allowWatchBookmarks must be set to true when resourceVersionMatch is set"}},
		{"watch=true&sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=1&allowWatchBookmarks=true", []string{"sendInitialEvents requires setting resourceVersionMatch to NotOlderThan", `resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"`}},
	}
	for _, tc := range cases {
		resp, data := c.do("GET", "/api/v1/namespaces/default/configmaps?"+tc.query, "", nil)
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d %s, want 422", tc.query, resp.StatusCode, data)
			continue
		}
		st := status(t, data)
		if st.Reason != "Invalid" || st.Details == nil || st.Details.Kind != "ListOptions" || st.Details.Group != "meta.k8s.io" {
			t.Errorf("%s: %+v, want Invalid ListOptions.meta.k8s.io", tc.query, st)
		}
		rest := st.Message
		for _, w := range tc.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: message %q, want it to contain %q", tc.query, st.Message, w)
				break
			}
			rest = rest[i+len(w):]
		}
	}

	// Allowed: a watch that asks for no initial events but names the
	// match and bookmarks starts at once, with nothing but live events.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&fieldSelector=metadata.name%3Dlive", nil)
	req.Header.Set("Authorization", "Bearer "+apiservertest.AdminToken)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch with sendInitialEvents=false and resourceVersionMatch=NotOlderThan: %d, want 200", resp.StatusCode)
	}
	c.do("POST", "/api/v1/namespaces/default/configmaps", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"live"}}`))
	ev := watchLines(t, resp.Body, 1)[0]
	if name := ev["object"].(map[string]any)["metadata"].(map[string]any)["name"]; ev["type"] != "ADDED" || name != "live" {
		t.Errorf("first event %v, want ADDED live", ev)
	}
}

// TestTooLargeResourceVersion: a read that asks for a resourceVersion
// newer than the store's is 504 Timeout "Too large resource version: X,
// current: Y" retried after 1 s with the ResourceVersionTooLarge cause, as
// Kubernetes' storage.NewTooLargeResourceVersionError: client-go's
// reflector and apierrors.IsTooLargeResourceVersion look for the cause. A
// GET is no exception: it was answered with the current object.
func TestTooLargeResourceVersion(t *testing.T) {
	srv := apiservertest.Start(t)
	c := newClient(t, srv)
	if resp, data := c.do("POST", "/api/v1/namespaces/default/configmaps", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, data)
	}
	for _, q := range []string{
		"configmaps?resourceVersion=999999",
		"configmaps?resourceVersion=999999&resourceVersionMatch=NotOlderThan&limit=1",
		"configmaps?resourceVersion=999999&resourceVersionMatch=Exact",
		"configmaps/x?resourceVersion=999999",
		"configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=999999",
	} {
		resp, data := c.do("GET", "/api/v1/namespaces/default/"+q, "", nil)
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Errorf("%s: %d %s, want 504", q, resp.StatusCode, data)
			continue
		}
		st := status(t, data)
		if st.Reason != "Timeout" || !strings.HasPrefix(st.Message, "Timeout: Too large resource version: 999999, current: ") {
			t.Errorf("%s: %q %q, want Timeout \"Timeout: Too large resource version: 999999, current: N\"", q, st.Reason, st.Message)
		}
		if st.Details == nil || st.Details.RetryAfterSeconds != 1 || len(st.Details.Causes) != 1 ||
			st.Details.Causes[0].Type != "ResourceVersionTooLarge" || st.Details.Causes[0].Message != "Too large resource version" {
			t.Errorf("%s: details %+v, want retry after 1 s and the ResourceVersionTooLarge cause", q, st.Details)
		}
	}
}

// TestContinueAfterCompaction: a continue token whose revision was
// compacted is 410 Expired with Kubernetes' inconsistent-continue message
// and, in the Status's metadata.continue, a token that goes on from the
// same key at the newest revision (etcd3's handleCompactedErrorForPaging);
// an Exact list at a compacted revision is 410 "The resourceVersion for the
// provided list is too old.".
func TestContinueAfterCompaction(t *testing.T) {
	srv := apiservertest.Start(t)
	c := newClient(t, srv)
	for _, n := range []string{"a", "b", "c"} {
		if resp, data := c.do("POST", "/api/v1/namespaces/default/secrets", "application/json", []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"`+n+`"}}`)); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %d %s", resp.StatusCode, data)
		}
	}
	list := func(q string) (*http.Response, map[string]any) {
		resp, data := c.do("GET", "/api/v1/namespaces/default/secrets?fieldSelector=type%3DOpaque&"+q, "", nil)
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v %s", q, err, data)
		}
		return resp, m
	}
	_, first := list("limit=1")
	md := first["metadata"].(map[string]any)
	token, firstRV := md["continue"].(string), md["resourceVersion"].(string)
	if token == "" {
		t.Fatalf("first page %v: no continue", first)
	}
	if resp, data := c.do("POST", "/api/v1/namespaces/default/secrets", "application/json", []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"d"}}`)); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, data)
	}
	rev, err := srv.Store.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Store.Compact(context.Background(), rev); err != nil {
		t.Fatal(err)
	}

	resp, st := list("limit=1&continue=" + token)
	if resp.StatusCode != http.StatusGone || st["reason"] != "Expired" {
		t.Fatalf("continue after compaction: %d %v, want 410 Expired", resp.StatusCode, st)
	}
	if msg, _ := st["message"].(string); !strings.HasPrefix(msg, "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results.") {
		t.Errorf("message %q, want Kubernetes' inconsistent-continue message", msg)
	}
	next, _ := st["metadata"].(map[string]any)["continue"].(string)
	if next == "" {
		t.Fatalf("410 %v carries no continue token", st)
	}
	var names []string
	for next != "" {
		resp, page := list("limit=1&continue=" + next)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("continue with the 410's token: %d %v", resp.StatusCode, page)
		}
		for _, it := range page["items"].([]any) {
			names = append(names, it.(map[string]any)["metadata"].(map[string]any)["name"].(string))
		}
		next, _ = page["metadata"].(map[string]any)["continue"].(string)
	}
	if strings.Join(names, ",") != "b,c,d" {
		t.Errorf("the rest of the list after the 410 %v, want b,c,d (at the newest revision)", names)
	}

	resp, st = list("resourceVersion=" + firstRV + "&resourceVersionMatch=Exact")
	if resp.StatusCode != http.StatusGone || st["reason"] != "Expired" || st["message"] != "The resourceVersion for the provided list is too old." {
		t.Errorf("Exact list at a compacted revision: %d %v, want 410 Expired \"The resourceVersion for the provided list is too old.\"", resp.StatusCode, st)
	}
}

// TestBadSelectorMessages: a selector that does not parse is 400 with the
// parser's own message, as Kubernetes' parameter decoding reports it (no
// prefix of skiff's doubling "unable to parse requirement").
func TestBadSelectorMessages(t *testing.T) {
	srv := apiservertest.Start(t)
	c := newClient(t, srv)
	for q, want := range map[string]string{
		"labelSelector=a%20b": "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
		"fieldSelector=a%20b": "invalid selector: 'a b'; can't understand 'a b'",
	} {
		resp, data := c.do("GET", "/api/v1/namespaces/default/configmaps?"+q, "", nil)
		if st := status(t, data); resp.StatusCode != http.StatusBadRequest || st.Message != want {
			t.Errorf("%s: %d %q, want 400 %q", q, resp.StatusCode, st.Message, want)
		}
	}
}

// TestPaginatedListAtResourceVersion: a list with a limit and a non-zero
// resourceVersion but no resourceVersionMatch is served at exactly that
// revision, Kubernetes' legacy rule for paginated lists (its etcd3 store
// reads such a list with that revision); without a limit the revision is
// only a lower bound.
func TestPaginatedListAtResourceVersion(t *testing.T) {
	srv := apiservertest.Start(t)
	c := newClient(t, srv)
	var rvs []string
	for _, n := range []string{"a", "b"} {
		resp, data := c.do("POST", "/api/v1/namespaces/default/secrets", "application/json", []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"`+n+`"}}`))
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %d %s", resp.StatusCode, data)
		}
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		rvs = append(rvs, m["metadata"].(map[string]any)["resourceVersion"].(string))
	}
	names := func(q string) (string, string) {
		resp, data := c.do("GET", "/api/v1/namespaces/default/secrets?"+q, "", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", q, resp.StatusCode, data)
		}
		var l struct {
			Metadata struct{ ResourceVersion string }
			Items    []struct{ Metadata struct{ Name string } }
		}
		if err := json.Unmarshal(data, &l); err != nil {
			t.Fatal(err)
		}
		var ns []string
		for _, it := range l.Items {
			ns = append(ns, it.Metadata.Name)
		}
		return strings.Join(ns, ","), l.Metadata.ResourceVersion
	}
	if got, rv := names("limit=10&resourceVersion=" + rvs[0]); got != "a" || rv != rvs[0] {
		t.Errorf("limit=10&resourceVersion=%s: %q at %s, want a at %s", rvs[0], got, rv, rvs[0])
	}
	if got, rv := names("resourceVersion=" + rvs[0]); got != "a,b" || rv == rvs[0] {
		t.Errorf("resourceVersion=%s without a limit: %q at %s, want a,b at the newest revision", rvs[0], got, rv)
	}
	if got, _ := names("limit=10&resourceVersion=0"); got != "a,b" {
		t.Errorf("limit=10&resourceVersion=0: %q, want a,b", got)
	}
}
