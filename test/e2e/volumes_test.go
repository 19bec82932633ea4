package e2e

import (
	"strings"
	"testing"
	"time"
)

const dbStatefulSet = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: db
        image: example.com/db:1
        volumeMounts: [{name: data, mountPath: /var/lib/db}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`

// Persistent volumes on hollow nodes with the real kubectl: a StatefulSet's
// claim templates become claims, the scheduler picks each pod's node and
// marks its claim, the local-path provisioner makes a volume pinned to that
// node and the binder binds the pair; a claim deleted after its pod takes
// its volume with it (reclaim policy Delete); a pod naming a missing claim
// is unschedulable with Kubernetes' message.
func TestPersistentVolumesOnHollowNodes(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "2", "--node-name", "vol")
	eventually(t, k, []string{"vol-0", "vol-1"}, "get", "nodes")

	contains(t, "api-resources", k.ok("api-resources"), "persistentvolumeclaims", "pvc", "PersistentVolumeClaim",
		"persistentvolumes", "pv", "PersistentVolume", "storageclasses", "sc", "storage.k8s.io/v1", "StorageClass")
	// Default policy: edit grants claims in its namespace; volumes and
	// classes are cluster-level, as in Kubernetes.
	k.ok("create", "rolebinding", "alice-edit", "--clusterrole=edit", "--user=alice")
	for check, want := range map[string]string{
		"create persistentvolumeclaims": "yes", "delete persistentvolumeclaims": "yes", "get persistentvolumeclaims/status": "yes",
		"list persistentvolumes": "no", "create persistentvolumes": "no", "list storageclasses.storage.k8s.io": "no",
	} {
		out, _ := k.run("", append(append([]string{"auth", "can-i"}, strings.Fields(check)...), "--as=alice")...)
		// The answer is the last line (a warning about scope may come first).
		if f := strings.Fields(out); len(f) == 0 || f[len(f)-1] != want {
			t.Errorf("alice (edit) can-i %s: %q, want %s", check, out, want)
		}
	}

	contains(t, "default storage class", k.ok("get", "storageclass"),
		"NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "local-path (default)", "skiff.io/local-path", "Delete", "WaitForFirstConsumer")

	k.okIn(dbStatefulSet, "apply", "-f", "-")
	k.ok("rollout", "status", "sts/db", "--timeout=90s")
	for _, i := range []string{"0", "1"} {
		pod, claim := "db-"+i, "data-db-"+i
		node := k.ok("get", "pod", pod, "-o", "jsonpath={.spec.nodeName}")
		if got := k.ok("get", "pod", pod, "-o", "jsonpath={.spec.volumes[0].persistentVolumeClaim.claimName}"); got != claim {
			t.Fatalf("pod %s uses claim %q, want %s", pod, got, claim)
		}
		eventually(t, k, []string{"Bound"}, "get", "pvc", claim, "-o", "jsonpath={.status.phase}")
		pv := k.ok("get", "pvc", claim, "-o", "jsonpath={.spec.volumeName}")
		if got := k.ok("get", "pvc", claim, "-o", `jsonpath={.metadata.annotations.volume\.kubernetes\.io/selected-node}`); got != node {
			t.Errorf("claim %s selected node %q, pod runs on %q", claim, got, node)
		}
		affinity := k.ok("get", "pv", pv, "-o", "jsonpath={.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}")
		if affinity != node {
			t.Errorf("volume %s is pinned to %q, its pod runs on %q", pv, affinity, node)
		}
		contains(t, "volume "+pv, k.ok("get", "pv", pv, "-o", "jsonpath={.status.phase} {.spec.claimRef.name} {.spec.local.path} {.spec.storageClassName}"),
			"Bound "+claim+" /var/lib/skiff/agent/storage/"+pv+" local-path")
	}

	out := k.ok("get", "pvc,pv,storageclass")
	t.Logf("kubectl get pvc,pv,storageclass:\n%s", out)
	contains(t, "kubectl get pvc,pv,storageclass", out,
		"STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "RECLAIM POLICY", "CLAIM",
		"persistentvolumeclaim/data-db-0", "persistentvolumeclaim/data-db-1", "Bound", "1Gi", "RWO", "local-path",
		"default/data-db-0", "storageclass.storage.k8s.io/local-path (default)")
	contains(t, "claim events", k.ok("describe", "pvc", "data-db-0"), "ProvisioningSucceeded", "Successfully provisioned volume")

	// Retain (the default): scaling down deletes the pod but keeps its claim.
	pv1 := k.ok("get", "pvc", "data-db-1", "-o", "jsonpath={.spec.volumeName}")
	k.ok("scale", "sts/db", "--replicas=1")
	waitCount(t, "pods after scale-down", 1, func() int { return podCountSel(k, "app=db") })
	if phase := k.ok("get", "pvc", "data-db-1", "-o", "jsonpath={.status.phase}"); phase != "Bound" {
		t.Fatalf("claim of the removed pod: %q, want it kept Bound", phase)
	}
	// Deleting the claim releases the volume, and Delete reclaims it.
	k.ok("delete", "pvc", "data-db-1")
	waitCount(t, "volume of the deleted claim", 0, func() int {
		out, _ := k.run("", "get", "pv", "-o", "name")
		return strings.Count(out, "persistentvolume/"+pv1)
	})
	// Scaling up again makes a fresh claim and volume for ordinal 1.
	k.ok("scale", "sts/db", "--replicas=2")
	k.ok("rollout", "status", "sts/db", "--timeout=90s")
	eventually(t, k, []string{"Bound"}, "get", "pvc", "data-db-1", "-o", "jsonpath={.status.phase}")
	if pv := k.ok("get", "pvc", "data-db-1", "-o", "jsonpath={.spec.volumeName}"); pv == pv1 || pv == "" {
		t.Errorf("recreated claim bound to %q (old volume %s)", pv, pv1)
	}

	// A retention policy set on a running set reaches its existing claims:
	// with whenDeleted Delete they belong to the set, and with whenScaled
	// Delete a scaled-down pod's claim passes to the pod and goes with it.
	k.ok("patch", "sts/db", "-p", `{"spec":{"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Delete","whenScaled":"Delete"}}}`)
	for _, claim := range []string{"data-db-0", "data-db-1"} {
		eventually(t, k, []string{"StatefulSet/db"}, "get", "pvc", claim, "-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}")
	}
	k.ok("scale", "sts/db", "--replicas=1")
	waitCount(t, "claim of the scaled-down pod under whenScaled Delete", 0, func() int {
		out, _ := k.run("", "get", "pvc", "-o", "name")
		return strings.Count(out, "persistentvolumeclaim/data-db-1")
	})
	if out := k.ok("get", "pvc", "data-db-0", "-o", "jsonpath={.metadata.ownerReferences[*].kind}"); out != "StatefulSet" {
		t.Errorf("the kept pod's claim is owned by %q, want the StatefulSet alone", out)
	}

	// A pod naming a claim that does not exist cannot be scheduled.
	k.okIn(`apiVersion: v1
