package e2e

import (
	"strings"
	"testing"
)

// jobManifest is a Job whose hollow pods exit with code after 1s (the
// hollow runtime's scripted exit annotations).
func jobManifest(name, extraSpec, code string) string {
	return `apiVersion: batch/v1
kind: Job
metadata: {name: ` + name + `, namespace: default}
spec:
` + extraSpec + `
  template:
    metadata:
      annotations: {hollow.skiff.dev/exit-after: 1s, hollow.skiff.dev/exit-code: "` + code + `"}
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers: [{name: work, image: example.com/work:1}]
`
}

// Jobs on hollow nodes with the real kubectl: one that fails retries up to
// its backoff limit (with the exponential back-off between attempts) and
// fails with BackoffLimitExceeded; an Indexed one completes every index; a
// finished Job with ttlSecondsAfterFinished is deleted.
func TestJobsOnHollowNodes(t *testing.T) {
	s := startServer(t)
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "2", "--node-name", "hollow")
	eventually(t, k, []string{"hollow-0", "hollow-1"}, "get", "nodes")

	k.okIn(jobManifest("fails", "  backoffLimit: 2", "1"), "apply", "-f", "-")
	k.okIn(jobManifest("indexed", "  completions: 3\n  parallelism: 2\n  completionMode: Indexed", "0"), "apply", "-f", "-")
	k.okIn(jobManifest("shortlived", "  ttlSecondsAfterFinished: 2", "0"), "apply", "-f", "-")

	k.ok("wait", "--for=condition=complete", "job/indexed", "--timeout=90s")
	contains(t, "indexed job", k.ok("get", "job", "indexed", "-o", "jsonpath={.status.succeeded} {.status.completedIndexes}"), "3 0-2")
	idx := k.ok("get", "pods", "-l", "batch.kubernetes.io/job-name=indexed", "-o", `jsonpath={range .items[*]}{.metadata.annotations.batch\.kubernetes\.io/job-completion-index}{" "}{end}`)
	for _, i := range []string{"0", "1", "2"} {
		if !strings.Contains(" "+idx, " "+i+" ") {
			t.Errorf("no pod with completion index %s: %q", i, idx)
		}
	}

	k.ok("wait", "--for=delete", "job/shortlived", "--timeout=60s")

	// Per-index backoff limit 0: both indexes fail once and the Job fails with FailedIndexes.
	k.okIn(jobManifest("perindex", "  completions: 2\n  parallelism: 2\n  completionMode: Indexed\n  backoffLimitPerIndex: 0", "1"), "apply", "-f", "-")
	k.ok("wait", "--for=condition=failed", "job/perindex", "--timeout=60s")
	if out := k.ok("get", "job", "perindex", "-o", "jsonpath={.status.failedIndexes} {.status.conditions[?(@.type=='Failed')].reason}"); strings.TrimSpace(out) != "0,1 FailedIndexes" {
		t.Errorf("per-index job status: %q", out)
	}

	// 3 attempts (1 + backoffLimit 2) with 10s and 20s back-off in between.
	k.ok("wait", "--for=condition=failed", "job/fails", "--timeout=120s")
	// status.active is omitted when 0, as in Kubernetes.
	if out := k.ok("get", "job", "fails", "-o", "jsonpath={.status.failed} {.status.conditions[?(@.type=='Failed')].reason} active={.status.active}"); strings.TrimSpace(out) != "3 BackoffLimitExceeded active=" {
		t.Errorf("failed job status: %q", out)
	}
	if n := strings.Count(k.ok("get", "pods", "-l", "batch.kubernetes.io/job-name=fails", "-o", "name"), "pod/"); n != 3 {
		t.Errorf("want 3 attempts, found %d pods", n)
	}
	contains(t, "describe job", k.ok("describe", "job", "fails"), "BackoffLimitExceeded", "SuccessfulCreate")

	// Deleting a running Job takes its pods along: the garbage collector deletes them and the Job
	// controller releases their tracking finalizers once the Job is gone.
	k.okIn(strings.Replace(jobManifest("long", "  parallelism: 2\n  completions: 4", "0"), "exit-after: 1s", "exit-after: 1h", 1), "apply", "-f", "-")
	eventually(t, k, []string{"2"}, "get", "job", "long", "-o", "jsonpath={.status.active}")
	k.ok("delete", "job", "long", "--timeout=60s")
	waitCount(t, "pods of the deleted job", 0, func() int { return podCountSel(k, "batch.kubernetes.io/job-name=long") })

	// An evicted pod carries DisruptionTarget, so a podFailurePolicy that ignores disruptions
	// does not spend the Job's backoffLimit of 0 on it: a replacement starts instead.
	tolerant := strings.Replace(jobManifest("tolerant", `  backoffLimit: 0
  podFailurePolicy:
    rules:
    - action: Ignore
      onPodConditions: [{type: DisruptionTarget}]`, "0"), "exit-after: 1s", "exit-after: 1h", 1)
	k.okIn(tolerant, "apply", "-f", "-")
	eventually(t, k, []string{"1"}, "get", "job", "tolerant", "-o", "jsonpath={.status.active}")
	pod := k.ok("get", "pods", "-l", "batch.kubernetes.io/job-name=tolerant", "-o", "jsonpath={.items[0].metadata.name}")
	k.okIn(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"`+pod+`","namespace":"default"}}`,
		"create", "--raw", "/api/v1/namespaces/default/pods/"+pod+"/eviction", "-f", "-")
	// The replacement starts once the evicted pod is Failed.
	waitCount(t, "pods of the tolerant job other than the evicted one", 1, func() int {
		n := 0
		for _, name := range strings.Fields(k.ok("get", "pods", "-l", "batch.kubernetes.io/job-name=tolerant", "-o", "name")) {
			if name != "pod/"+pod {
				n++
			}
		}
		return n
	})
	if out := k.ok("get", "job", "tolerant", "-o", "jsonpath=failed={.status.failed} conditions={.status.conditions[*].type}"); strings.TrimSpace(out) != "failed= conditions=" {
		t.Errorf("the job after an ignored eviction: %q, want no failure counted and no condition", out)
	}
	k.ok("delete", "job", "tolerant", "--timeout=60s")
}
