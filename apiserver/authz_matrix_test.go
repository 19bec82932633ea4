package apiserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
	"github.com/skiffkube/skiff/apiserver/pki"
)

// identity is one caller of the matrix: an HTTPS client and, for token
// identities, its bearer token.
type identity struct {
	name  string
	hc    *http.Client
	token string
}

func (id identity) do(t *testing.T, base, method, path string, body []byte, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		ct := "application/json"
		if method == http.MethodPatch {
			ct = "application/merge-patch+json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if id.token != "" {
		req.Header.Set("Authorization", "Bearer "+id.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := id.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s %s: %v", id.name, method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func httpsClient(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	tc, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
}

// matrixFixture builds the cluster the matrix runs against: namespaces
// team and other; node n1 runs team/p1 (which uses secret s1, config map c1
// and service account robot), node n2 runs other/p2 (secret s2); alice may
// view team; robot (a service account) may edit team.
func matrixFixture(t *testing.T) (*apiservertest.Running, map[string]identity) {
	t.Helper()
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{"team", "other"} {
		must(admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}))
	}
	must(admin.CoreV1().ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}))
	for ns, s := range map[string]string{"team": "s1", "other": "s2"} {
		must(admin.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s}, StringData: map[string]string{"password": "hunter2-" + s}}, metav1.CreateOptions{}))
	}
	must(admin.CoreV1().ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}, metav1.CreateOptions{}))
	for _, n := range []string{"n1", "n2"} {
		must(admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}))
		must(admin.CoordinationV1().Leases("kube-node-lease").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}))
	}
	pod := func(ns, name, node, secret string, cm, sa string) *corev1.Pod {
		p := testPod(name)
		p.Namespace = ns
		p.Spec.NodeName = node
		p.Spec.ServiceAccountName = sa
		p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}}
		if cm != "" {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}
		}
		return p
	}
	must(admin.CoreV1().Pods("team").Create(ctx, pod("team", "p1", "n1", "s1", "c1", "robot"), metav1.CreateOptions{}))
	must(admin.CoreV1().Pods("other").Create(ctx, pod("other", "p2", "n2", "s2", "", ""), metav1.CreateOptions{}))
	bind := func(name, role string, s rbacv1.Subject) {
		must(admin.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: []rbacv1.Subject{s}}, metav1.CreateOptions{}))
	}
	bind("alice-view", "view", rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"})
	bind("robot-edit", "edit", rbacv1.Subject{Kind: "ServiceAccount", Name: "robot", Namespace: "team"})
	tr, err := admin.CoreV1().ServiceAccounts("team").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	anonCfg := rest.AnonymousClientConfig(srv.Config)
	ids := map[string]identity{
		"anonymous": {name: "anonymous", hc: httpsClient(t, anonCfg)},
		"admin":     {name: "admin", hc: httpsClient(t, srv.Config)},
		"alice":     {name: "alice", hc: httpsClient(t, srv.UserConfig(t, "alice"))},
		"robot":     {name: "robot", hc: httpsClient(t, anonCfg), token: tr.Status.Token},
		"node":      {name: "node n1", hc: httpsClient(t, srv.UserConfig(t, "system:node:n1", "system:nodes"))},
	}
	// Bindings and pods reach the authorizers through watches.
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, _ := ids["alice"].do(t, srv.URL, "GET", "/api/v1/namespaces/team/pods", nil)
		r, _ := ids["robot"].do(t, srv.URL, "GET", "/api/v1/namespaces/team/secrets/s1", nil)
		// edit gets view's rules by a second aggregation pass.
		rv, _ := ids["robot"].do(t, srv.URL, "GET", "/api/v1/namespaces/team/pods", nil)
		n, _ := ids["node"].do(t, srv.URL, "GET", "/api/v1/namespaces/team/secrets/s1", nil)
		if a == 200 && r == 200 && rv == 200 && n == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fixture never became effective: alice %d robot %d node %d", a, r, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return srv, ids
}

