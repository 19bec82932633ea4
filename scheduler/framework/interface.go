package framework

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	"github.com/skiffkube/skiff/scheduler/metrics"
)

// Score bounds: every score plugin's NormalizeScore maps into [MinNodeScore, MaxNodeScore].
const (
	MinNodeScore int64 = 0
	MaxNodeScore int64 = 100
)

// Plugin is what every plugin is: a name.
type Plugin interface {
	Name() string
}

// PreFilterResult narrows the nodes worth filtering (nil = all nodes).
type PreFilterResult struct {
	NodeNames map[string]bool
}

// QueueSortLess reports whether pod1, which last entered the scheduling
// queue at queued1, is to be attempted before pod2, queued at queued2.
type QueueSortLess func(pod1 *v1.Pod, queued1 time.Time, pod2 *v1.Pod, queued2 time.Time) bool

// QueueSortPlugin orders the pods waiting in the active queue
// (kube-scheduler's QueueSort); a profile has exactly one.
type QueueSortPlugin interface {
	Plugin
	Less(pod1 *v1.Pod, queued1 time.Time, pod2 *v1.Pod, queued2 time.Time) bool
}

// PreEnqueuePlugin decides whether a pod may enter the active queue at all;
// a pod one of them refuses waits, outside every attempt, until an update
// of the pod changes the answer, or the plugin, whose answer changed
// otherwise, calls Handle.Ungate or Handle.Activate (kube-scheduler's
// PreEnqueue). The queue asks it holding its lock: it must not call
// Handle.Activate or Ungate, nor wait for a lock whose holder may call them
// (DefaultPreemption lets go of its own before it does).
type PreEnqueuePlugin interface {
	Plugin
	PreEnqueue(ctx context.Context, pod *v1.Pod) *Status
}

// PreFilterPlugin runs once per attempt before any node is looked at, to
// reject the pod outright or to precompute state for Filter.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) (*PreFilterResult, *Status)
}

// PreFilterExtensions lets preemption update a plugin's PreFilter state
// when it simulates adding or removing a pod on a node.
type PreFilterExtensions interface {
	AddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToRemove *PodInfo, nodeInfo *NodeInfo) *Status
}

// FilterPlugin decides whether the pod may run on one node. It is called for
// many nodes concurrently and must only read state.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
}

// PostFilterResult tells the scheduler what to make of the pod's nominated
// node, as kube-scheduler's NominatingInfo in override mode: the node a
// PostFilter plugin made room on, or "" to clear a nomination the plugin can
// no longer stand by (it returns the result with its rejection then). A nil
// result leaves the pod's nominated node as it is.
type PostFilterResult struct {
	NominatedNodeName string
}

// NodeToStatus maps node name to why the pod was rejected there.
type NodeToStatus map[string]*Status

// PostFilterPlugin runs when no node passed Filter (preemption).
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *v1.Pod, filtered NodeToStatus) (*PostFilterResult, *Status)
}

// PreScorePlugin precomputes score state once per attempt over the feasible nodes.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
}

// NodeScore is one node's score from one plugin.
type NodeScore struct {
	Name  string
	Score int64
}

// ScorePlugin ranks a feasible node; higher is better.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) (int64, *Status)
}

// ScoreNormalizer is implemented by score plugins whose raw scores are not
// already in [MinNodeScore, MaxNodeScore]; it rewrites scores in place.
type ScoreNormalizer interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *v1.Pod, scores []NodeScore) *Status
}

// ReservePlugin claims plugin-held resources for the chosen node before the
// asynchronous bind; Unreserve undoes it if anything later fails.
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string)
}

// PreBindPlugin prepares what the pod needs on the chosen node before it is
// bound (volume binding: a claim provisioned there), in the binding cycle.
// A failure unreserves and requeues the pod.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// BindPlugin writes the decision to the API server. Returning Skip passes the
// pod to the next bind plugin.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// NodeInfoLister reads the scheduling snapshot.
type NodeInfoLister interface {
	// List returns all nodes, in a stable order for the snapshot's lifetime.
	List() []*NodeInfo
	// HavePodsWithAffinityList returns nodes holding pods with pod affinity terms.
	HavePodsWithAffinityList() []*NodeInfo
	// HavePodsWithRequiredAntiAffinityList returns nodes holding pods with required anti-affinity.
	HavePodsWithRequiredAntiAffinityList() []*NodeInfo
	// Get returns one node's info or an error naming it.
	Get(name string) (*NodeInfo, error)
}

