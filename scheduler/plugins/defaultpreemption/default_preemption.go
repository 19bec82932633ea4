package defaultpreemption

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/metrics"
)

const (
	// Name is the plugin's registry name.
	Name = "DefaultPreemption"
	// ReasonNotHelpful is counted for nodes where evicting pods cannot help.
	ReasonNotHelpful = "Preemption is not helpful for scheduling"
	// ReasonNoVictims is counted for nodes holding no lower-priority pod (where evicting
	// them all is not enough, the Filter's own reason is counted instead).
	ReasonNoVictims = "No preemption victims found for incoming pod"
	// MsgPolicyNever is the verdict for pods with preemptionPolicy: Never (the
	// FitError message adds the final period, as for every part).
	MsgPolicyNever = "preemption: not eligible due to preemptionPolicy=Never"
	// MsgTerminating is the verdict while victims of an earlier preemption are still going away.
	MsgTerminating = "preemption: not eligible due to a terminating pod on the nominated node"
	// MsgBound is the verdict for a pod bound to a node (%q) while it was being scheduled.
	MsgBound = "preemption: the pod is already bound to node %q"
	// MsgPreempting is PreEnqueue's verdict on a pod whose victims are being deleted.
	MsgPreempting = "waiting for the preemption for this pod to be finished"
)

// DefaultPreemption implements PostFilter.
type DefaultPreemption struct {
	h framework.Handle
	// pdbs lists PodDisruptionBudgets: victims are chosen to violate as few
	// as possible (nil without an informer factory: no budget is known).
	pdbs policylisters.PodDisruptionBudgetLister
	// pods reads the preemptor as the informer last saw it (nil without an
	// informer factory: the pod the scheduler passes is taken as it is).
	pods corelisters.PodLister
	// args bound the dry run; defaults filled in.
	args Args
	// offset picks, among n potential nodes, the one the dry run starts at:
	// at random, as kube-scheduler, so that preemptions spread over the
	// cluster rather than always hitting the first nodes (tests fix it).
	offset func(n int) int

	mu sync.Mutex
	// preempting holds the pods whose victims a goroutine is deleting:
	// PreEnqueue keeps them out of the active queue meanwhile.
	preempting map[types.UID]bool
}

