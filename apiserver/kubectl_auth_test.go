package apiserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

// kubectlAt returns the path of kubectl 1.<minor>, skipping outside CI
// when it is missing.
func kubectlAt(t *testing.T, minor int) string {
	t.Helper()
	path := "/usr/lib/google-cloud-sdk/bin/kubectl.1." + itoa(minor)
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (required in CI)", path)
		}
		t.Skipf("%s is not on this machine", path)
	}
	return path
}

func itoa(n int) string { return strconv.Itoa(n) }

// userKubeconfig writes a kubeconfig for a user with a client certificate
// from the test cluster's CA.
func userKubeconfig(t *testing.T, srv *apiservertest.Running, user string, groups ...string) string {
	t.Helper()
	cfg := srv.UserConfig(t, user, groups...)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["skiff"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: srv.Bundle.CAPEM}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["skiff"] = &clientcmdapi.Context{Cluster: "skiff", AuthInfo: user}
	kc.CurrentContext = "skiff"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// tokenKubeconfig writes a kubeconfig that authenticates with a bearer token.
func tokenKubeconfig(t *testing.T, srv *apiservertest.Running, token string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["skiff"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: srv.Bundle.CAPEM}
	kc.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["skiff"] = &clientcmdapi.Context{Cluster: "skiff", AuthInfo: "token"}
	kc.CurrentContext = "skiff"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// runKubectl runs kubectl and returns its combined output and whether it
// exited 0 (can-i exits 1 for "no").
func runKubectl(t *testing.T, kubectl, kubeconfig string, args ...string) (string, bool) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig=" + kubeconfig, "--request-timeout=20s"}, args...)...)
	cmd.Env = []string{"HOME=" + home}
	out, err := cmd.CombinedOutput()
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		t.Fatalf("kubectl %v: %v", args, err)
	}
	return string(out), err == nil
}

// TestKubectlAuth drives the real kubectl's auth commands: can-i (with
// --list and --as), whoami, and create token, on the oldest and newest
// kubectl on this machine.
func TestKubectlAuth(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ServiceAccounts("dev").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings("dev").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	aliceKC := userKubeconfig(t, srv, "alice", "developers")
	alice := clientsetFor(t, srv.UserConfig(t, "alice"))
	waitAllowed(t, "alice's binding takes effect", func() error {
		_, err := alice.CoreV1().Pods("dev").List(ctx, metav1.ListOptions{})
		return err
	})

	for _, minor := range []int{27, 33} {
		kubectl := kubectlAt(t, minor)
		t.Run("kubectl 1."+itoa(minor), func(t *testing.T) {
			can := func(kc string, want bool, args ...string) {
				t.Helper()
				out, ok := runKubectl(t, kubectl, kc, append([]string{"auth", "can-i"}, args...)...)
				if ok != want || strings.TrimSpace(out) != map[bool]string{true: "yes", false: "no"}[want] {
					t.Errorf("can-i %v = %q (exit ok %v), want %v", args, strings.TrimSpace(out), ok, want)
				}
			}
			can(aliceKC, true, "list", "pods", "-n", "dev")
			can(aliceKC, false, "list", "pods", "-n", "default")
			can(aliceKC, false, "create", "deployments", "-n", "dev")
			can(aliceKC, false, "get", "secrets", "-n", "dev")
			can(srv.Kubeconfig, true, "create", "deployments", "-n", "dev")
			can(srv.Kubeconfig, true, "list", "pods", "-n", "dev", "--as", "alice")
			can(srv.Kubeconfig, false, "list", "pods", "-n", "default", "--as", "alice")
			can(srv.Kubeconfig, true, "list", "pods", "-n", "dev", "--as", "system:serviceaccount:dev:robot", "--as-group", "system:masters")

			out, ok := runKubectl(t, kubectl, aliceKC, "auth", "can-i", "--list", "-n", "dev")
			if !ok || !strings.Contains(out, "pods") || !strings.Contains(out, "selfsubjectaccessreviews.authorization.k8s.io") {
				t.Errorf("can-i --list:\n%s", out)
			}
			// alice may not impersonate. (kubectl's discovery reads the 403
			// without its Status, so only the code shows here; the message is
			// checked with client-go in TestViewInOneNamespace.)
			out, ok = runKubectl(t, kubectl, aliceKC, "get", "pods", "-n", "dev", "--as", "bob")
			if ok || !strings.Contains(out, "Forbidden") {
				t.Errorf("alice --as bob:\n%s", out)
			}
			out, ok = runKubectl(t, kubectl, aliceKC, "get", "pods", "-n", "default")
			if ok || !strings.Contains(out, `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`) {
				t.Errorf("forbidden get:\n%s", out)
			}

			out, ok = runKubectl(t, kubectl, aliceKC, "auth", "whoami")
			if !ok || !strings.Contains(out, "alice") || !strings.Contains(out, "developers") {
				t.Errorf("whoami:\n%s", out)
			}

			out, ok = runKubectl(t, kubectl, srv.Kubeconfig, "create", "token", "robot", "-n", "dev", "--duration=15m")
			tok := strings.TrimSpace(out)
			if !ok || strings.Count(tok, ".") != 2 {
				t.Fatalf("create token:\n%s", out)
			}
			out, ok = runKubectl(t, kubectl, tokenKubeconfig(t, srv, tok), "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
			if !ok || strings.TrimSpace(out) != "system:serviceaccount:dev:robot" {
				t.Errorf("whoami with the created token:\n%s", out)
			}
			if minor >= 31 {
				kubectlNodeBoundToken(t, kubectl, srv, admin)
			}
		})
	}
}

// kubectlNodeBoundToken: kubectl 1.31 and later binds a token to a Node
// (--bound-object-kind Node); the token carries the node and ends with it.
func kubectlNodeBoundToken(t *testing.T, kubectl string, srv *apiservertest.Running, admin kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "token-node"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, ok := runKubectl(t, kubectl, srv.Kubeconfig, "create", "token", "robot", "-n", "dev",
		"--bound-object-kind", "Node", "--bound-object-name", node.Name, "--bound-object-uid", "not-its-uid")
	if ok || !strings.Contains(out, `Operation cannot be fulfilled on nodes "token-node"`) || !strings.Contains(out, "does not match the UID in record") {
		t.Errorf("create token bound to a node with another uid:\n%s", out)
	}
	out, ok = runKubectl(t, kubectl, srv.Kubeconfig, "create", "token", "robot", "-n", "dev",
		"--bound-object-kind", "Node", "--bound-object-name", node.Name, "--bound-object-uid", string(node.UID))
	tok := strings.TrimSpace(out)
	if !ok || strings.Count(tok, ".") != 2 {
		t.Fatalf("create token bound to a node:\n%s", out)
	}
	kc := tokenKubeconfig(t, srv, tok)
	out, ok = runKubectl(t, kubectl, kc, "auth", "whoami", "-o", `jsonpath={.status.userInfo.extra.authentication\.kubernetes\.io/node-name}`)
	if !ok || strings.TrimSpace(out) != `["token-node"]` {
		t.Errorf("whoami's node-name with a node-bound token:\n%s", out)
	}
	if err := admin.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, ok = runKubectl(t, kubectl, kc, "auth", "whoami")
	if ok || !strings.Contains(out, "Unauthorized") {
		t.Errorf("whoami with the token of a deleted node:\n%s", out)
	}
}