// PodNominator knows the pods that preemption nominated to a node (their
// status.nominatedNodeName) and that wait to be scheduled there: the room
// their victims free is theirs, so Filter counts them as placed for pods of
// lower or equal priority.
type PodNominator interface {
	// NominatedPodsForNode returns the pods nominated to nodeName; the
	// slice is the caller's, the PodInfos are shared and not to be changed.
	NominatedPodsForNode(nodeName string) []*PodInfo
}

// PodActivator is the part of the scheduling queue plugins may move pods in
// (see Handle.Activate and Handle.Ungate).
type PodActivator interface {
	Activate(pod *v1.Pod)
	Ungate(pod *v1.Pod)
}

// NamespaceLabeler returns a namespace's labels for affinity namespace selectors.
type NamespaceLabeler interface {
	NamespaceLabels(name string) map[string]string
}

// Handle is what the runtime gives plugins at construction.
type Handle interface {
	// ClientSet is the API client (binding, preemption, status updates).
	ClientSet() kubernetes.Interface
	// SharedInformerFactory gives plugins listers of other kinds (claims,
	// volumes, storage classes); informers asked for in a constructor are
	// started and synced with the scheduler's own.
	SharedInformerFactory() informers.SharedInformerFactory
	// EventRecorder records events.k8s.io Events as the scheduler (a
	// preempted pod's "Preempted"); never nil.
	EventRecorder() events.EventRecorder
	// SnapshotLister reads the current attempt's snapshot.
	SnapshotLister() NodeInfoLister
	// Metrics are the scheduler's collectors, for what only a plugin sees
	// (the victims of a preemption); never nil.
	Metrics() *metrics.Metrics
	// Namespaces reads namespace labels; may return nil labels for unknown namespaces.
	Namespaces() NamespaceLabeler
	// Parallelism is how many goroutines may work on nodes at once.
	Parallelism() int
	// Parallelize calls fn(i) for i in [0, n) on the goroutines Filter and
	// Score use (at most Parallelism, the caller being one), as
	// kube-scheduler's Parallelizer().Until, and returns once every call has
	// returned. Indexes are handed out in small ascending chunks; once ctx is
	// done no chunk is started (fn cancels ctx to stop early, and must
	// tolerate the rest of a chunk already started).
	Parallelize(ctx context.Context, n int, fn func(i int))
	// RunFilterPlugins runs every Filter plugin on one node (preemption re-checks
	// nodes with pods removed).
	RunFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
	// RunFilterPluginsWithNominatedPods is RunFilterPlugins with the pods
	// nominated to the node of priority at least pod's counted as placed
	// (and then, if the node passed, not counted): preemption's dry run
	// leaves the room kept for them alone.
	RunFilterPluginsWithNominatedPods(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
	// NominatedPodsForNode lists the pods nominated to nodeName (see
	// PodNominator); nil when none are.
	NominatedPodsForNode(nodeName string) []*PodInfo
	// Go runs fn on a goroutine of the scheduler's, for work that outlives
	// the scheduling cycle that starts it (preemption's deletions): fn's ctx
	// ends when the scheduler stops, at shutdown or when its leadership term
	// ends, and the scheduler returns only once fn has.
	Go(fn func(ctx context.Context))
	// Activate retries pod at once, wherever it waits in the scheduling
	// queue (kube-scheduler's Handle.Activate), PreEnqueue permitting.
	Activate(pod *v1.Pod)
	// Ungate asks the PreEnqueue plugins again about pod if it waits among
	// the gated, for a plugin whose verdict changed without the pod
	// changing; admitted, it goes on where it was going.
	Ungate(pod *v1.Pod)
	// RunPreFilterExtensionAddPod / RemovePod update PreFilter state for a simulated change.
	RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToRemove *PodInfo, nodeInfo *NodeInfo) *Status
}