// New builds the plugin from Args (nil for kube-scheduler's defaults).
func New(args any, h framework.Handle) (framework.Plugin, error) {
	if h == nil || h.ClientSet() == nil {
		return nil, errors.New("DefaultPreemption needs a clientset")
	}
	a, _, err := framework.PluginArgs[Args](Name, args)
	if err != nil {
		return nil, err
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	pl := &DefaultPreemption{h: h, args: a.WithDefaults(), offset: rand.IntN, preempting: map[types.UID]bool{}}
	if f := h.SharedInformerFactory(); f != nil {
		pl.pdbs = f.Policy().V1().PodDisruptionBudgets().Lister()
		pl.pods = f.Core().V1().Pods().Lister()
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (*DefaultPreemption) Name() string { return Name }

// Candidate is a node and the pods to evict from it.
type Candidate struct {
	Node    string
	Victims []*v1.Pod
	// NumPDBViolations counts victims whose eviction exceeds a
	// PodDisruptionBudget's allowed disruptions.
	NumPDBViolations int
}

// PostFilter finds a candidate and nominates its node, for the latest
// version of pod (see latest); a pod bound meanwhile needs no room. The
// victims are deleted afterwards, on a goroutine (see preemptAsync), as
// kube-scheduler v1.33's SchedulerAsyncPreemption: the nomination keeps
// their room for pod meanwhile, and the cycle goes on to other pods.
// When no node is a candidate, its result clears the pod's nominated node,
// as kube-scheduler's: preemption cannot make room there any more. A pod
// not eligible to preempt keeps its nomination (its victims may still be
// going away).
func (pl *DefaultPreemption) PostFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, filtered framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	pod, err := pl.latest(pod)
	if err != nil {
		return nil, failed(err)
	}
	if pod.Spec.NodeName != "" {
		return nil, framework.NewStatus(framework.Unschedulable, fmt.Sprintf(MsgBound, pod.Spec.NodeName))
	}
	if msg := pl.ineligible(pod, filtered); msg != "" {
		return nil, framework.NewStatus(framework.Unschedulable, msg)
	}
	candidates, statuses, err := pl.FindCandidates(ctx, state, pod, filtered)
	if err != nil {
		return nil, failed(err)
	}
	if len(candidates) == 0 {
		fe := &framework.FitError{Pod: pod, NumAllNodes: len(statuses), Diagnosis: framework.Diagnosis{NodeToStatus: statuses}}
		msg := fe.Error()
		return &framework.PostFilterResult{}, framework.NewStatus(framework.Unschedulable, "preemption: "+msg[:len(msg)-1])
	}
	best := SelectCandidate(candidates)
	pl.preemptAsync(pod, best)
	return &framework.PostFilterResult{NominatedNodeName: best.Node}, nil
}

// PreEnqueue keeps a pod out of the active queue while its victims are
// being deleted, as kube-scheduler's: an attempt meanwhile would find the
// node still full and preempt again.
func (pl *DefaultPreemption) PreEnqueue(_ context.Context, pod *v1.Pod) *framework.Status {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.preempting[pod.UID] {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, MsgPreempting)
	}
	return nil
}

// preemptAsync clears the less important nominations on c's node and
// deletes c's victims on one of the scheduler's goroutines (in parallel, as
// kube-scheduler's prepareCandidateAsync), holding preemptor at PreEnqueue
// until it is done. Then the pod goes on: a preemption that failed (a victim
// not deleted, a less important nomination not cleared) puts it back in the
// active queue (Handle.Activate, as upstream), to be retried
// rather than wait for events that may never come; one that succeeded lets
// a pod an event retried meanwhile go on (Handle.Ungate), while one still
// waiting among the unschedulable waits for its victims to be gone. Upstream
// instead lets the pod go before deleting the last victim, so that this
// victim's deletion event finds it admitted; Ungate needs no such order.
// The goroutine ends with the scheduler (a lost leadership term): it then
// deletes nothing more, and the pod, in a queue that is gone, needs nothing.
func (pl *DefaultPreemption) preemptAsync(preemptor *v1.Pod, c Candidate) {
	// Counted when the victims are chosen, as kube-scheduler's asynchronous preemption does.
	pl.h.Metrics().PreemptionVictims(len(c.Victims))
	pl.mu.Lock()
	pl.preempting[preemptor.UID] = true
	pl.mu.Unlock()
	pl.h.Go(func(ctx context.Context) {
		start := time.Now()
		err := pl.prepareCandidate(ctx, preemptor, c)
		pl.mu.Lock()
		delete(pl.preempting, preemptor.UID)
		pl.mu.Unlock()
		// Counted and timed by result, as kube-scheduler's goroutine
		// (whose deferred calls, in v1.33, fix the label and the duration
		// when the goroutine starts: "success" and about 0, whatever
		// happens; skiff records what did). One stopped with the scheduler
		// did not get its work done: an error.
		result := metrics.GoroutineSuccess
		if err != nil {
			result = metrics.GoroutineError
		}
		pl.h.Metrics().PreemptionGoroutine(result, time.Since(start))
		switch {
		case ctx.Err() != nil:
		case err != nil:
			slog.Default().Error("preemption failed", "preemptor", preemptor.Namespace+"/"+preemptor.Name, "node", c.Node, "err", err)
			pl.h.Activate(preemptor)
		default:
			pl.h.Ungate(preemptor)
		}
	})
}

// prepareCandidate clears the less important nominations on c's node and
// deletes c's victims, in parallel, stopping at the first error or once ctx
// ends. A nomination it could not clear makes the preemption fail too, but
// the victims are deleted all the same, as kube-scheduler v1.33's goroutine
// does: the preemptor is then retried at once.
func (pl *DefaultPreemption) prepareCandidate(ctx context.Context, preemptor *v1.Pod, c Candidate) error {
	var clearErr error
	if err := pl.clearLowerNominations(ctx, preemptor, c.Node); err != nil {
		clearErr = fmt.Errorf("clearing the nominated node of lower-priority pods: %w", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pl.h.Parallelize(ctx, len(c.Victims), func(i int) {
		if ctx.Err() != nil {
			// Parallelize may have handed out this index before the end.
			return
		}
		victim := c.Victims[i]
		if err := pl.preempt(ctx, preemptor, victim, c.Node); err != nil {
			cancel(fmt.Errorf("preempting pod %s/%s: %w", victim.Namespace, victim.Name, err))
		}
	})
	return errors.Join(clearErr, context.Cause(ctx))
}

// latest returns the preemptor as the informer last saw it, as
// kube-scheduler's preemption does first: the scheduler's copy is the one
// it popped from its queue, and the pod may since have been deleted (then
// preempting would evict pods for nothing: an error, as upstream, and no
// victim), replaced by another of the same name, bound, or nominated to a
// node. Only the nomination this scheduler made itself is kept from its
// copy when the informer has not seen it yet: the status write carrying it
// is asynchronous, and the nominator still holding the pod on that node
// says no one cleared it since.
func (pl *DefaultPreemption) latest(pod *v1.Pod) (*v1.Pod, error) {
	if pl.pods == nil {
		return pod, nil
	}
	cur, err := pl.pods.Pods(pod.Namespace).Get(pod.Name)
	if err != nil {
		return nil, fmt.Errorf("getting the latest version of the pod: %w", err)
	}
	if cur.UID != pod.UID {
		return nil, fmt.Errorf("pod %s/%s was replaced by another of the same name (UID %s)", pod.Namespace, pod.Name, cur.UID)
	}
	nom := pod.Status.NominatedNodeName
	if cur.Status.NominatedNodeName == "" && nom != "" && pl.nominatedTo(pod, nom) {
		cur = cur.DeepCopy()
		cur.Status.NominatedNodeName = nom
	}
	return cur, nil
}

// nominatedTo reports whether the scheduler keeps room on node for pod.
func (pl *DefaultPreemption) nominatedTo(pod *v1.Pod, node string) bool {
	for _, pi := range pl.h.NominatedPodsForNode(node) {
		if pi.Pod.UID == pod.UID {
			return true
		}
	}
	return false
}

// failed is the Error status of a preemption that could not be carried out.
// Its message, prefixed as every verdict of this plugin is, ends up in the
// pod's PodScheduled condition, as kube-scheduler's does.
func failed(err error) *framework.Status {
	return framework.AsStatus(fmt.Errorf("preemption: %w", err))
}

// clearLowerNominations clears the nominatedNodeName of the pods of lower
// priority than pod nominated to node, as kube-scheduler does after a
// preemption: pod takes the room kept for them, so they had better look for
// another node (or preempt elsewhere) than wait for this one. Each write is
// retried through a transient error (framework.PatchPodStatus). It returns
// the failures (a pod gone needs no clearing), which, as upstream's, do not
// stop the preemption.
func (pl *DefaultPreemption) clearLowerNominations(ctx context.Context, pod *v1.Pod, node string) error {
	prio := corev1helpers.PodPriority(pod)
	var errs []error
	for _, pi := range pl.h.NominatedPodsForNode(node) {
		if ctx.Err() != nil {
			// Leadership lost: the next leader judges the nominations again.
			return utilerrors.NewAggregate(errs)
		}
		p := pi.Pod
		if p.UID == pod.UID || corev1helpers.PodPriority(p) >= prio || p.Status.NominatedNodeName == "" {
			continue
		}
		err := framework.PatchPodStatus(ctx, pl.h.ClientSet(), p.Namespace, p.Name, []byte(`{"status":{"nominatedNodeName":null}}`))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	return utilerrors.NewAggregate(errs)
}

// preempt marks victim with the DisruptionTarget condition, then deletes it,
// as kube-scheduler does: the condition tells the victim's owner (a Job's
// podFailurePolicy, a user reading kubectl describe) why it is going. A
// victim already terminating is marked and deleted all the same, as v1.33
// (which makes both calls too; v1.35 skips them): the deletion keeps its
// grace period, and the condition still says preemption wants it gone.
func (pl *DefaultPreemption) preempt(ctx context.Context, preemptor, victim *v1.Pod, node string) error {
	pods := pl.h.ClientSet().CoreV1().Pods(victim.Namespace)
	if !hasDisruptionTarget(victim) {
		apply := corev1apply.Pod(victim.Name, victim.Namespace).WithStatus(corev1apply.PodStatus().WithConditions(
			corev1apply.PodCondition().WithType(v1.DisruptionTarget).WithStatus(v1.ConditionTrue).
				WithReason(v1.PodReasonPreemptionByScheduler).
				WithMessage(preemptor.Spec.SchedulerName + ": preempting to accommodate a higher priority pod").
				WithLastTransitionTime(metav1.Now())))
		_, err := pods.ApplyStatus(ctx, apply, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("add the DisruptionTarget condition: %w", err)
		}
	}
	err := pods.Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &victim.UID}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pl.h.EventRecorder().Eventf(victim, preemptor, v1.EventTypeNormal, "Preempted", "Preempting", "Preempted by pod %v on node %v", preemptor.UID, node)
	return nil
}

// fieldManager owns the condition preemption applies, as kube-scheduler's.
const fieldManager = "kube-scheduler"

func hasDisruptionTarget(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

// ineligible returns why pod may not preempt, or "". As kube-scheduler's
// PodEligibleToPreemptOthers: a pod whose nominated node still holds a
// lower-priority pod that preemption is evicting waits for that room rather
// than evicting more, unless Filter found the node no longer usable at all
// (UnschedulableAndUnresolvable: tainted, cordoned, gone). A pod going away
// for any other reason (deleted by its owner, evicted) holds no room for
// this pod and does not count.
func (pl *DefaultPreemption) ineligible(pod *v1.Pod, filtered framework.NodeToStatus) string {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return MsgPolicyNever
	}
	nom := pod.Status.NominatedNodeName
	if nom == "" {
		return ""
	}
	if s, ok := filtered[nom]; !ok || s.Code() == framework.UnschedulableAndUnresolvable {
		return ""
	}
	if ni, err := pl.h.SnapshotLister().Get(nom); err == nil {
		prio := corev1helpers.PodPriority(pod)
		for _, p := range ni.Pods {
			if corev1helpers.PodPriority(p.Pod) < prio && terminatingByPreemption(p.Pod) {
				return MsgTerminating
			}
		}
	}
	return ""
}

// terminatingByPreemption reports whether p is being deleted because the
// scheduler preempted it: its first DisruptionTarget condition is True for
// PreemptionByScheduler.
func terminatingByPreemption(p *v1.Pod) bool {
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			return c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler
		}
	}
	return false
}

// FindCandidates simulates preemption on the nodes the pod failed on for a
// reason preemption can fix (Filter said Unschedulable), as kube-scheduler
// does: not on all of them, but from a random one onwards until it has found
// as many candidates as Args ask, at least one of them violating no
// PodDisruptionBudget. It also returns, for the message, why every node it
// simulated or left out is no candidate.
func (pl *DefaultPreemption) FindCandidates(ctx context.Context, state *framework.CycleState, pod *v1.Pod, filtered framework.NodeToStatus) ([]Candidate, framework.NodeToStatus, error) {
	statuses := framework.NodeToStatus{}
	var potential []*framework.NodeInfo
	for _, ni := range pl.h.SnapshotLister().List() {
		if s, ok := filtered[ni.NodeName()]; ok && s.Code() == framework.Unschedulable {
			potential = append(potential, ni)
			continue
		}
		// Filter ruled the node out whatever runs there (or never looked at it).
		statuses[ni.NodeName()] = framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonNotHelpful)
	}
	if len(potential) == 0 {
		return nil, statuses, nil
	}
	pdbs, err := pl.budgets()
	if err != nil {
		return nil, nil, err
	}
	candidates, err := pl.dryRun(ctx, state, pod, potential, pdbs, statuses)
	if err != nil {
		return nil, nil, err
	}
	return candidates, statuses, nil
}

