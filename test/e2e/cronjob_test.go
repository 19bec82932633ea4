package e2e

import (
	"strings"
	"testing"
	"time"
)

const everyMinute = `apiVersion: batch/v1
kind: CronJob
metadata: {name: tick, namespace: default}
spec:
  schedule: "* * * * *"
  timeZone: Europe/Berlin
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      template:
        metadata:
          annotations: {hollow.skiff.dev/exit-after: 1s}
        spec:
          restartPolicy: Never
          containers: [{name: tick, image: example.com/tick:1}]
`

// A CronJob on hollow nodes: within a minute its schedule creates a Job,
// whose pod completes; the CronJob's status follows. The server runs
// without the volume controllers this needs none of, left out by
// --controllers with a skiff name and a kube-controller-manager one, and
// its CronJob controller with the workers --concurrent-cron-job-syncs asks.
func TestCronJobSchedulesJobs(t *testing.T) {
	s := startServer(t, "--controllers", "*,-local-path-provisioner,-persistentvolume-binder", "--concurrent-cron-job-syncs", "2")
	k := newKubectl(t, s, 33)
	startHollowNodes(t, s, "--count", "1", "--node-name", "hollow")
	eventually(t, k, []string{"hollow"}, "get", "nodes")

	k.okIn(everyMinute, "apply", "-f", "-")
	deadline := time.Now().Add(90 * time.Second)
	var job string
	for job == "" {
		out, _ := k.run("", "get", "jobs", "-o", "jsonpath={.items[*].metadata.name}")
		if f := strings.Fields(out); len(f) > 0 {
			job = f[0]
		}
		if time.Now().After(deadline) {
			t.Fatal("no job scheduled within 90s")
		}
		time.Sleep(time.Second)
	}
	if !strings.HasPrefix(job, "tick-") {
		t.Fatalf("job name %q", job)
	}
	k.ok("wait", "--for=condition=complete", "job/"+job, "--timeout=60s")
	eventually(t, k, []string{"T"}, "get", "cronjob", "tick", "-o", "jsonpath={.status.lastSuccessfulTime}")
	contains(t, "cronjob status", k.ok("get", "cronjob", "tick", "-o", "jsonpath={.status.lastScheduleTime}"), "T")
	contains(t, "events", k.ok("describe", "cronjob", "tick"), "SuccessfulCreate", "SawCompletedJob")

	// The controllers run by now (the Job was made); the log lists them.
	started := s.log.String()
	if !strings.Contains(started, "controller manager starting") || !strings.Contains(started, "cronjob-controller") ||
		strings.Contains(started, "local-path-provisioner") || strings.Contains(started, "persistentvolume-binder-controller") {
		t.Errorf("want the server's controllers without local-path-provisioner and persistentvolume-binder-controller; its log:\n%s", started)
	}
	if !strings.Contains(started, "controller=cronjob-controller workers=2") || !strings.Contains(started, "controller=job-controller workers=5") {
		t.Errorf("want the CronJob controller with 2 workers and the others with 5; the log:\n%s", started)
	}
}