// TestAuthorizationMatrix: each identity × verb × resource over HTTPS, with
// the status Kubernetes would give. Columns: anonymous, admin, alice (view
// in team), robot (service account, edit in team), node n1.
func TestAuthorizationMatrix(t *testing.T) {
	srv, ids := matrixFixture(t)
	order := []string{"anonymous", "admin", "alice", "robot", "node"}
	p1, err := clientsetFor(t, srv.Config).CoreV1().Pods("team").Get(context.Background(), "p1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm := func(name string) []byte {
		return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q}}`, name))
	}
	rows := []struct {
		what         string
		method, path string
		body         func(id string) []byte
		header       []string
		want         [5]int
	}{
		{"health", "GET", "/livez", nil, nil, [5]int{200, 200, 200, 200, 200}},
		{"version", "GET", "/version", nil, nil, [5]int{200, 200, 200, 200, 200}},
		{"discovery", "GET", "/apis", nil, nil, [5]int{401, 200, 200, 200, 200}},
		{"metrics", "GET", "/metrics", nil, nil, [5]int{401, 200, 403, 403, 403}},
		{"list pods in team", "GET", "/api/v1/namespaces/team/pods", nil, nil, [5]int{401, 200, 200, 200, 403}},
		{"list n1's pods", "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", nil, nil, [5]int{401, 200, 403, 403, 200}},
		{"list n2's pods", "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn2", nil, nil, [5]int{401, 200, 403, 403, 403}},
		{"list pods in other", "GET", "/api/v1/namespaces/other/pods", nil, nil, [5]int{401, 200, 403, 403, 403}},
		{"get pod on n1", "GET", "/api/v1/namespaces/team/pods/p1", nil, nil, [5]int{401, 200, 200, 200, 200}},
		{"get pod on n2", "GET", "/api/v1/namespaces/other/pods/p2", nil, nil, [5]int{401, 200, 403, 403, 403}},
		{"patch status of pod on n1", "PATCH", "/api/v1/namespaces/team/pods/p1/status", func(string) []byte { return []byte(`{}`) }, nil, [5]int{401, 200, 403, 403, 200}},
		{"patch status of pod on n2", "PATCH", "/api/v1/namespaces/other/pods/p2/status", func(string) []byte { return []byte(`{}`) }, nil, [5]int{401, 200, 403, 403, 403}},
		{"delete a missing pod (authorized callers get 404)", "DELETE", "/api/v1/namespaces/team/pods/nope", nil, nil, [5]int{401, 404, 403, 404, 403}},
		{"create a pod", "POST", "/api/v1/namespaces/team/pods", func(id string) []byte {
			return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"made-by-` + id + `"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
		}, nil, [5]int{401, 201, 403, 201, 403}},
		{"get secret of pod on n1", "GET", "/api/v1/namespaces/team/secrets/s1", nil, nil, [5]int{401, 200, 403, 200, 200}},
		{"get secret of pod on n2", "GET", "/api/v1/namespaces/other/secrets/s2", nil, nil, [5]int{401, 200, 403, 403, 403}},
		{"watch secret of pod on n1", "GET", "/api/v1/namespaces/team/secrets?fieldSelector=metadata.name%3Ds1&limit=1", nil, nil, [5]int{401, 200, 403, 200, 200}},
		{"list secrets", "GET", "/api/v1/namespaces/team/secrets", nil, nil, [5]int{401, 200, 403, 200, 403}},
		{"get config map of pod on n1", "GET", "/api/v1/namespaces/team/configmaps/c1", nil, nil, [5]int{401, 200, 200, 200, 200}},
		{"create config map", "POST", "/api/v1/namespaces/team/configmaps", func(id string) []byte { return cm("cm-" + id) }, nil, [5]int{401, 201, 403, 201, 403}},
		{"create config map in other", "POST", "/api/v1/namespaces/other/configmaps", func(id string) []byte { return cm("cm-" + id) }, nil, [5]int{401, 201, 403, 403, 403}},
		// Kubernetes' node authorizer has no vertex for a volume that does
		// not exist: a node is refused (403), not told it is missing.
		{"get a volume that does not exist", "GET", "/api/v1/persistentvolumes/nope", nil, nil, [5]int{401, 404, 403, 403, 403}},
		{"get own node", "GET", "/api/v1/nodes/n1", nil, nil, [5]int{401, 200, 403, 403, 200}},
		{"get another node", "GET", "/api/v1/nodes/n2", nil, nil, [5]int{401, 200, 403, 403, 403}},
		{"patch another node's status", "PATCH", "/api/v1/nodes/n2/status", func(string) []byte { return []byte(`{}`) }, nil, [5]int{401, 200, 403, 403, 403}},
		{"list nodes", "GET", "/api/v1/nodes", nil, nil, [5]int{401, 200, 403, 403, 403}},
		{"register another node", "POST", "/api/v1/nodes", func(id string) []byte {
			return []byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"by-` + id + `"}}`)
		}, nil, [5]int{401, 201, 403, 403, 403}},
		{"get own lease", "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", nil, nil, [5]int{401, 200, 403, 403, 200}},
		{"update another node's lease", "PATCH", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2", func(string) []byte { return []byte(`{}`) }, nil, [5]int{401, 200, 403, 403, 403}},
		{"token for the service account of a pod on n1", "POST", "/api/v1/namespaces/team/serviceaccounts/robot/token",
			func(string) []byte {
				return []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"apiVersion":"v1","kind":"Pod","name":"p1","uid":"` + string(p1.UID) + `"}}}`)
			}, nil, [5]int{401, 201, 403, 201, 201}},
		// NodeRestriction: a node's tokens are bound to its own pods.
		{"unbound token for the service account of a pod on n1", "POST", "/api/v1/namespaces/team/serviceaccounts/robot/token",
			func(string) []byte { return []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest"}`) }, nil, [5]int{401, 201, 403, 201, 403}},
		{"token for a service account that does not exist", "POST", "/api/v1/namespaces/team/serviceaccounts/ghost/token",
			func(string) []byte { return []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest"}`) }, nil, [5]int{401, 404, 403, 404, 403}},
		{"read role bindings", "GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings", nil, nil, [5]int{401, 200, 403, 403, 403}},
		{"create a cluster role binding", "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", func(id string) []byte {
			return []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"crb-` + id + `"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"User","name":"x","apiGroup":"rbac.authorization.k8s.io"}]}`)
		}, nil, [5]int{401, 201, 403, 403, 403}},
		{"can-i", "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", func(string) []byte {
			return []byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`)
		}, nil, [5]int{401, 201, 201, 201, 201}},
		{"whoami", "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", func(string) []byte {
			return []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
		}, nil, [5]int{401, 201, 201, 201, 201}},
		{"impersonate alice", "GET", "/api/v1/namespaces/team/pods", nil, []string{"Impersonate-User", "alice"}, [5]int{401, 200, 403, 403, 403}},
		{"impersonate system:masters", "GET", "/api/v1/namespaces/other/secrets", nil, []string{"Impersonate-User", "x", "Impersonate-Group", "system:masters"}, [5]int{401, 200, 403, 403, 403}},
		{"impersonate a group without a user", "GET", "/api/v1/namespaces/team/pods", nil, []string{"Impersonate-Group", "system:masters"}, [5]int{401, 400, 400, 400, 400}},
	}
	for _, row := range rows {
		for i, who := range order {
			id := ids[who]
			var body []byte
			if row.body != nil {
				body = row.body(who)
			}
			got, data := id.do(t, srv.URL, row.method, row.path, body, row.header...)
			if got != row.want[i] {
				t.Errorf("%-45s %-9s = %d, want %d: %.200s", row.what, who, got, row.want[i], data)
			}
		}
	}
}