// budgets lists the PodDisruptionBudgets, parsed; none without a lister.
func (pl *DefaultPreemption) budgets() ([]budget, error) {
	if pl.pdbs == nil {
		return nil, nil
	}
	list, err := pl.pdbs.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	return parseBudgets(list), nil
}

// dryRun selects victims on the potential nodes round-robin from a random
// offset, recording in statuses why each node that cannot be one is no
// candidate. It stops once it holds the number of candidates Args ask for
// and one of them violates no PodDisruptionBudget: that one would win the
// choice over any violating candidate found later, and more would cost a
// simulation each. It keeps at most that number of each kind, violating
// candidates last. As kube-scheduler, a node whose simulation errs is no
// candidate, and the errors are returned, together in visiting order, only
// when no node is one: a plugin failing on one node does not stop
// preemption on the others.
//
// The simulations run in parallel on the Filter phase's goroutines, as
// kube-scheduler's DryRunPreemption, but in rounds: each simulates as many
// nodes as candidates are still wanted (at least one per goroutine) and is
// counted in visiting order once it is over. So the candidates, their order
// (which breaks SelectCandidate's ties) and the stop are those of a walk
// node by node however the goroutines run, where kube-scheduler keeps
// whichever it finds first; and the nodes simulated past the stop are at
// most the last round's surplus over the candidates it still wanted.
func (pl *DefaultPreemption) dryRun(ctx context.Context, state *framework.CycleState, pod *v1.Pod, potential []*framework.NodeInfo, pdbs []budget, statuses framework.NodeToStatus) ([]Candidate, error) {
	n := len(potential)
	offset, want := pl.offset(n), pl.args.numCandidates(n)
	var nonViolating, violating []Candidate
	var errs []error
	var round []simulation
	for visited := 0; visited < n; {
		need := max(want-len(nonViolating)-len(violating), 1)
		size := min(max(need, pl.h.Parallelism()), n-visited)
		round = slices.Grow(round[:0], size)[:size]
		first := offset + visited
		pl.h.Parallelize(ctx, size, func(i int) {
			ni := potential[(first+i)%n]
			c, s := pl.selectVictimsOnNode(ctx, state, pod, ni, pdbs)
			round[i] = simulation{node: ni.NodeName(), c: c, s: s}
		})
		if err := ctx.Err(); err != nil {
			// Parallelize stopped handing out nodes: the round is not whole.
			return nil, err
		}
		for _, sim := range round {
			visited++
			switch {
			case sim.s.Code() == framework.Error:
				errs = append(errs, sim.s.AsError())
			case !sim.s.IsSuccess():
				statuses[sim.node] = sim.s
			case sim.c.NumPDBViolations == 0:
				if len(nonViolating) < want {
					nonViolating = append(nonViolating, sim.c)
				}
			default:
				if len(violating) < want {
					violating = append(violating, sim.c)
				}
			}
			if len(nonViolating) > 0 && len(nonViolating)+len(violating) >= want {
				return append(nonViolating, violating...), nil
			}
		}
	}
	candidates := append(nonViolating, violating...)
	if len(candidates) == 0 && len(errs) > 0 {
		// One message as kube-scheduler's: the errors, "[a, b]" for several.
		return nil, utilerrors.NewAggregate(errs)
	}
	return candidates, nil
}

