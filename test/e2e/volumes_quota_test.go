package e2e

import (
	"testing"
)

// Storage quota and claim resizing with the real kubectl, no nodes needed:
// a ResourceQuota on requests.storage, persistentvolumeclaims and a
// per-class count refuses claims over it with Kubernetes' message and
// reports usage; a claim's selector binds it only to a volume with matching
// labels; growing a bound claim whose class does not allow expansion is
// refused by PersistentVolumeClaimResize.
func TestPersistentVolumeClaimQuotaSelectorAndResize(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	k.okIn(`apiVersion: v1
kind: ResourceQuota
metadata: {name: storage, namespace: default}
spec:
  hard:
    requests.storage: 3Gi
    persistentvolumeclaims: "5"
    local-path.storageclass.storage.k8s.io/persistentvolumeclaims: "1"
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: plain}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/skiff-e2e-plain}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: fast, labels: {tier: fast}}
spec:
  capacity: {storage: 2Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/skiff-e2e-fast}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: picky, namespace: default}
spec:
  storageClassName: ""
  selector: {matchExpressions: [{key: tier, operator: In, values: [fast]}]}
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`, "apply", "-f", "-")
	// The selector passes over the smaller volume for the labelled one.
	eventually(t, k, []string{"Bound fast"}, "get", "pvc", "picky", "-o", "jsonpath={.status.phase} {.spec.volumeName}")
	eventually(t, k, []string{`"requests.storage":"1Gi"`, `"persistentvolumeclaims":"1"`, `"local-path.storageclass.storage.k8s.io/persistentvolumeclaims":"0"`},
		"get", "quota", "storage", "-o", "jsonpath={.status.used}")

	claim := func(name, class, size string) string {
		return `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ` + name + `, namespace: default}
spec:
  storageClassName: ` + class + `
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: ` + size + `}}
`
	}
	out := k.fails(claim("big", "local-path", "3Gi"), "apply", "-f", "-")
	contains(t, "a claim over the storage quota", out, `persistentvolumeclaims "big" is forbidden: exceeded quota: storage, requested: requests.storage=3Gi, used: requests.storage=1Gi, limited: requests.storage=3Gi`)
	k.okIn(claim("first", "local-path", "1Gi"), "apply", "-f", "-")
	out = k.fails(claim("second", "local-path", "100Mi"), "apply", "-f", "-")
	contains(t, "a second claim of the class", out, `exceeded quota: storage, requested: local-path.storageclass.storage.k8s.io/persistentvolumeclaims=1, used: local-path.storageclass.storage.k8s.io/persistentvolumeclaims=1, limited: local-path.storageclass.storage.k8s.io/persistentvolumeclaims=1`)
	eventually(t, k, []string{`"requests.storage":"2Gi"`, `"persistentvolumeclaims":"2"`, `"local-path.storageclass.storage.k8s.io/persistentvolumeclaims":"1"`},
		"get", "quota", "storage", "-o", "jsonpath={.status.used}")
	contains(t, "kubectl describe quota", k.ok("describe", "quota", "storage"), "requests.storage", "2Gi", "3Gi")

	// The bound claim's class ("") allows no expansion.
	out = k.fails("", "patch", "pvc", "picky", "-p", `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`)
	contains(t, "growing a claim", out, `persistentvolumeclaims "picky" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`)
}
