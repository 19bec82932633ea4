package agent_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/kubelet/agent"
	"github.com/skiffkube/skiff/kubelet/fakeruntime"
)

// A pod bound past the scheduler that does not fit beside the pods already
// admitted is refused as the kubelet refuses it: Failed, reason OutOfcpu
// (OutOfpods…), "Pod was rejected: Node didn't have enough resource: …",
// with a Warning Event; one that fits runs.
func TestAdmissionRefusesPodsThatDoNotFit(t *testing.T) {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24"}})
	rec := record.NewFakeRecorder(100)
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		corev1.ResourcePods: resource.MustParse("3")}
	a, err := agent.New(client, fakeruntime.New(0, nil), agent.Config{NodeName: "n", Capacity: allocatable, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx, 2)

	create := func(name, cpu string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		if cpu != "" {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		}
		// The scheduler's condition, as on a pod it bound.
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	phaseOf := func(name string, want corev1.PodPhase) *corev1.Pod {
		var p *corev1.Pod
		poll(t, name+" "+string(want), func() (bool, error) {
			var err error
			p, err = client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == want, nil
		})
		return p
	}
	create("big", "600m")
	phaseOf("big", corev1.PodRunning)
	create("too-big", "600m")
	p := phaseOf("too-big", corev1.PodFailed)
	const short = "Node didn't have enough resource: cpu, requested: 600, used: 600, capacity: 1000"
	if p.Status.Reason != "OutOfcpu" || p.Status.Message != "Pod was rejected: "+short {
		t.Errorf("refused pod: reason %q message %q", p.Status.Reason, p.Status.Message)
	}
	if len(p.Status.ContainerStatuses) != 0 {
		t.Errorf("a refused pod ran: %+v", p.Status.ContainerStatuses)
	}
	// As the kubelet's rejectPod: a start time and the QoS class, and none
	// of the kubelet's conditions (PodScheduled is one).
	if p.Status.StartTime == nil || p.Status.QOSClass != corev1.PodQOSBurstable || len(p.Status.Conditions) != 0 {
		t.Errorf("refused pod: startTime %v, qosClass %q, conditions %+v", p.Status.StartTime, p.Status.QOSClass, p.Status.Conditions)
	}
	create("small", "300m")
	phaseOf("small", corev1.PodRunning)
	create("best-effort", "")
	phaseOf("best-effort", corev1.PodRunning)
	// Three pods run: the fourth is one too many.
	create("fourth", "")
	p = phaseOf("fourth", corev1.PodFailed)
	if want := "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"; p.Status.Reason != "OutOfpods" || p.Status.Message != want {
		t.Errorf("fourth pod: reason %q message %q, want OutOfpods %q", p.Status.Reason, p.Status.Message, want)
	}
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	if !slices.Contains(events, "Warning OutOfcpu "+short) {
		t.Errorf("no OutOfcpu event in %q", events)
	}
}

// A pod bound by hand to a node its node selector or required node
// affinity does not match is refused (NodeAffinity), once the Node read
// afresh confirms it; a DaemonSet's pod, pinned by matchFields to its node,
// runs; a selector matched by a label set after the agent started runs.
func TestAdmissionChecksNodeAffinity(t *testing.T) {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24"}})
	rec := record.NewFakeRecorder(100)
	a, err := agent.New(client, fakeruntime.New(0, nil), agent.Config{NodeName: "n", Labels: map[string]string{"zone": "a"}, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx, 2)
	poll(t, "registration", func() (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
		return err == nil && n.Labels["zone"] == "a", nil
	})
	create := func(name string, selector map[string]string, affinity *corev1.Affinity) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "n", NodeSelector: selector, Affinity: affinity, Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	phaseOf := func(name string, want corev1.PodPhase) *corev1.Pod {
		var p *corev1.Pod
		poll(t, name+" "+string(want), func() (bool, error) {
			var err error
			p, err = client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == want, nil
		})
		return p
	}
	create("zone-b", map[string]string{"zone": "b"}, nil)
	p := phaseOf("zone-b", corev1.PodFailed)
	const want = "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
	if p.Status.Reason != "NodeAffinity" || p.Status.Message != want {
		t.Errorf("reason %q message %q, want NodeAffinity %q", p.Status.Reason, p.Status.Message, want)
	}
	create("zone-a", map[string]string{"zone": "a"}, nil)
	phaseOf("zone-a", corev1.PodRunning)
	pinned := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n"}}}}}}}}
	create("daemon", nil, pinned)
	phaseOf("daemon", corev1.PodRunning)
	// Labelled after registration: the agent reads the Node again before refusing.
	n, err := client.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels["gpu"] = "yes"
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	create("gpu", map[string]string{"gpu": "yes"}, nil)
	phaseOf("gpu", corev1.PodRunning)
}

// The rest of the kubelet's predicate admission, for pods bound by hand:
// a host port another admitted pod holds (NodePorts), a NoExecute taint the
// pod does not tolerate (TaintToleration; NoSchedule taints are the
// scheduler's alone), another OS (the kubernetes.io/os label, spec.os) and a
// Strict supplemental groups policy the node does not support, each with
// the kubelet's reason, message and a Warning Event, in the kubelet's order.
func TestAdmissionRefusesPortsTaintsAndOS(t *testing.T) {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24",
		Taints: []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}, {Key: "soft", Effect: corev1.TaintEffectNoSchedule}}}})
	rec := record.NewFakeRecorder(100)
	a, err := agent.New(client, fakeruntime.New(0, nil), agent.Config{NodeName: "n", Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx, 2)

	tolerating := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoExecute}}
	type podOpt func(*corev1.Pod)
	hostPort := func(port int32) podOpt {
		return func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: port, Protocol: corev1.ProtocolTCP}}
		}
	}
	untolerating := func(p *corev1.Pod) { p.Spec.Tolerations = nil }
	create := func(name string, opts ...podOpt) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: "n", Tolerations: tolerating, Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		for _, o := range opts {
			o(p)
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	phaseOf := func(name string, want corev1.PodPhase) *corev1.Pod {
		var p *corev1.Pod
		poll(t, name+" "+string(want), func() (bool, error) {
			var err error
			p, err = client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == want, nil
		})
		return p
	}
	refused := func(name, reason, message string) {
		t.Helper()
		p := phaseOf(name, corev1.PodFailed)
		if p.Status.Reason != reason || p.Status.Message != "Pod was rejected: "+message {
			t.Errorf("%s: reason %q message %q, want %q %q", name, p.Status.Reason, p.Status.Message, reason, "Pod was rejected: "+message)
		}
	}
	const (
		ports = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
		taint = "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"
	)
	create("web", hostPort(80))
	phaseOf("web", corev1.PodRunning)
	create("web-again", hostPort(80))
	refused("web-again", "NodePorts", ports)
	create("other-port", hostPort(81))
	phaseOf("other-port", corev1.PodRunning)
	create("untolerating", untolerating)
	refused("untolerating", "TaintToleration", taint)
	// Host ports are checked before taints.
	create("both", hostPort(80), untolerating)
	refused("both", "NodePorts", ports)
	// The OS comes first of all.
	create("windows-label", hostPort(80), func(p *corev1.Pod) { p.Labels = map[string]string{corev1.LabelOSStable: "windows"} })
	refused("windows-label", "PodOSSelectorNodeLabelDoesNotMatch", "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label")
	create("windows", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} })
	refused("windows", "PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS")
	create("linux", func(p *corev1.Pod) {
		p.Labels = map[string]string{corev1.LabelOSStable: "linux"}
		p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
	})
	phaseOf("linux", corev1.PodRunning)
	strict := corev1.SupplementalGroupsPolicyStrict
	create("strict", func(p *corev1.Pod) {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroupsPolicy: &strict}
	})
	refused("strict", "SupplementalGroupsPolicyNotSupported", "SupplementalGroupsPolicy=Strict is not supported in this node")

	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	for _, e := range []string{"Warning NodePorts " + ports, "Warning TaintToleration " + taint} {
		if !slices.Contains(events, e) {
			t.Errorf("no event %q in %q", e, events)
		}
	}
}

// A refused pod whose Failed status cannot be written at first has it
// written when the API server answers again, the refusal standing: its
// Warning Event is recorded once, not at each try.
func TestRefusalWrittenOnceTheAPIAnswers(t *testing.T) {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24"}})
	rec := record.NewFakeRecorder(100)
	a, err := agent.New(client, fakeruntime.New(0, nil), agent.Config{NodeName: "n", Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	left := failStatusWrites(client, 3, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	go a.Run(ctx, 1)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "foreign", Namespace: "default", UID: "uid-foreign"},
		Spec: corev1.PodSpec{NodeName: "n", OS: &corev1.PodOS{Name: "plan9"}, Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the pod refused", func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "foreign", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodFailed && p.Status.Reason == "PodOSNotSupported", nil
	})
	if n := left(); n != 0 {
		t.Errorf("%d status writes left to fail", n)
	}
	if n := countEvents(rec)["Warning PodOSNotSupported Failed to admit pod as the OS field doesn't match node OS"]; n != 1 {
		t.Errorf("the refusal's Event recorded %d times, want once", n)
	}
}