// simulation is what selectVictimsOnNode made of one node.
type simulation struct {
	node string
	c    Candidate
	s    *framework.Status
}

// selectVictimsOnNode removes all lower-priority pods on a copy of ni, checks
// that pod fits, then reprieves pods from the most important down while it
// still fits: first those whose eviction would violate a PodDisruptionBudget,
// then the others. Every check counts the pods nominated to the node whose
// priority is at least pod's, as kube-scheduler's dry run does: the room an
// earlier preemption freed for a more important pod is not pod's to take.
// As in kube-scheduler, a node without lower-priority pods says "No
// preemption victims found", a node where evicting all of them is not
// enough gives the Filter's own rejection (e.g. "Insufficient cpu"), and a
// node where the pod fits with all of them back is an error.
func (pl *DefaultPreemption) selectVictimsOnNode(ctx context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo, pdbs []budget) (Candidate, *framework.Status) {
	prio := corev1helpers.PodPriority(pod)
	var lower []*framework.PodInfo
	for _, p := range ni.Pods {
		if corev1helpers.PodPriority(p.Pod) < prio {
			lower = append(lower, p)
		}
	}
	if len(lower) == 0 {
		return Candidate{}, framework.NewStatus(framework.UnschedulableAndUnresolvable, ReasonNoVictims)
	}
	node := ni.Clone()
	st := state.Clone()
	for _, p := range lower {
		node.RemovePod(p.Pod)
		if s := pl.h.RunPreFilterExtensionRemovePod(ctx, st, pod, p, node); !s.IsSuccess() {
			return Candidate{}, framework.AsStatus(s.AsError())
		}
	}
	if s := pl.h.RunFilterPluginsWithNominatedPods(ctx, st, pod, node); !s.IsSuccess() {
		return Candidate{}, s
	}
	// Most important first: those are the ones worth keeping (higher priority, then running
	// longer, as kube-scheduler's MoreImportantPod).
	now := time.Now()
	sort.SliceStable(lower, func(i, j int) bool {
		pi, pj := corev1helpers.PodPriority(lower[i].Pod), corev1helpers.PodPriority(lower[j].Pod)
		if pi != pj {
			return pi > pj
		}
		return startTime(lower[i].Pod, now).Before(startTime(lower[j].Pod, now))
	})
	violating, nonViolating := splitByPDBViolation(lower, pdbs)
	c := Candidate{Node: ni.NodeName()}
	reprieve := func(p *framework.PodInfo) (bool, *framework.Status) {
		node.AddPodInfo(p)
		if s := pl.h.RunPreFilterExtensionAddPod(ctx, st, pod, p, node); !s.IsSuccess() {
			return false, framework.AsStatus(s.AsError())
		}
		if s := pl.h.RunFilterPluginsWithNominatedPods(ctx, st, pod, node); s.IsSuccess() {
			return true, nil
		}
		node.RemovePod(p.Pod)
		if s := pl.h.RunPreFilterExtensionRemovePod(ctx, st, pod, p, node); !s.IsSuccess() {
			return false, framework.AsStatus(s.AsError())
		}
		c.Victims = append(c.Victims, p.Pod)
		return false, nil
	}
	for _, p := range violating {
		kept, s := reprieve(p)
		if s != nil {
			return Candidate{}, s
		}
		if !kept {
			c.NumPDBViolations++
		}
	}
	for _, p := range nonViolating {
		if _, s := reprieve(p); s != nil {
			return Candidate{}, s
		}
	}
	if len(c.Victims) == 0 {
		// The pod fits without evicting anything, though Filter said it did
		// not: Filter and the simulation disagree, which kube-scheduler
		// treats as an error of the simulation rather than a rejection.
		return Candidate{}, framework.AsStatus(fmt.Errorf("expected at least one victim pod on node %q", ni.NodeName()))
	}
	return c, nil
}

