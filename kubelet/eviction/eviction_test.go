package eviction

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestParseThresholds(t *testing.T) {
	got, err := ParseThresholds("eviction-hard", DefaultEvictionHard)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, th := range got {
		names = append(names, th.String())
	}
	if s := strings.Join(names, ","); s != DefaultEvictionHard {
		t.Errorf("round trip: %s", s)
	}
	if got[0].Quantity.Value() != 100<<20 || got[1].Percentage != 0.1 {
		t.Errorf("values: %v %v", got[0].Quantity, got[1].Percentage)
	}
	if got, err := ParseThresholds("eviction-hard", ""); err != nil || got != nil {
		t.Errorf("empty: %v %v", got, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"memory.available>100Mi", "only the operator < is supported"},
		{"memory.available", "want signal<quantity"},
		{"memory.avail<100Mi", `unknown signal "memory.avail"`},
		{"memory.available<100Mi,memory.available<1Gi", "given twice"},
		{"nodefs.available<0%", "percentage"},
		{"nodefs.available<101%", "percentage"},
		{"nodefs.available<x%", "percentage"},
		{"memory.available<lots", "neither a quantity nor a percentage"},
		{"memory.available<-1Mi", "must not be negative"},
	} {
		_, err := ParseThresholds("eviction-hard", tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--eviction-hard") {
			t.Errorf("%s: error %v, want one naming --eviction-hard and saying %q", tc.in, err, tc.want)
		}
	}
}

func TestThresholdsMet(t *testing.T) {
	ts, _ := ParseThresholds("f", "pid.available<10,nodefs.available<10%,memory.available<100Mi")
	obs := Observations{
		SignalMemoryAvailable: {Available: 99 << 20, Capacity: 1 << 30},
		SignalNodeFsAvailable: {Available: 10, Capacity: 100}, // exactly 10%: not below
		SignalPIDAvailable:    {Available: 9, Capacity: 1000},
	}
	met := thresholdsMet(ts, obs)
	if len(met) != 2 || met[0].Signal != SignalMemoryAvailable || met[1].Signal != SignalPIDAvailable {
		t.Fatalf("met %v, want memory then pid", met)
	}
	obs[SignalNodeFsAvailable] = Observation{Available: 9, Capacity: 100}
	if met := thresholdsMet(ts, obs); len(met) != 3 || met[1].Signal != SignalNodeFsAvailable {
		t.Errorf("met %v", met)
	}
	// A signal not measured never meets its threshold.
	if met := thresholdsMet(ts, Observations{}); len(met) != 0 {
		t.Errorf("met %v without observations", met)
	}
}

func TestSignalMath(t *testing.T) {
	meminfo := "MemTotal:       24684096 kB\nMemFree:        22490660 kB\nMemAvailable:   23702448 kB\nHugePages_Total:       0\n"
	kv, err := parseKeyValues(strings.NewReader(meminfo))
	if err != nil || kv["MemTotal"] != 24684096*1024 || kv["HugePages_Total"] != 0 {
		t.Fatalf("meminfo %v %v", kv, err)
	}
	if _, err := parseKeyValues(strings.NewReader("MemTotal: lots kB\n")); err == nil {
		t.Error("a bad number parsed")
	}
	stat, _ := parseKeyValues(strings.NewReader("cache 100\ninactive_file 1000\ntotal_inactive_file 3000\n"))
	// v1: total_inactive_file wins over the cgroup's own inactive_file.
	o, err := memoryFromCgroup(10000, 5000, stat)
	if err != nil || o != (Observation{Available: 8000, Capacity: 10000}) {
		t.Errorf("v1 %v %v", o, err)
	}
	stat2, _ := parseKeyValues(strings.NewReader("anon 5\ninactive_file 1000\n"))
	if o, _ := memoryFromCgroup(10000, 5000, stat2); o.Available != 6000 {
		t.Errorf("v2 %v", o)
	}
	if o, _ := memoryFromCgroup(10000, 500, stat2); o.Available != 10000 {
		t.Errorf("inactive above usage: working set floors at 0: %v", o)
	}
	if _, err := memoryFromCgroup(10000, 5000, map[string]int64{}); err == nil {
		t.Error("no inactive_file: no error")
	}
	if o := pidObservation(32768, 192731, 300); o != (Observation{Available: 32468, Capacity: 32768}) {
		t.Errorf("pid %v", o)
	}
	if o := pidObservation(4194304, 100000, 300); o.Capacity != 100000 {
		t.Errorf("threads-max is the smaller limit: %v", o)
	}
}

func pod(name string, prio int32, memReq string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
		Spec: corev1.PodSpec{Priority: ptr.To(prio), Containers: []corev1.Container{{Name: "c"}}}}
	if memReq != "" {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memReq)}
	}
	return p
}

func names(ps []rankedPod) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.pod.Name)
	}
	return strings.Join(out, ",")
}

