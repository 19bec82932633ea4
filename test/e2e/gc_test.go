package e2e

import (
	"strings"
	"testing"
	"time"
)

// podCount counts the pods of app=name.
func podCount(k *kubectl, name string) int {
	out, err := k.run("", "get", "pods", "-l", "app="+name, "-o", "name")
	if err != nil {
		return -1
	}
	return len(strings.Fields(out))
}

func rsCount(k *kubectl, name string) int {
	out, err := k.run("", "get", "rs", "-l", "app="+name, "-o", "name")
	if err != nil {
		return -1
	}
	return len(strings.Fields(out))
}

func waitCount(t *testing.T, what string, want int, count func() int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := count()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: want %d, have %d", what, want, got)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Deleting a Deployment with the real kubectl cascades through the garbage
// collector in each propagation mode kubectl offers.
func TestGarbageCollectionCascades(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "2", "--node-name", "hollow")
	eventually(t, k, []string{"hollow-0", "hollow-1"}, "get", "nodes")

	for _, name := range []string{"bg", "orphan", "fg"} {
		k.ok("create", "deployment", name, "--image=example.com/web:1", "--replicas=2")
	}
	for _, name := range []string{"bg", "orphan", "fg"} {
		k.ok("rollout", "status", "deploy/"+name, "--timeout=90s")
	}

	// Background (kubectl's default): the Deployment goes at once, then its ReplicaSet and pods.
	k.ok("delete", "deployment", "bg")
	waitCount(t, "bg replicasets", 0, func() int { return rsCount(k, "bg") })
	waitCount(t, "bg pods", 0, func() int { return podCount(k, "bg") })

	// Orphan: the ReplicaSet and pods stay, without an owner.
	k.ok("delete", "deployment", "orphan", "--cascade=orphan")
	if out, _ := k.run("", "get", "deployment", "orphan"); !strings.Contains(out, "NotFound") {
		t.Fatalf("orphan deployment still there:\n%s", out)
	}
	time.Sleep(3 * time.Second)
	if n := rsCount(k, "orphan"); n != 1 {
		t.Fatalf("orphaned replicasets: want 1, have %d", n)
	}
	if n := podCount(k, "orphan"); n != 2 {
		t.Fatalf("orphaned pods: want 2, have %d", n)
	}
	if refs := k.ok("get", "rs", "-l", "app=orphan", "-o", "jsonpath={.items[*].metadata.ownerReferences}"); strings.TrimSpace(refs) != "" {
		t.Fatalf("orphaned replicaset still has owners: %s", refs)
	}

	// Foreground: kubectl waits until the Deployment is gone, which happens only after its
	// ReplicaSet, which waits for its pods.
	k.ok("delete", "deployment", "fg", "--cascade=foreground", "--timeout=90s")
	if n := rsCount(k, "fg"); n != 0 {
		t.Fatalf("foreground: deployment gone but %d replicasets left", n)
	}
	if n := podCount(k, "fg"); n != 0 {
		t.Fatalf("foreground: deployment gone but %d pods left", n)
	}
	contains(t, "events", k.ok("get", "events", "-A"), "GarbageCollected")
}

// Deleting a namespace removes everything in it, then the namespace.
func TestNamespaceDeletionCascades(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "2", "--node-name", "hollow")
	eventually(t, k, []string{"hollow-0", "hollow-1"}, "get", "nodes")

	k.ok("create", "namespace", "doomed")
	k.ok("-n", "doomed", "create", "deployment", "web", "--image=example.com/web:1", "--replicas=3")
	k.ok("-n", "doomed", "create", "configmap", "settings", "--from-literal=a=b")
	k.ok("-n", "doomed", "create", "ingress", "web", "--rule=shop.example.com/=web:80")
	k.okIn("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: deny, namespace: doomed}\nspec: {podSelector: {}}\n", "apply", "-f", "-")
	k.ok("-n", "doomed", "rollout", "status", "deploy/web", "--timeout=90s")

	k.ok("delete", "namespace", "doomed", "--timeout=90s")
	if out, _ := k.run("", "get", "namespace", "doomed"); !strings.Contains(out, "NotFound") {
		t.Fatalf("namespace still there:\n%s", out)
	}
	for _, res := range []string{"pods", "replicasets", "deployments", "configmaps", "ingresses", "networkpolicies"} {
		if out := k.ok("get", res, "-n", "doomed", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Fatalf("%s left in the deleted namespace:\n%s", res, out)
		}
	}
}
