package tables

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeLostReason is the pod status reason the node lifecycle controller sets
// when the node stopped reporting; such a pod being deleted prints "Unknown".
const nodeLostReason = "NodeLost"

var podColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
	column("Status", "string", "The aggregate status of the containers in this pod."),
	column("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
	ageColumn(),
	wideColumn("IP", "string", corev1.PodStatus{}.SwaggerDoc()["podIP"]),
	wideColumn("Node", "string", corev1.PodSpec{}.SwaggerDoc()["nodeName"]),
	wideColumn("Nominated Node", "string", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]),
	wideColumn("Readiness Gates", "string", corev1.PodSpec{}.SwaggerDoc()["readinessGates"]),
}

// podSummary is what the READY, STATUS and RESTARTS columns show.
type podSummary struct {
	ready, total int
	status       string
	restarts     int
	lastRestart  time.Time // zero when no container has restarted
}

// restartCounter adds up restarts and remembers the latest termination that
// caused one.
type restartCounter struct {
	count int
	last  time.Time
}

func (r *restartCounter) add(s corev1.ContainerStatus) {
	r.count += int(s.RestartCount)
	if t := s.LastTerminationState.Terminated; t != nil && t.FinishedAt.Time.After(r.last) {
		r.last = t.FinishedAt.Time
	}
}

func isSidecar(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) (corev1.ConditionStatus, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status, true
		}
	}
	return "", false
}

// summarizePod derives the status line kubectl prints, following
// Kubernetes' rules: the phase (or status reason) by default, replaced by the
// first init container that has not finished ("Init:1/3", "Init:Error",
// "Init:CrashLoopBackOff"), else by the last app container that is waiting or
// terminated with a reason ("CrashLoopBackOff", "Completed", "ExitCode:1"),
// and finally "Terminating" once deletion started. Sidecars (init containers
// with restartPolicy Always) count towards READY and, once the pod is
// initialised, towards RESTARTS.
func summarizePod(pod *corev1.Pod) podSummary {
	sum := podSummary{total: len(pod.Spec.Containers), status: string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		sum.status = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			sum.status = corev1.PodReasonSchedulingGated
		}
	}

	initSpecs := make(map[string]*corev1.Container, len(pod.Spec.InitContainers))
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		initSpecs[c.Name] = c
		if isSidecar(c) {
			sum.total++
		}
	}

	var all, sidecars restartCounter
	initializing := false
	for i, s := range pod.Status.InitContainerStatuses {
		all.add(s)
		sidecar := isSidecar(initSpecs[s.Name])
		if sidecar {
			sidecars.add(s)
		}
		term, wait := s.State.Terminated, s.State.Waiting
		if term != nil && term.ExitCode == 0 {
			continue // finished successfully
		}
		if sidecar && s.Started != nil && *s.Started {
			if s.Ready {
				sum.ready++
			}
			continue // a running sidecar does not hold up initialisation
		}
		initializing = true
		switch {
		case term != nil && term.Reason != "":
			sum.status = "Init:" + term.Reason
		case term != nil && term.Signal != 0:
			sum.status = fmt.Sprintf("Init:Signal:%d", term.Signal)
		case term != nil:
			sum.status = fmt.Sprintf("Init:ExitCode:%d", term.ExitCode)
		case wait != nil && wait.Reason != "" && wait.Reason != "PodInitializing":
			sum.status = "Init:" + wait.Reason
		default:
			sum.status = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		break
	}
	sum.restarts, sum.lastRestart = all.count, all.last

	initialized, _ := podCondition(pod, corev1.PodInitialized)
	if !initializing || initialized == corev1.ConditionTrue {
		// Once initialised, only sidecar restarts still matter among init
		// containers; app containers decide the status.
		counter := sidecars
		anyRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			s := pod.Status.ContainerStatuses[i]
			counter.add(s)
			term, wait := s.State.Terminated, s.State.Waiting
			switch {
			case wait != nil && wait.Reason != "":
				sum.status = wait.Reason
			case term != nil && term.Reason != "":
				sum.status = term.Reason
			case term != nil && term.Signal != 0:
				sum.status = fmt.Sprintf("Signal:%d", term.Signal)
			case term != nil:
				sum.status = fmt.Sprintf("ExitCode:%d", term.ExitCode)
			case s.Ready && s.State.Running != nil:
				anyRunning = true
				sum.ready++
			}
		}
		sum.restarts, sum.lastRestart = counter.count, counter.last
		// One container completed while another still runs: the pod is
		// not done.
		if sum.status == "Completed" && anyRunning {
			if ready, _ := podCondition(pod, corev1.PodReady); ready == corev1.ConditionTrue {
				sum.status = "Running"
			} else {
				sum.status = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil {
		terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
		switch {
		case pod.Status.Reason == nodeLostReason:
			sum.status = "Unknown"
		case !terminal:
			sum.status = "Terminating"
		}
	}
	return sum
}

func podRow(pod *corev1.Pod, now time.Time) metav1.TableRow {
	sum := summarizePod(pod)
	restarts := strconv.Itoa(sum.restarts)
	if sum.restarts != 0 && !sum.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%s (%s ago)", restarts, age(metav1.NewTime(sum.lastRestart), now))
	}

	ip := none
	if len(pod.Status.PodIPs) > 0 && pod.Status.PodIPs[0].IP != "" {
		ip = pod.Status.PodIPs[0].IP
	} else if pod.Status.PodIP != "" {
		ip = pod.Status.PodIP
	}

	gates := none
	if n := len(pod.Spec.ReadinessGates); n > 0 {
		met := 0
		for _, g := range pod.Spec.ReadinessGates {
			if st, _ := podCondition(pod, g.ConditionType); st == corev1.ConditionTrue {
				met++
			}
		}
		gates = fmt.Sprintf("%d/%d", met, n)
	}

	row := metav1.TableRow{Cells: []any{
		pod.Name,
		fmt.Sprintf("%d/%d", sum.ready, sum.total),
		sum.status,
		restarts,
		age(pod.CreationTimestamp, now),
		ip,
		orDefault(pod.Spec.NodeName, none),
		orDefault(pod.Status.NominatedNodeName, none),
		gates,
	}}
	// kubectl uses the Completed row condition to tell finished pods apart.
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		row.Conditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	case corev1.PodFailed:
		row.Conditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodFailed), Message: "The pod failed."}}
	}
	return row
}