func TestRankMemory(t *testing.T) {
	mem := func(n int64) PodUsage { return PodUsage{Memory: map[string]int64{"c": n << 20}} }
	pods := []rankedPod{
		{pod("within-request", 0, "100Mi"), mem(50)},
		{pod("high-prio-over", 1000, "10Mi"), mem(20)},
		{pod("besteffort-small", 0, ""), mem(5)},
		{pod("besteffort-big", 0, ""), mem(70)},
		{pod("low-prio-within", -10, "1Gi"), mem(500)},
	}
	rank(SignalMemoryAvailable, pods)
	// Over their requests first (by priority, then by how far over), then the rest by priority.
	if got, want := names(pods), "besteffort-big,besteffort-small,high-prio-over,low-prio-within,within-request"; got != want {
		t.Errorf("rank %s, want %s", got, want)
	}
}

func TestRankPIDs(t *testing.T) {
	pods := []rankedPod{
		{pod("few", 0, ""), PodUsage{Processes: 2}},
		{pod("many", 0, ""), PodUsage{Processes: 50}},
		{pod("low-prio", -1, ""), PodUsage{Processes: 1}},
	}
	rank(SignalPIDAvailable, pods)
	if got := names(pods); got != "low-prio,many,few" {
		t.Errorf("rank %s", got)
	}
}

func TestMessage(t *testing.T) {
	ts, _ := ParseThresholds("f", "memory.available<100Mi")
	p := pod("web", 0, "")
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}})
	got := message(ts[0], Observation{Available: 50 << 20, Capacity: 1 << 30}, p, PodUsage{Memory: map[string]int64{"c": 70 << 20, "sidecar": 10 << 20}})
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 70Mi, request is 0, has larger consumption of memory. "
	if got != want {
		t.Errorf("message\n%q, want\n%q", got, want)
	}
	ts, _ = ParseThresholds("f", "nodefs.inodesFree<5%")
	got = message(ts[0], Observation{Available: 40, Capacity: 1000}, p, PodUsage{})
	if want := "The node was low on resource: inodes. Threshold quantity: 50, available: 40. "; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

// fakeSource is a measured node in a test: values the test sets.
type fakeSource struct {
	obs   Observations
	usage map[string]PodUsage
}

func (f *fakeSource) Observe(context.Context) (Observations, error) { return f.obs, nil }
func (f *fakeSource) PodUsage(_ context.Context, p *corev1.Pod) PodUsage {
	return f.usage[p.Name]
}

type fakePods struct {
	pods    []*corev1.Pod
	evicted []string
	msgs    []string
}

func (f *fakePods) ActivePods() []*corev1.Pod { return f.pods }
func (f *fakePods) EvictPod(_ context.Context, p *corev1.Pod, msg string) error {
	f.evicted = append(f.evicted, p.Name)
	f.msgs = append(f.msgs, msg)
	var keep []*corev1.Pod
	for _, q := range f.pods {
		if q != p {
			keep = append(keep, q)
		}
	}
	f.pods = keep
	return nil
}

type fakeReclaimer struct {
	src     *fakeSource
	signals []Signal
	frees   int64
}

func (r *fakeReclaimer) Reclaim(_ context.Context, s Signal) error {
	r.signals = append(r.signals, s)
	o := r.src.obs[s]
	o.Available += r.frees
	r.src.obs[s] = o
	return nil
}