// budget is a PodDisruptionBudget with its selector parsed once per preemption.
type budget struct {
	pdb *policyv1.PodDisruptionBudget
	sel labels.Selector
}

// parseBudgets keeps the budgets that can select pods: a nil, empty or
// invalid selector matches none.
func parseBudgets(pdbs []*policyv1.PodDisruptionBudget) []budget {
	out := make([]budget, 0, len(pdbs))
	for _, pdb := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		out = append(out, budget{pdb: pdb, sel: sel})
	}
	return out
}

// splitByPDBViolation sorts pods (keeping their order) into those whose
// eviction, counted in order, would exceed the allowed disruptions of a
// PodDisruptionBudget selecting them, and the others. Pods a budget already
// lists as disrupted do not count against it again.
func splitByPDBViolation(pods []*framework.PodInfo, pdbs []budget) (violating, nonViolating []*framework.PodInfo) {
	if len(pdbs) == 0 {
		return nil, pods
	}
	allowed := make([]int32, len(pdbs))
	for i := range pdbs {
		allowed[i] = pdbs[i].pdb.Status.DisruptionsAllowed
	}
	for _, p := range pods {
		violates := false
		if len(p.Pod.Labels) > 0 {
			for i, b := range pdbs {
				if b.pdb.Namespace != p.Pod.Namespace || !b.sel.Matches(labels.Set(p.Pod.Labels)) {
					continue
				}
				if _, done := b.pdb.Status.DisruptedPods[p.Pod.Name]; done {
					continue
				}
				allowed[i]--
				if allowed[i] < 0 {
					violates = true
				}
			}
		}
		if violates {
			violating = append(violating, p)
		} else {
			nonViolating = append(nonViolating, p)
		}
	}
	return violating, nonViolating
}

