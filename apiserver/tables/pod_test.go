package tables

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

// podBuilder makes hand-made pods for the status cases.
type podBuilder struct{ pod *corev1.Pod }

func makePod(name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(10 * time.Minute)}}}
}

func (b *podBuilder) phase(p corev1.PodPhase) *podBuilder { b.pod.Status.Phase = p; return b }
func (b *podBuilder) containers(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{Name: n, Image: n + ":1"})
	}
	return b
}
func (b *podBuilder) inits(names ...string) *podBuilder {
	for _, n := range names {
		b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: n})
	}
	return b
}
func (b *podBuilder) sidecar(name string) *podBuilder {
	always := corev1.ContainerRestartPolicyAlways
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{Name: name, RestartPolicy: &always})
	return b
}
func (b *podBuilder) status(s corev1.ContainerStatus) *podBuilder {
	b.pod.Status.ContainerStatuses = append(b.pod.Status.ContainerStatuses, s)
	return b
}
func (b *podBuilder) initStatus(s corev1.ContainerStatus) *podBuilder {
	b.pod.Status.InitContainerStatuses = append(b.pod.Status.InitContainerStatuses, s)
	return b
}
func (b *podBuilder) condition(t corev1.PodConditionType, s corev1.ConditionStatus, reason string) *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason})
	return b
}
func (b *podBuilder) deleting() *podBuilder {
	t := ago(time.Second)
	b.pod.DeletionTimestamp = &t
	return b
}

func running(name string, ready bool, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, RestartCount: restarts, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}
func waiting(name, reason string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, RestartCount: restarts, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}
func terminated(name, reason string, code, signal int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, Signal: signal}}}
}
func withLastTermination(s corev1.ContainerStatus, finished time.Duration) corev1.ContainerStatus {
	s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(finished), ExitCode: 1}
	return s
}
func started(s corev1.ContainerStatus) corev1.ContainerStatus {
	yes := true
	s.Started = &yes
	return s
}