func TestConditionTransitionsAndEviction(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hard, _ := ParseThresholds("eviction-hard", DefaultEvictionHard+",pid.available<100")
	src := &fakeSource{obs: Observations{
		SignalMemoryAvailable:  {Available: 2 << 30, Capacity: 4 << 30},
		SignalNodeFsAvailable:  {Available: 50, Capacity: 100},
		SignalImageFsAvailable: {Available: 50, Capacity: 100},
		SignalPIDAvailable:     {Available: 1000, Capacity: 4000},
	}, usage: map[string]PodUsage{"a": {Memory: map[string]int64{"c": 10 << 20}}, "b": {Memory: map[string]int64{"c": 300 << 20}}}}
	m, err := New(Config{Hard: hard, Source: src, PressureTransitionPeriod: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	critical := pod("critical", SystemCriticalPriority+1000, "")
	pods := &fakePods{pods: []*corev1.Pod{pod("a", 0, ""), critical, pod("b", 0, "")}}
	flips := 0
	changed := func() { flips++ }
	sync := func() *corev1.Pod {
		t.Helper()
		p, err := m.synchronize(context.Background(), pods, changed)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := sync(); p != nil || flips != 0 || m.UnderPressure(corev1.NodeMemoryPressure) {
		t.Fatalf("no pressure: evicted %v, flips %d", p, flips)
	}

	src.obs[SignalMemoryAvailable] = Observation{Available: 50 << 20, Capacity: 4 << 30}
	if p := sync(); p == nil || p.Name != "b" {
		t.Fatalf("evicted %v, want b (the larger best-effort pod)", p)
	}
	if !m.UnderPressure(corev1.NodeMemoryPressure) || m.UnderPressure(corev1.NodeDiskPressure) || flips != 1 {
		t.Errorf("memory pressure not reported alone (flips %d)", flips)
	}
	if !strings.HasPrefix(pods.msgs[0], "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 300Mi") {
		t.Errorf("message %q", pods.msgs[0])
	}
	if p := sync(); p == nil || p.Name != "a" {
		t.Fatalf("evicted %v, want a", p)
	}
	// Only the critical pod is left: it is never evicted.
	if p := sync(); p != nil {
		t.Fatalf("evicted %s", p.Name)
	}

	// The signal recovers; the condition stays for the transition period.
	src.obs[SignalMemoryAvailable] = Observation{Available: 2 << 30, Capacity: 4 << 30}
	now = now.Add(59 * time.Second)
	sync()
	if !m.UnderPressure(corev1.NodeMemoryPressure) {
		t.Error("memory pressure cleared before the transition period")
	}
	now = now.Add(time.Second)
	sync()
	if m.UnderPressure(corev1.NodeMemoryPressure) || flips != 2 {
		t.Errorf("memory pressure not cleared after the transition period (flips %d)", flips)
	}

	// Disk: node-level reclaim first; a pod only when it did not free enough.
	r := &fakeReclaimer{src: src, frees: 40}
	m.cfg.Reclaimer = r
	pods.pods = append(pods.pods, pod("d", 0, ""))
	src.obs[SignalImageFsAvailable] = Observation{Available: 10, Capacity: 100}
	if p := sync(); p != nil || len(r.signals) != 1 || r.signals[0] != SignalImageFsAvailable {
		t.Fatalf("reclaim: evicted %v, reclaimed %v", p, r.signals)
	}
	if !m.UnderPressure(corev1.NodeDiskPressure) {
		t.Error("disk pressure not reported")
	}
	r.frees = 0
	src.obs[SignalPIDAvailable] = Observation{Available: 10, Capacity: 4000}
	src.obs[SignalImageFsAvailable] = Observation{Available: 10, Capacity: 100}
	if p := sync(); p == nil || p.Name != "d" {
		t.Fatalf("evicted %v after a reclaim that freed nothing", p)
	}
	if !strings.HasPrefix(pods.msgs[len(pods.msgs)-1], "The node was low on resource: ephemeral-storage.") {
		t.Errorf("message %q", pods.msgs[len(pods.msgs)-1])
	}
	if !m.UnderPressure(corev1.NodePIDPressure) {
		t.Error("PID pressure not reported")
	}
}

func TestNoThresholdsNoPressure(t *testing.T) {
	src := &fakeSource{obs: Observations{SignalMemoryAvailable: {Available: 0, Capacity: 1}}}
	m, _ := New(Config{Source: src})
	pods := &fakePods{pods: []*corev1.Pod{pod("a", 0, "")}}
	if p, _ := m.synchronize(context.Background(), pods, nil); p != nil || m.UnderPressure(corev1.NodeMemoryPressure) {
		t.Error("eviction without thresholds")
	}
	if _, err := New(Config{}); err == nil {
		t.Error("no source: no error")
	}
}

func TestAdmit(t *testing.T) {
	src := &fakeSource{obs: Observations{
		SignalMemoryAvailable: {Available: 2 << 30, Capacity: 4 << 30},
		SignalNodeFsAvailable: {Available: 50, Capacity: 100},
	}}
	hard, _ := ParseThresholds("f", DefaultEvictionHard)
	m, _ := New(Config{Hard: hard, Source: src})
	sync := func() { m.synchronize(context.Background(), nil, nil) }
	besteffort, burstable, critical := pod("be", 0, ""), pod("bu", 0, "10Mi"), pod("cr", SystemCriticalPriority, "")
	tolerant := pod("tol", 0, "")
	tolerant.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	admitted := func() string {
		var out []string
		for _, p := range []*corev1.Pod{besteffort, burstable, critical, tolerant} {
			if ok, _ := m.Admit(p); ok {
				out = append(out, p.Name)
			}
		}
		return strings.Join(out, ",")
	}
	sync()
	if got := admitted(); got != "be,bu,cr,tol" {
		t.Errorf("no pressure: admitted %s", got)
	}
	src.obs[SignalMemoryAvailable] = Observation{Available: 1 << 20, Capacity: 4 << 30}
	sync()
	if got := admitted(); got != "bu,cr,tol" {
		t.Errorf("memory pressure: admitted %s", got)
	}
	if _, msg := m.Admit(besteffort); msg != "The node had condition: [MemoryPressure]. " {
		t.Errorf("message %q", msg)
	}
	src.obs[SignalNodeFsAvailable] = Observation{Available: 1, Capacity: 100}
	sync()
	if got := admitted(); got != "cr" {
		t.Errorf("memory and disk pressure: admitted %s", got)
	}
	if _, msg := m.Admit(burstable); msg != "The node had condition: [MemoryPressure DiskPressure]. " {
		t.Errorf("message %q", msg)
	}
}