// SelectCandidate picks, as kube-scheduler does, the candidate with the
// fewest PodDisruptionBudget violations, then whose most important victim is
// least important, then the smallest sum of victim priorities, then the
// fewest victims.
func SelectCandidate(cs []Candidate) Candidate {
	best := 0
	for i := 1; i < len(cs); i++ {
		if better(cs[i], cs[best]) {
			best = i
		}
	}
	return cs[best]
}

func better(a, b Candidate) bool {
	if a.NumPDBViolations != b.NumPDBViolations {
		return a.NumPDBViolations < b.NumPDBViolations
	}
	ha, hb := highest(a.Victims), highest(b.Victims)
	if ha != hb {
		return ha < hb
	}
	sa, sb := sum(a.Victims), sum(b.Victims)
	if sa != sb {
		return sa < sb
	}
	if len(a.Victims) != len(b.Victims) {
		return len(a.Victims) < len(b.Victims)
	}
	// Last, as kube-scheduler: the node whose most important victims started latest, so
	// the pods that have run longest keep running.
	now := time.Now()
	return earliestStart(a.Victims, now).After(earliestStart(b.Victims, now))
}

// earliestStart is when the first of the highest-priority victims started.
func earliestStart(ps []*v1.Pod, now time.Time) time.Time {
	top, earliest := highest(ps), now
	for _, p := range ps {
		if corev1helpers.PodPriority(p) == top {
			if t := startTime(p, now); t.Before(earliest) {
				earliest = t
			}
		}
	}
	return earliest
}

// startTime is when the pod started on its node; now for one not started yet.
func startTime(p *v1.Pod, now time.Time) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return now
}

func highest(ps []*v1.Pod) int32 {
	h := int32(-1 << 31)
	for _, p := range ps {
		h = max(h, corev1helpers.PodPriority(p))
	}
	return h
}

// sum adds priorities shifted by 2^31 to be non-negative (as kube-scheduler
// does), so that negative priorities don't make more victims look cheaper.
func sum(ps []*v1.Pod) int64 {
	var s int64
	for _, p := range ps {
		s += int64(corev1helpers.PodPriority(p)) + 1<<31
	}
	return s
}