kind: Pod
metadata: {name: orphan, namespace: default}
spec:
  containers: [{name: c, image: example.com/db:1, volumeMounts: [{name: d, mountPath: /d}]}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: nope}}]
`, "apply", "-f", "-")
	eventually(t, k, []string{`persistentvolumeclaim "nope" not found`}, "get", "pod", "orphan",
		"-o", `jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}`)
	// Creating the claim wakes the pod: it is scheduled and its claim bound.
	k.okIn(`apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: nope, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 100Mi}}
`, "apply", "-f", "-")
	eventually(t, k, []string{"Running"}, "get", "pod", "orphan", "-o", "jsonpath={.status.phase}")
	eventually(t, k, []string{"Bound"}, "get", "pvc", "nope", "-o", "jsonpath={.status.phase}")

	// A claim in use is protected: deleting it waits for its pod.
	pvNope := k.ok("get", "pvc", "nope", "-o", "jsonpath={.spec.volumeName}")
	k.ok("delete", "pvc", "nope", "--wait=false")
	time.Sleep(2 * time.Second)
	if out := k.ok("get", "pvc", "nope", "-o", "jsonpath={.status.phase} {.metadata.finalizers}"); !strings.Contains(out, "kubernetes.io/pvc-protection") {
		t.Fatalf("a claim in use was deleted (or lost its protection): %q", out)
	}
	contains(t, "terminating claim", k.ok("get", "pvc", "nope"), "Terminating")
	k.ok("delete", "pod", "orphan")
	waitCount(t, "claim after its pod is gone", 0, func() int {
		out, _ := k.run("", "get", "pvc", "-o", "name")
		return strings.Count(out, "persistentvolumeclaim/nope")
	})
	waitCount(t, "its volume", 0, func() int {
		out, _ := k.run("", "get", "pv", "-o", "name")
		return strings.Count(out, "persistentvolume/"+pvNope)
	})
}