func TestPodStatusColumns(t *testing.T) {
	cases := []struct {
		name                    string
		pod                     *corev1.Pod
		ready, status, restarts string
	}{
		{
			name:  "pending pod without statuses shows its phase",
			pod:   makePod("p").containers("a").phase(corev1.PodPending).pod,
			ready: "0/1", status: "Pending", restarts: "0",
		},
		{
			name: "running and ready",
			pod: makePod("p").containers("a", "b").phase(corev1.PodRunning).
				status(running("a", true, 0)).status(running("b", true, 0)).pod,
			ready: "2/2", status: "Running", restarts: "0",
		},
		{
			name: "crash loop with restarts and time since last restart",
			pod: makePod("p").containers("a").phase(corev1.PodRunning).
				status(withLastTermination(waiting("a", "CrashLoopBackOff", 4), 90*time.Second)).pod,
			ready: "0/1", status: "CrashLoopBackOff", restarts: "4 (90s ago)",
		},
		{
			name: "image pull backoff",
			pod: makePod("p").containers("a").phase(corev1.PodPending).
				status(waiting("a", "ImagePullBackOff", 0)).pod,
			ready: "0/1", status: "ImagePullBackOff", restarts: "0",
		},
		{
			name: "second of three init containers running",
			pod: makePod("p").inits("i1", "i2", "i3").containers("a").phase(corev1.PodPending).
				initStatus(terminated("i1", "Completed", 0, 0)).
				initStatus(running("i2", false, 0)).
				initStatus(waiting("i3", "PodInitializing", 0)).
				status(waiting("a", "PodInitializing", 0)).pod,
			ready: "0/1", status: "Init:1/3", restarts: "0",
		},
		{
			name: "init container failed with a reason",
			pod: makePod("p").inits("i1").containers("a").phase(corev1.PodPending).
				initStatus(terminated("i1", "Error", 1, 0)).pod,
			ready: "0/1", status: "Init:Error", restarts: "0",
		},
		{
			name: "init container killed by a signal",
			pod: makePod("p").inits("i1").containers("a").phase(corev1.PodPending).
				initStatus(terminated("i1", "", 137, 9)).pod,
			ready: "0/1", status: "Init:Signal:9", restarts: "0",
		},
		{
			name: "init container exited without reason",
			pod: makePod("p").inits("i1").containers("a").phase(corev1.PodPending).
				initStatus(terminated("i1", "", 3, 0)).pod,
			ready: "0/1", status: "Init:ExitCode:3", restarts: "0",
		},
		{
			name: "init container in crash loop counts its restarts",
			pod: makePod("p").inits("i1").containers("a").phase(corev1.PodPending).
				initStatus(waiting("i1", "CrashLoopBackOff", 2)).pod,
			ready: "0/1", status: "Init:CrashLoopBackOff", restarts: "2",
		},
		{
			name: "succeeded pod shows Completed",
			pod: makePod("p").containers("a").phase(corev1.PodSucceeded).
				status(terminated("a", "Completed", 0, 0)).pod,
			ready: "0/1", status: "Completed", restarts: "0",
		},
		{
			name: "failed container exit code without reason",
			pod: makePod("p").containers("a").phase(corev1.PodFailed).
				status(terminated("a", "", 2, 0)).pod,
			ready: "0/1", status: "ExitCode:2", restarts: "0",
		},
		{
			name: "container killed by signal",
			pod: makePod("p").containers("a").phase(corev1.PodFailed).
				status(terminated("a", "", 0, 15)).pod,
			ready: "0/1", status: "Signal:15", restarts: "0",
		},
		{
			name: "one completed while another runs and the pod is ready",
			pod: makePod("p").containers("a", "b").phase(corev1.PodRunning).condition(corev1.PodReady, corev1.ConditionTrue, "").
				status(terminated("a", "Completed", 0, 0)).status(running("b", true, 0)).pod,
			ready: "1/2", status: "Running", restarts: "0",
		},
		{
			name: "one completed while another runs and the pod is not ready",
			pod: makePod("p").containers("a", "b").phase(corev1.PodRunning).
				status(running("a", true, 0)).status(terminated("b", "Completed", 0, 0)).pod,
			ready: "1/2", status: "NotReady", restarts: "0",
		},
		{
			name: "deleting a running pod shows Terminating",
			pod: makePod("p").containers("a").phase(corev1.PodRunning).deleting().
				status(running("a", true, 0)).pod,
			ready: "1/1", status: "Terminating", restarts: "0",
		},
		{
			name: "deleting a finished pod keeps its status",
			pod: makePod("p").containers("a").phase(corev1.PodSucceeded).deleting().
				status(terminated("a", "Completed", 0, 0)).pod,
			ready: "0/1", status: "Completed", restarts: "0",
		},
		{
			name: "deleting a pod on a lost node shows Unknown",
			pod: func() *corev1.Pod {
				p := makePod("p").containers("a").phase(corev1.PodRunning).deleting().status(running("a", true, 0)).pod
				p.Status.Reason = "NodeLost"
				return p
			}(),
			ready: "1/1", status: "Unknown", restarts: "0",
		},
		{
			name: "status reason overrides the phase",
			pod: func() *corev1.Pod {
				p := makePod("p").containers("a").phase(corev1.PodFailed).pod
				p.Status.Reason = "Evicted"
				return p
			}(),
			ready: "0/1", status: "Evicted", restarts: "0",
		},
		{
			name: "scheduling gated",
			pod: makePod("p").containers("a").phase(corev1.PodPending).
				condition(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonSchedulingGated).pod,
			ready: "0/1", status: "SchedulingGated", restarts: "0",
		},
		{
			name: "running sidecar counts as ready and its restarts count",
			pod: makePod("p").sidecar("proxy").containers("a").phase(corev1.PodRunning).
				condition(corev1.PodInitialized, corev1.ConditionTrue, "").
				initStatus(withLastTermination(started(running("proxy", true, 3)), 5*time.Minute)).
				status(withLastTermination(running("a", true, 1), 2*time.Minute)).pod,
			ready: "2/2", status: "Running", restarts: "4 (2m ago)",
		},
		{
			name: "sidecar started while the next init container runs",
			pod: makePod("p").sidecar("proxy").inits("migrate").containers("a").phase(corev1.PodPending).
				initStatus(started(running("proxy", true, 0))).
				initStatus(running("migrate", false, 0)).
				status(waiting("a", "PodInitializing", 0)).pod,
			ready: "1/2", status: "Init:1/2", restarts: "0",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, err := ConvertToTable(tc.pod, Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			cells := table.Rows[0].Cells
			if cells[1] != tc.ready || cells[2] != tc.status || cells[3] != tc.restarts {
				t.Errorf("READY/STATUS/RESTARTS = %v / %v / %v, want %s / %s / %s", cells[1], cells[2], cells[3], tc.ready, tc.status, tc.restarts)
			}
		})
	}
}

func TestPodWideColumnsAndConditions(t *testing.T) {
	p := makePod("web-1").containers("a").phase(corev1.PodRunning).status(running("a", true, 0)).pod
	p.Spec.NodeName = "node-a"
	p.Status.PodIPs = []corev1.PodIP{{IP: "10.42.0.7"}, {IP: "fd00::7"}}
	p.Status.NominatedNodeName = "node-b"
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "example.com/lb", Status: corev1.ConditionTrue})

	table, err := ConvertToTable(p, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	assertColumns(t, table, "Name", "Ready", "Status", "Restarts", "Age", "IP*", "Node*", "Nominated Node*", "Readiness Gates*")
	assertCells(t, table.Rows[0].Cells, "web-1", "1/1", "Running", "0", "10m", "10.42.0.7", "node-a", "node-b", "1/2")
	if len(table.Rows[0].Conditions) != 0 {
		t.Errorf("running pod has row conditions %v", table.Rows[0].Conditions)
	}

	bare := makePod("bare").containers("a").phase(corev1.PodSucceeded).pod
	table, err = ConvertToTable(bare, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	assertCells(t, table.Rows[0].Cells, "bare", "0/1", "Succeeded", "0", "10m", "<none>", "<none>", "<none>", "<none>")
	if c := table.Rows[0].Conditions; len(c) != 1 || c[0].Type != metav1.RowCompleted || c[0].Reason != "Succeeded" {
		t.Errorf("succeeded pod conditions = %v, want Completed/Succeeded", c)
	}
}
