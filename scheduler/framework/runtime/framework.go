package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/metrics"
)

// Options are the Framework's dependencies.
type Options struct {
	ClientSet kubernetes.Interface
	// Informers is the scheduler's informer factory; nil means a new one
	// over ClientSet (tests fill its indexers directly).
	Informers informers.SharedInformerFactory
	// Snapshot is the lister plugins read; the scheduler refreshes it before each attempt.
	Snapshot   framework.NodeInfoLister
	Namespaces framework.NamespaceLabeler
	// Parallelism bounds the goroutines used for Filter and Score (default 16).
	Parallelism int
	// EventRecorder is what plugins record Events with; nil drops them.
	EventRecorder events.EventRecorder
	// Nominator lists the pods nominated to each node; nil means none are.
	Nominator framework.PodNominator
	// Metrics receive what plugins observe; nil means a set of its own,
	// registered nowhere.
	Metrics *metrics.Metrics
	// Go runs plugins' goroutines for the scheduler (see framework.Handle's
	// Go); nil runs them with a context that never ends, and Wait waits
	// for them (tests).
	Go func(fn func(ctx context.Context))
	// Queue is the scheduling queue plugins activate pods in; nil ignores
	// their requests (tests without a queue).
	Queue framework.PodActivator
}

// Framework runs a profile's plugins at each extension point.
type Framework struct {
	opts Options

	queueSort  []framework.QueueSortPlugin
	preEnqueue []framework.PreEnqueuePlugin
	preFilter  []framework.PreFilterPlugin
	filter     []framework.FilterPlugin
	postFilter []framework.PostFilterPlugin
	preScore   []framework.PreScorePlugin
	score      []framework.ScorePlugin
	weights    map[string]int64
	reserve    []framework.ReservePlugin
	preBind    []framework.PreBindPlugin
	bind       []framework.BindPlugin
	plugins    map[string]framework.Plugin
	// events holds what each plugin implementing EnqueueExtensions
	// registered; a plugin absent here is retried on every event.
	events map[string][]framework.ClusterEventWithHint

	// scoreMu guards scoreScratch, the per-plugin score slab reused between
	// attempts: it is the scheduler's largest allocation per pod otherwise.
	scoreMu      sync.Mutex
	scoreScratch []framework.NodeScore

	// goroutines counts the plugins' goroutines run without Options.Go.
	goroutines sync.WaitGroup
}

var _ framework.Handle = (*Framework)(nil)

