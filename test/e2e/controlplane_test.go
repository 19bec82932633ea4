package e2e

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// A Deployment on hollow nodes, driven by the real kubectl: the controllers
// create the ReplicaSet and pods, the scheduler binds them, node IPAM gives
// the nodes pod CIDRs, and rollout status/history/undo and scale behave as
// on Kubernetes.
func TestDeploymentLifecycleOnHollowNodes(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "3", "--node-name", "hollow")
	eventually(t, k, []string{"hollow-0", "hollow-1", "hollow-2"}, "get", "nodes")

	k.ok("create", "deployment", "web", "--image=example.com/web:1", "--replicas=4")
	k.ok("rollout", "status", "deploy/web", "--timeout=90s")
	out := k.ok("get", "pods", "-l", "app=web", "-o", "wide")
	if n := strings.Count(out, "Running"); n != 4 {
		t.Fatalf("want 4 running pods, got %d:\n%s", n, out)
	}
	contains(t, "pod IPs from the nodes' pod CIDRs", out, "10.42.")
	// Every node got a pod CIDR from the node IPAM controller.
	cidrs := k.ok("get", "nodes", "-o", "jsonpath={.items[*].spec.podCIDR}")
	if len(strings.Fields(cidrs)) != 3 {
		t.Fatalf("node pod CIDRs: %q", cidrs)
	}

	k.ok("set", "image", "deploy/web", "web=example.com/web:2")
	k.ok("rollout", "status", "deploy/web", "--timeout=90s")
	contains(t, "history", k.ok("rollout", "history", "deploy/web"), "1 ", "2 ")
	k.ok("rollout", "undo", "deploy/web")
	k.ok("rollout", "status", "deploy/web", "--timeout=90s")
	contains(t, "image after undo", k.ok("get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"), "example.com/web:1")

	k.ok("scale", "deploy/web", "--replicas=2")
	eventually(t, k, []string{"2/2"}, "get", "deploy", "web")
	contains(t, "events", k.ok("get", "events"), "Scheduled", "ScalingReplicaSet")
	// The scheduler writes events.k8s.io Events; describe lists core ones:
	// the same objects, converted by the API server.
	pod := k.ok("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}")
	eventually(t, k, []string{"default-scheduler", "Successfully assigned default/" + pod + " to hollow-"}, "describe", "pod", pod)

	// Each controller wrote as its own service account, which the store's
	// history records as the actor of every change.
	db, err := sql.Open("sqlite", filepath.Join(s.dataDir, "db", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	actors := func(key string) string {
		rows, err := db.Query(`SELECT DISTINCT actor FROM history WHERE op = 'create' AND key LIKE ? ORDER BY actor`, key)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				t.Fatal(err)
			}
			out = append(out, a)
		}
		return strings.Join(out, ",")
	}
	for key, want := range map[string]string{
		"/registry/pods/default/web-%":                       "system:serviceaccount:kube-system:replicaset-controller",
		"/registry/apps/replicasets/default/web-%":           "system:serviceaccount:kube-system:deployment-controller",
		"/registry/serviceaccounts/kube-system/%-controller": "system:kube-controller-manager",
	} {
		if got := actors(key); got != want {
			t.Errorf("created %s by %q, want %q", key, got, want)
		}
	}
	contains(t, "controllers' service accounts", k.ok("get", "serviceaccounts", "-n", "kube-system"),
		"replicaset-controller", "deployment-controller", "node-controller")
	// The answer is the last word (kubectl may print a warning first).
	if out, _ := k.run("", "auth", "can-i", "delete", "nodes", "--as=system:serviceaccount:kube-system:replicaset-controller"); !strings.HasSuffix(" "+strings.Join(strings.Fields(out), " "), " no") {
		t.Errorf("the replicaset controller may delete nodes: %q", out)
	}
}
