package e2e

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/skiffkube/skiff/apiserver/pki"
)

// nodeKubeconfig writes a kubeconfig for system:node:<name>, with a client
// certificate from the server's own CA (what node join will hand out).
func nodeKubeconfig(t *testing.T, s *server, name string) string {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(s.dataDir, "tls", pki.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := pki.Ensure(filepath.Join(s.dataDir, "tls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := bundle.IssueClientCert("system:node:"+name, []string{"system:nodes"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["skiff"] = &clientcmdapi.Cluster{Server: s.url, CertificateAuthorityData: caPEM}
	kc.AuthInfos["node"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	kc.Contexts["skiff"] = &clientcmdapi.Context{Cluster: "skiff", AuthInfo: "node"}
	kc.CurrentContext = "skiff"
	path := filepath.Join(t.TempDir(), "node.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// A node agent running with its own node credential (not the admin's)
// registers, heartbeats, runs and finalizes its pods under the node
// authorizer, and that credential cannot reach beyond its own objects.
func TestNodeAgentWithItsOwnIdentity(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	nodeKC := nodeKubeconfig(t, s, "solo")
	startHollowNodesWithKubeconfig(t, nodeKC, "--node-name", "solo")
	eventually(t, k, []string{"solo", " Ready "}, "get", "nodes")
	eventually(t, k, []string{"solo"}, "get", "leases", "-n", "kube-node-lease")

	k.ok("create", "secret", "generic", "other", "--from-literal=a=b")
	k.ok("run", "web", "--image=example.com/web:1")
	eventually(t, k, []string{"Running"}, "get", "pod", "web")
	k.ok("delete", "pod", "web", "--wait", "--timeout=60s")

	node := &kubectl{t: t, bin: k.bin, kc: nodeKC, cacheDir: t.TempDir()}
	contains(t, "node reads its own node", node.ok("get", "node", "solo", "-o", "name"), "node/solo")
	contains(t, "node reads an unrelated secret", node.fails("", "get", "secret", "other"),
		`secrets "other" is forbidden: User "system:node:solo" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'solo' and this object`)
	contains(t, "node lists all nodes", node.fails("", "get", "nodes"), "Forbidden")
	contains(t, "node creates a deployment", node.fails("", "create", "deployment", "x", "--image=x"), `deployments.apps is forbidden: User "system:node:solo" cannot create resource "deployments"`)
}

// `skiff agent --server --token` joins once with the agent token, gets
// its own node certificate (key generated on the agent), and runs as
// system:node:<name>; restarted without the token it reuses the
// certificate.
func TestAgentJoinsWithTheToken(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	token := agentToken(t, s)
	ca := filepath.Join(s.dataDir, "tls", pki.CACertFile)
	certDir := t.TempDir()
	run := func(args ...string) {
		var log bytes.Buffer
		cmd := exec.Command(skiffBin, append([]string{"agent", "--runtime", "fake", "--server", s.url, "--certificate-authority", ca,
			"--node-name", "joined", "--cert-dir", certDir}, args...)...)
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("agent log:\n%s", log.String())
			}
		}()
		eventually(t, k, []string{"joined", " Ready "}, "get", "nodes")
		k.ok("run", "p"+strconv.Itoa(len(args)), "--image=example.com/web:1", "--overrides", `{"spec":{"nodeName":"joined"}}`)
		eventually(t, k, []string{"Running"}, "get", "pod", "p"+strconv.Itoa(len(args)))
	}
	run("--token", token)
	certPEM, err := os.ReadFile(filepath.Join(certDir, "node.crt"))
	if err != nil {
		t.Fatalf("no node certificate was stored: %v", err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || cert.Subject.CommonName != "system:node:joined" || strings.Join(cert.Subject.Organization, ",") != "system:nodes" {
		t.Fatalf("stored certificate: %+v %v", cert.Subject, err)
	}
	run() // no token: the stored certificate is enough

	// The agent token itself only joins: kubectl with it is forbidden.
	caPEM, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["skiff"] = &clientcmdapi.Cluster{Server: s.url, CertificateAuthorityData: caPEM}
	kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["skiff"] = &clientcmdapi.Context{Cluster: "skiff", AuthInfo: "agent"}
	kc.CurrentContext = "skiff"
	agentKC := filepath.Join(t.TempDir(), "agent.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, agentKC); err != nil {
		t.Fatal(err)
	}
	asAgentToken := &kubectl{t: t, bin: k.bin, kc: agentKC, cacheDir: t.TempDir()}
	contains(t, "the agent token lists pods", asAgentToken.fails("", "get", "pods", "-A"),
		`User "system:bootstrap:skiff-agent" cannot list resource "pods"`)
	contains(t, "the agent token may join", asAgentToken.ok("auth", "can-i", "post", "/skiff/v1/nodecredentials"), "yes")
}

// The controller manager runs with its own role, not the admin's: deleting a
// namespace (which needs it to list and delete every kind of object in it)
// still completes.
func TestNamespaceDeletionUnderTheControllerManagersRole(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	k.ok("create", "namespace", "doomed")
	k.ok("create", "configmap", "c", "-n", "doomed", "--from-literal=a=b")
	k.ok("create", "deployment", "d", "-n", "doomed", "--image=example.com/x:1")
	k.ok("create", "secret", "generic", "s", "-n", "doomed", "--from-literal=a=b")
	eventually(t, k, []string{"d-"}, "get", "replicasets", "-n", "doomed")
	k.ok("delete", "namespace", "doomed", "--wait", "--timeout=60s")
	out, _ := k.run("", "get", "namespace", "doomed")
	contains(t, "namespace after delete", out, "NotFound")
}