// New builds every plugin named in plugins, in order, and sorts each into the
// extension points it implements (a plugin joins every point it implements,
// keeping the profile's order within each point).
func New(registry Registry, plugins []PluginConfig, opts Options) (*Framework, error) {
	if opts.Parallelism <= 0 {
		opts.Parallelism = 16
	}
	if opts.Snapshot == nil {
		return nil, errors.New("scheduler framework: a snapshot lister is required")
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	if opts.Informers == nil && opts.ClientSet != nil {
		opts.Informers = informers.NewSharedInformerFactory(opts.ClientSet, 0)
	}
	f := &Framework{opts: opts, weights: map[string]int64{}, plugins: map[string]framework.Plugin{},
		events: map[string][]framework.ClusterEventWithHint{}}
	for _, pc := range plugins {
		factory, ok := registry[pc.Name]
		if !ok {
			return nil, fmt.Errorf("scheduler framework: plugin %q is not registered", pc.Name)
		}
		if _, dup := f.plugins[pc.Name]; dup {
			return nil, fmt.Errorf("scheduler framework: plugin %q enabled twice", pc.Name)
		}
		p, err := factory(pc.Args, f)
		if err != nil {
			return nil, fmt.Errorf("scheduler framework: building plugin %q: %w", pc.Name, err)
		}
		f.plugins[pc.Name] = p
		if x, ok := p.(framework.EnqueueExtensions); ok {
			f.events[pc.Name] = x.EventsToRegister()
		}
		if x, ok := p.(framework.QueueSortPlugin); ok {
			f.queueSort = append(f.queueSort, x)
		}
		if x, ok := p.(framework.PreEnqueuePlugin); ok {
			f.preEnqueue = append(f.preEnqueue, x)
		}
		if x, ok := p.(framework.PreFilterPlugin); ok {
			f.preFilter = append(f.preFilter, x)
		}
		if x, ok := p.(framework.FilterPlugin); ok {
			f.filter = append(f.filter, x)
		}
		if x, ok := p.(framework.PostFilterPlugin); ok {
			f.postFilter = append(f.postFilter, x)
		}
		if x, ok := p.(framework.PreScorePlugin); ok && !pc.NoScore {
			f.preScore = append(f.preScore, x)
		}
		if x, ok := p.(framework.ScorePlugin); ok && !pc.NoScore {
			f.score = append(f.score, x)
			w := pc.Weight
			if w == 0 {
				w = 1
			}
			if w < 0 {
				return nil, fmt.Errorf("scheduler framework: plugin %q: score weight %d must be positive", pc.Name, w)
			}
			f.weights[pc.Name] = w
		}
		if x, ok := p.(framework.ReservePlugin); ok {
			f.reserve = append(f.reserve, x)
		}
		if x, ok := p.(framework.PreBindPlugin); ok {
			f.preBind = append(f.preBind, x)
		}
		if x, ok := p.(framework.BindPlugin); ok {
			f.bind = append(f.bind, x)
		}
	}
	if len(f.queueSort) > 1 {
		return nil, errors.New("scheduler framework: only one queue sort plugin can be enabled")
	}
	return f, nil
}

// QueueSortFunc is the queue sort plugin's Less, the order of the active
// queue; nil when the profile has none.
func (f *Framework) QueueSortFunc() framework.QueueSortLess {
	if len(f.queueSort) == 0 {
		return nil
	}
	return f.queueSort[0].Less
}

// QueueingHint asks plugin, which rejected pod, whether evt (the change
// from oldObj to newObj) may make pod schedulable, as kube-scheduler's
// queue does: a plugin that registered events answers QueueSkip for any
// other event and its hint's verdict for those (Queue when it has no hint
// function); a plugin that registered none, or is not in the profile (a
// marker such as "no node at all"), answers Queue. A hint that fails answers
// Queue with its error, so that the pod is never left waiting for want of a
// verdict. Each hint's run is timed in
// scheduler_queueing_hint_execution_duration_seconds.
func (f *Framework) QueueingHint(plugin string, pod *v1.Pod, evt framework.ClusterEvent, oldObj, newObj any) (framework.QueueingHint, error) {
	registered, ok := f.events[plugin]
	if !ok {
		return framework.Queue, nil
	}
	for _, r := range registered {
		if !evt.Match(r.Event) {
			continue
		}
		if r.QueueingHintFn == nil {
			return framework.Queue, nil
		}
		start := time.Now()
		hint, err := r.QueueingHintFn(pod, oldObj, newObj)
		label := metrics.HintQueue
		switch {
		case err != nil:
			hint, label = framework.Queue, metrics.HintError
			err = fmt.Errorf("%s: queueing hint for %s: %w", plugin, evt.Label(), err)
		case hint == framework.QueueSkip:
			label = metrics.HintQueueSkip
		}
		f.opts.Metrics.QueueingHint(plugin, evt.Label(), label, time.Since(start))
		if hint == framework.Queue {
			return hint, err
		}
	}
	return framework.QueueSkip, nil
}

// Handle methods.

func (f *Framework) ClientSet() kubernetes.Interface          { return f.opts.ClientSet }
func (f *Framework) SnapshotLister() framework.NodeInfoLister { return f.opts.Snapshot }
func (f *Framework) Metrics() *metrics.Metrics                { return f.opts.Metrics }

// EventRecorder implements framework.Handle.
func (f *Framework) EventRecorder() events.EventRecorder {
	if f.opts.EventRecorder == nil {
		return dropEvents{}
	}
	return f.opts.EventRecorder
}

// dropEvents is the recorder of a framework built without one (unit tests).
type dropEvents struct{}

func (dropEvents) Eventf(apiruntime.Object, apiruntime.Object, string, string, string, string, ...any) {
}

func (f *Framework) SharedInformerFactory() informers.SharedInformerFactory {
	return f.opts.Informers
}
func (f *Framework) Namespaces() framework.NamespaceLabeler { return f.opts.Namespaces }
func (f *Framework) Parallelism() int                       { return f.opts.Parallelism }
func (f *Framework) Plugin(name string) framework.Plugin    { return f.plugins[name] }
func (f *Framework) HasPostFilterPlugins() bool             { return len(f.postFilter) > 0 }
func (f *Framework) HasScorePlugins() bool                  { return len(f.score) > 0 }
func (f *Framework) HasBindPlugins() bool                   { return len(f.bind) > 0 }

// Parallelize implements framework.Handle with the parallelizer Filter and
// Score use.
func (f *Framework) Parallelize(ctx context.Context, n int, fn func(i int)) {
	parallelize(ctx, f.opts.Parallelism, n, fn)
}

// Go implements framework.Handle.
func (f *Framework) Go(fn func(ctx context.Context)) {
	if f.opts.Go != nil {
		f.opts.Go(fn)
		return
	}
	f.goroutines.Go(func() { fn(context.Background()) })
}

// Wait returns once every goroutine plugins started with Go has, when no
// Options.Go runs them.
func (f *Framework) Wait() { f.goroutines.Wait() }

// Activate implements framework.Handle.
func (f *Framework) Activate(pod *v1.Pod) {
	if f.opts.Queue != nil {
		f.opts.Queue.Activate(pod)
	}
}

// Ungate implements framework.Handle.
func (f *Framework) Ungate(pod *v1.Pod) {
	if f.opts.Queue != nil {
		f.opts.Queue.Ungate(pod)
	}
}

// NominatedPodsForNode implements framework.Handle.
func (f *Framework) NominatedPodsForNode(nodeName string) []*framework.PodInfo {
	if f.opts.Nominator == nil {
		return nil
	}
	return f.opts.Nominator.NominatedPodsForNode(nodeName)
}

// RunPreEnqueuePlugins runs PreEnqueue plugins in order; the first that
// refuses the pod keeps it out of the active queue.
func (f *Framework) RunPreEnqueuePlugins(ctx context.Context, pod *v1.Pod) *framework.Status {
	for _, p := range f.preEnqueue {
		if s := p.PreEnqueue(ctx, pod); !s.IsSuccess() {
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunPreFilterPlugins runs PreFilter plugins in order, as kube-scheduler's
// framework does. An UnschedulableAndUnresolvable rejection ends the attempt
// at once; after an Unschedulable one the remaining plugins still run, so
// that preemption finds every plugin's state (kubernetes/kubernetes#119770),
// and the rejection is returned at the end. Results narrowing the node set
// are intersected; the third value names, sorted, the plugins that narrowed
// it. An empty intersection rejects the pod on every node ("node(s) didn't
// satisfy plugin NodeAffinity").
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status, []string) {
	var result *framework.PreFilterResult
	var narrowedBy []string
	var rejected *framework.Status
	skip := map[string]bool{}
	for _, p := range f.preFilter {
		r, s := p.PreFilter(ctx, state, pod, nodes)
		if s.IsSkip() {
			skip[p.Name()] = true
			continue
		}
		switch s.Code() {
		case framework.Success:
		case framework.UnschedulableAndUnresolvable:
			return nil, s.WithPlugin(p.Name()), nil
		case framework.Unschedulable:
			rejected = s.WithPlugin(p.Name())
			continue
		default:
			return nil, framework.AsStatus(fmt.Errorf("running PreFilter plugin %q: %w", p.Name(), s.AsError())).WithPlugin(p.Name()), nil
		}
		if r == nil || r.NodeNames == nil {
			continue
		}
		narrowedBy = append(narrowedBy, p.Name())
		if result == nil {
			result = &framework.PreFilterResult{NodeNames: r.NodeNames}
		} else {
			merged := map[string]bool{}
			for n := range r.NodeNames {
				if result.NodeNames[n] {
					merged[n] = true
				}
			}
			result.NodeNames = merged
		}
		if len(result.NodeNames) == 0 {
			slices.Sort(narrowedBy)
			msg := fmt.Sprintf("node(s) didn't satisfy plugin(s) %v simultaneously", narrowedBy)
			if len(narrowedBy) == 1 {
				msg = fmt.Sprintf("node(s) didn't satisfy plugin %v", narrowedBy[0])
			}
			return result, framework.NewStatus(framework.UnschedulableAndUnresolvable, msg), narrowedBy
		}
	}
	state.SkipFilterPlugins = skip
	slices.Sort(narrowedBy)
	return result, rejected, narrowedBy
}

// RunPreFilterExtensionAddPod updates PreFilter state for a pod added to nodeInfo.
func (f *Framework) RunPreFilterExtensionAddPod(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod, podToAdd *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	for _, p := range f.preFilter {
		ext, ok := p.(framework.PreFilterExtensions)
		if !ok || state.SkipFilterPlugins[p.Name()] {
			continue
		}
		if s := ext.AddPod(ctx, state, podToSchedule, podToAdd, nodeInfo); !s.IsSuccess() {
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunPreFilterExtensionRemovePod updates PreFilter state for a pod removed from nodeInfo.
func (f *Framework) RunPreFilterExtensionRemovePod(ctx context.Context, state *framework.CycleState, podToSchedule *v1.Pod, podToRemove *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	for _, p := range f.preFilter {
		ext, ok := p.(framework.PreFilterExtensions)
		if !ok || state.SkipFilterPlugins[p.Name()] {
			continue
		}
		if s := ext.RemovePod(ctx, state, podToSchedule, podToRemove, nodeInfo); !s.IsSuccess() {
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunFilterPlugins runs the Filter plugins on one node and returns the first
// rejection (later plugins are not consulted, as in kube-scheduler).
func (f *Framework) RunFilterPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	return runFilters(ctx, f.activeFilters(state), state, pod, nodeInfo)
}

// runFilters runs filters in order on one node and returns the first
// rejection; nil means the node passed.
func runFilters(ctx context.Context, filters []framework.FilterPlugin, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	for _, p := range filters {
		if s := runFilter(ctx, p, state, pod, nodeInfo); s != nil {
			return s
		}
	}
	return nil
}

// RunFilterPluginsWithNominatedPods runs the Filter plugins on one node as
// kube-scheduler does when pods are nominated there: first with the
// nominated pods of priority at least the pod's counted as placed (the pod
// must not take room preemption freed for them), then, if that passed,
// without them (they may yet go elsewhere, and rules such as pod affinity
// may only hold without them). A node without such pods is filtered once.
func (f *Framework) RunFilterPluginsWithNominatedPods(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	return f.runFiltersWithNominatedPods(ctx, f.activeFilters(state), state, pod, nodeInfo)
}

func (f *Framework) runFiltersWithNominatedPods(ctx context.Context, filters []framework.FilterPlugin, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	withNominated, nodeWithNominated, err := f.addNominatedPods(ctx, state, pod, nodeInfo)
	if err != nil {
		return framework.AsStatus(err)
	}
	if withNominated == nil {
		return runFilters(ctx, filters, state, pod, nodeInfo)
	}
	if s := runFilters(ctx, filters, withNominated, pod, nodeWithNominated); s != nil {
		return s
	}
	return runFilters(ctx, filters, state, pod, nodeInfo)
}

// addNominatedPods returns copies of state and nodeInfo with the pods
// nominated to the node whose priority is at least pod's added (nil, nil
// when there are none).
func (f *Framework) addNominatedPods(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (*framework.CycleState, *framework.NodeInfo, error) {
	if f.opts.Nominator == nil {
		return nil, nil, nil
	}
	nominated := f.opts.Nominator.NominatedPodsForNode(nodeInfo.NodeName())
	if len(nominated) == 0 {
		return nil, nil, nil
	}
	prio := corev1helpers.PodPriority(pod)
	var stateOut *framework.CycleState
	var nodeOut *framework.NodeInfo
	for _, pi := range nominated {
		if pi.Pod.UID == pod.UID || corev1helpers.PodPriority(pi.Pod) < prio {
			continue
		}
		if nodeOut == nil {
			stateOut, nodeOut = state.Clone(), nodeInfo.Clone()
		}
		nodeOut.AddPodInfo(pi)
		if s := f.RunPreFilterExtensionAddPod(ctx, stateOut, pod, pi, nodeOut); !s.IsSuccess() {
			return nil, nil, s.AsError()
		}
	}
	return stateOut, nodeOut, nil
}

// runFilter runs one Filter plugin; nil means the node passed. Anything but
// a rejection is an error naming the plugin, in kube-scheduler's words: it
// may end up in the pod's condition.
func runFilter(ctx context.Context, p framework.FilterPlugin, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	s := p.Filter(ctx, state, pod, nodeInfo)
	if s.IsSuccess() {
		return nil
	}
	if !s.IsRejected() {
		err := s.AsError()
		if s.Code() != framework.Error {
			err = fmt.Errorf("unexpected code %s", s.Code())
		}
		s = framework.AsStatus(fmt.Errorf("running %q filter plugin: %w", p.Name(), err))
	}
	return s.WithPlugin(p.Name())
}

// activeFilters lists the Filter plugins whose PreFilter did not Skip, so
// that filtering many nodes looks the skips up once, not per node and plugin.
func (f *Framework) activeFilters(state *framework.CycleState) []framework.FilterPlugin {
	if len(state.SkipFilterPlugins) == 0 {
		return f.filter
	}
	active := make([]framework.FilterPlugin, 0, len(f.filter))
	for _, p := range f.filter {
		if !state.SkipFilterPlugins[p.Name()] {
			active = append(active, p)
		}
	}
	return active
}

// FindFeasibleNodes filters nodes in parallel, visiting them round-robin from
// start, and stops once want nodes passed (want <= 0 means all). It returns
// the feasible nodes, the rejection of every node that failed, and how many
// nodes were visited (so the caller can rotate start). An Error status from
// any plugin aborts the search with a *framework.NodeError naming the node.
func (f *Framework) FindFeasibleNodes(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, start, want int) ([]*framework.NodeInfo, framework.NodeToStatus, int, error) {
	n := len(nodes)
	if want <= 0 || want > n {
		want = n
	}
	if len(f.filter) == 0 {
		out := make([]*framework.NodeInfo, 0, want)
		for i := 0; i < want; i++ {
			out = append(out, nodes[(start+i)%n])
		}
		return out, framework.NodeToStatus{}, want, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	feasible := make([]*framework.NodeInfo, want)
	var found atomic.Int32
	var processed atomic.Int32
	var mu sync.Mutex
	statuses := framework.NodeToStatus{}
	var firstErr error
	filters := f.activeFilters(state)
	parallelize(ctx, f.opts.Parallelism, n, func(i int) {
		ni := nodes[(start+i)%n]
		s := f.runFiltersWithNominatedPods(ctx, filters, state, pod, ni)
		processed.Add(1)
		switch {
		case s.IsSuccess():
			k := found.Add(1)
			if int(k) > want {
				return
			}
			feasible[k-1] = ni
			if int(k) == want {
				cancel()
			}
		case s.Code() == framework.Error:
			mu.Lock()
			if firstErr == nil {
				firstErr = &framework.NodeError{Node: ni.NodeName(), Err: s.AsError()}
			}
			mu.Unlock()
			cancel()
		default:
			mu.Lock()
			statuses[ni.NodeName()] = s
			mu.Unlock()
		}
	})
	if firstErr != nil {
		return nil, nil, 0, firstErr
	}
	k := min(int(found.Load()), want)
	return feasible[:k], statuses, int(processed.Load()), nil
}

// RunPostFilterPlugins runs PostFilter plugins in order, as kube-scheduler's
// framework does: the first that succeeds, or that rejects the pod as
// UnschedulableAndUnresolvable (nothing any other plugin could do would
// help), ends the run with its own answer. Any code other than a rejection
// is an Error. After Unschedulable rejections the status gathers every
// plugin's reasons, in order, and names the first plugin that rejected; the
// result is the last one a plugin returned (one that clears the pod's
// nominated node).
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, filtered framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	var result *framework.PostFilterResult
	var reasons []string
	rejector := ""
	for _, p := range f.postFilter {
		r, s := p.PostFilter(ctx, state, pod, filtered)
		switch {
		case s.IsSuccess():
			return r, nil
		case s.Code() == framework.UnschedulableAndUnresolvable:
			return r, s.WithPlugin(p.Name())
		case s.Code() == framework.Error:
			// The message is the plugin's own, as kube-scheduler passes it
			// on: it ends up in the pod's condition, where the plugin's
			// prefix ("preemption: ") already says who failed.
			return nil, framework.AsStatus(s.AsError()).WithPlugin(p.Name())
		case !s.IsRejected():
			return nil, framework.NewStatus(framework.Error, fmt.Sprintf("PostFilter plugin %q returned unexpected code %s", p.Name(), s.Code())).WithPlugin(p.Name())
		}
		if r != nil {
			result = r
		}
		reasons = append(reasons, s.Reasons()...)
		if rejector == "" {
			rejector = p.Name()
		}
	}
	return result, framework.NewStatus(framework.Unschedulable, reasons...).WithPlugin(rejector)
}

// RunPreScorePlugins runs PreScore plugins; Skip excludes that plugin's Score.
func (f *Framework) RunPreScorePlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	skip := map[string]bool{}
	for _, p := range f.preScore {
		s := p.PreScore(ctx, state, pod, nodes)
		if s.IsSkip() {
			skip[p.Name()] = true
			continue
		}
		if !s.IsSuccess() {
			return s.WithPlugin(p.Name())
		}
	}
	state.SkipScorePlugins = skip
	return nil
}

// RunScorePlugins scores every node with every active score plugin (in
// parallel over nodes), normalizes each plugin's scores, applies weights and
// returns the totals in node order.
func (f *Framework) RunScorePlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) ([]framework.NodeScore, *framework.Status) {
	var active []framework.ScorePlugin
	for _, p := range f.score {
		if !state.SkipScorePlugins[p.Name()] {
			active = append(active, p)
		}
	}
	f.scoreMu.Lock()
	defer f.scoreMu.Unlock()
	n := len(nodes)
	if need := len(active) * n; cap(f.scoreScratch) < need {
		f.scoreScratch = make([]framework.NodeScore, need)
	}
	perPlugin := make([][]framework.NodeScore, len(active))
	for i := range perPlugin {
		perPlugin[i] = f.scoreScratch[i*n : (i+1)*n : (i+1)*n]
	}
	var errMu sync.Mutex
	var firstErr *framework.Status
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parallelize(ctx, f.opts.Parallelism, len(nodes), func(i int) {
		ni := nodes[i]
		name := ni.NodeName()
		for j, p := range active {
			sc, s := p.Score(ctx, state, pod, ni)
			if !s.IsSuccess() {
				errMu.Lock()
				if firstErr == nil {
					firstErr = framework.AsStatus(fmt.Errorf("plugin %q scoring node %q: %w", p.Name(), name, s.AsError())).WithPlugin(p.Name())
				}
				errMu.Unlock()
				cancel()
				return
			}
			perPlugin[j][i] = framework.NodeScore{Name: name, Score: sc}
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	totals := make([]framework.NodeScore, len(nodes))
	for i, ni := range nodes {
		totals[i].Name = ni.NodeName()
	}
	for j, p := range active {
		scores := perPlugin[j]
		if n, ok := p.(framework.ScoreNormalizer); ok {
			if s := n.NormalizeScore(ctx, state, pod, scores); !s.IsSuccess() {
				return nil, s.WithPlugin(p.Name())
			}
		}
		w := f.weights[p.Name()]
		for i := range scores {
			if scores[i].Score < framework.MinNodeScore || scores[i].Score > framework.MaxNodeScore {
				return nil, framework.AsStatus(fmt.Errorf("plugin %q gave node %q score %d outside [%d, %d]", p.Name(), scores[i].Name, scores[i].Score, framework.MinNodeScore, framework.MaxNodeScore)).WithPlugin(p.Name())
			}
			totals[i].Score += scores[i].Score * w
		}
	}
	return totals, nil
}

// RunReservePlugins reserves on nodeName; on failure it unreserves what was
// already reserved and returns the failure.
func (f *Framework) RunReservePlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	for _, p := range f.reserve {
		if s := p.Reserve(ctx, state, pod, nodeName); !s.IsSuccess() {
			f.RunUnreservePlugins(ctx, state, pod, nodeName)
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunUnreservePlugins undoes Reserve, in reverse order.
func (f *Framework) RunUnreservePlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) {
	for i := len(f.reserve) - 1; i >= 0; i-- {
		f.reserve[i].Unreserve(ctx, state, pod, nodeName)
	}
}

// RunPreBindPlugins runs every PreBind plugin in order, stopping at the
// first failure.
func (f *Framework) RunPreBindPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	for _, p := range f.preBind {
		if s := p.PreBind(ctx, state, pod, nodeName); !s.IsSuccess() {
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunBindPlugins asks bind plugins in order until one does not Skip.
func (f *Framework) RunBindPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	for _, p := range f.bind {
		s := p.Bind(ctx, state, pod, nodeName)
		if s.IsSkip() {
			continue
		}
		return s.WithPlugin(p.Name())
	}
	return framework.NewStatus(framework.Error, "every bind plugin skipped the pod")
}