// TestSecurityRegressions: inputs an attacker would try, all refused.
func TestSecurityRegressions(t *testing.T) {
	srv, ids := matrixFixture(t)
	alice, node := ids["alice"], ids["node"]
	t.Run("path traversal in names reaches no secret", func(t *testing.T) {
		for _, p := range []string{
			"/api/v1/namespaces/team/configmaps/..%2Fsecrets%2Fs1",
			"/api/v1/namespaces/team/configmaps/../secrets/s1",
			"/api/v1/namespaces/team/pods/p1/..%2F..%2Fsecrets%2Fs1",
			"/api/v1/namespaces/team/configmaps/%2e%2e",
			"/api/v1/namespaces/..%2Fother/configmaps",
		} {
			for _, id := range []identity{alice, node} {
				code, data := id.do(t, srv.URL, "GET", p, nil)
				if code < 400 || code >= 500 || bytes.Contains(data, []byte("hunter2")) || bytes.Contains(data, []byte("aHVudGVyMi")) {
					t.Errorf("%s GET %s = %d %.200s; want a 4xx without the secret", id.name, p, code, data)
				}
			}
		}
	})
	t.Run("header injection", func(t *testing.T) {
		// Go refuses to send a header value with a line break, so send one
		// by hand: the server must not read a second header out of it.
		tc := ids["alice"].hc.Transport.(*http.Transport).TLSClientConfig
		conn, err := tls.Dial("tcp", strings.TrimPrefix(srv.URL, "https://"), tc)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /api/v1/namespaces/other/secrets HTTP/1.1\r\nHost: x\r\nImpersonate-User: alice\n Impersonate-Group: system:masters\r\nConnection: close\r\n\r\n")
		reply, _ := io.ReadAll(conn)
		if bytes.HasPrefix(reply, []byte("HTTP/1.1 200")) || bytes.Contains(reply, []byte("hunter2")) {
			t.Errorf("folded impersonation header: %.300s", reply)
		}
		// Several bearer tokens in one header are not a token.
		code, _ := ids["anonymous"].do(t, srv.URL, "GET", "/api/v1/namespaces/team/pods", nil, "Authorization", "Bearer "+apiservertest.AdminToken+", Bearer x")
		if code != 401 {
			t.Errorf("two tokens in one header: %d, want 401", code)
		}
	})
	t.Run("oversized token", func(t *testing.T) {
		code, data := ids["anonymous"].do(t, srv.URL, "GET", "/api/v1/namespaces/team/pods", nil, "Authorization", "Bearer "+strings.Repeat("x", 20<<10))
		if code != 401 || !bytes.Contains(data, []byte("longer than")) {
			t.Errorf("20 KiB token: %d %s", code, data)
		}
	})
	t.Run("certificate from another CA", func(t *testing.T) {
		other, err := pki.Ensure(filepath.Join(t.TempDir(), "tls"), nil)
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM, err := other.IssueClientCert("mallory", []string{"system:masters"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		cfg := rest.AnonymousClientConfig(srv.Config)
		cfg.CertData, cfg.KeyData = certPEM, keyPEM
		resp, err := httpsClient(t, cfg).Get(srv.URL + "/api/v1/namespaces/other/secrets")
		if err != nil {
			t.Fatalf("foreign certificate: %v; want the handshake to succeed and a 401", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 401 || !bytes.Contains(body, []byte("certificate signed by unknown authority")) {
			t.Errorf("foreign certificate: %d %s, want 401 naming the unknown authority", resp.StatusCode, body)
		}
	})
	t.Run("expired certificate", func(t *testing.T) {
		// Valid for a second (the CA backdates by an hour of skew grace, so
		// wait past the end).
		certPEM, keyPEM, err := srv.Bundle.IssueClientCert("late", nil, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
		cfg := rest.AnonymousClientConfig(srv.Config)
		cfg.CertData, cfg.KeyData = certPEM, keyPEM
		resp, err := httpsClient(t, cfg).Get(srv.URL + "/api/v1/namespaces/team/pods")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 401 || !bytes.Contains(body, []byte("expired")) {
			t.Errorf("expired certificate: %d %s, want 401 saying it expired", resp.StatusCode, body)
		}
	})
	t.Run("token of a deleted service account", func(t *testing.T) {
		admin := clientsetFor(t, srv.Config)
		if err := admin.CoreV1().ServiceAccounts("team").Delete(context.Background(), "robot", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		code, data := ids["robot"].do(t, srv.URL, "GET", "/api/v1/namespaces/team/pods", nil)
		if code != 401 || !bytes.Contains(data, []byte("no longer exists")) {
			t.Errorf("deleted service account's token: %d %s", code, data)
		}
	})
	t.Run("a node cannot read another node's pod secrets, even after the pod moves away", func(t *testing.T) {
		if code, _ := node.do(t, srv.URL, "GET", "/api/v1/namespaces/other/secrets/s2", nil); code != 403 {
			t.Errorf("n1 reading n2's pod secret: %d", code)
		}
		admin := clientsetFor(t, srv.Config)
		if err := admin.CoreV1().Pods("team").Delete(context.Background(), "p1", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			code, data := node.do(t, srv.URL, "GET", "/api/v1/namespaces/team/secrets/s1", nil)
			if code == 403 {
				if !bytes.Contains(data, []byte("no relationship found between node 'n1' and this object")) {
					t.Errorf("403 without the node authorizer's reason: %s", data)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("n1 still reads s1 after its pod is gone: %d", code)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
