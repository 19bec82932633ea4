package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/skiffkube/skiff/scheduler/framework"
	"github.com/skiffkube/skiff/scheduler/metrics"
	"github.com/skiffkube/skiff/scheduler/queue"
)

// ErrNoNodesAvailable is the failure when the cluster has no nodes at all.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// Kubernetes' sizing of the early stop in filtering.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// scheduleOne runs one scheduling attempt. The phases, in order:
//
//  1. Pop the next pod (priority, then age) from the queue.
//  2. Refresh the snapshot from the cache (assumed pods included).
//  3. PreFilter, then Filter over nodes in parallel until enough fit.
//  4. If none fit: PostFilter (preemption), then record the failure.
//  5. PreScore and Score the feasible nodes; pick the best (ties at random).
//  6. Assume the pod on that node in the cache and run Reserve.
//  7. PreBind (volumes) and Bind asynchronously; on failure Unreserve,
//     forget and requeue.
func (s *Scheduler) scheduleOne(ctx context.Context) {
	qp, err := s.queue.Pop(ctx)
	if err != nil {
		return
	}
	pod := qp.Pod
	if pod.DeletionTimestamp != nil || s.cache.IsAssumedPod(pod) {
		s.queue.Done(pod)
		return
	}
	state := framework.NewCycleState()
	state.WritePodInfo(qp.PodInfo)
	start := time.Now()

	host, err := s.schedulePod(ctx, state, pod)
	if err != nil {
		// As kube-scheduler: an attempt that errs clears the nominated
		// node; one that found no fit keeps it unless preemption says
		// otherwise (a node it made room on, or none: it cannot help).
		nom := clearNomination
		var fe *framework.FitError
		if errors.As(err, &fe) {
			nom = keepNomination
			if s.fwk.HasPostFilterPlugins() {
				s.metrics.Preemption()
				result, st := s.fwk.RunPostFilterPlugins(ctx, state, pod, fe.Diagnosis.NodeToStatus)
				if result != nil {
					nom = nomination{override: true, node: result.NominatedNodeName}
				}
				// As kube-scheduler, the verdict goes into the pod's
				// condition whatever it is: a preemption that failed
				// says why, so users need not read the scheduler's log.
				fe.Diagnosis.PostFilterMsg = st.Message()
				if st.Code() == framework.Error {
					s.log.Error("preemption failed", "pod", queue.Key(pod), "err", st.AsError())
				}
			}
		}
		s.handleFailure(ctx, qp, err, nom, start)
		return
	}

	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = host
	// The queue's parse of pod holds for the copy: only the node name differs.
	assumedInfo := *qp.PodInfo
	assumedInfo.Pod = assumed
	if err := s.cache.AssumePodInfo(&assumedInfo); err != nil {
		s.handleFailure(ctx, qp, err, clearNomination, start)
		return
	}
	// Placed: it no longer needs the room kept on its nominated node.
	s.nominator.delete(pod)
	if st := s.fwk.RunReservePlugins(ctx, state, assumed, host); !st.IsSuccess() {
		if ferr := s.cache.ForgetPod(assumed); ferr != nil {
			s.log.Error("forgetting assumed pod", "pod", queue.Key(pod), "err", ferr)
		}
		s.handleFailure(ctx, qp, st.AsError(), clearNomination, start)
		return
	}
	// Assumed: updates of the pod are the informer's news of our own bind
	// from here on, and a failed bind requeues it through handleFailure.
	// The queue lets go of it now, with the cluster events of its attempt,
	// as kube-scheduler v1.33 does before PreBind (kubernetes#130189; skiff
	// has no Permit plugins to wait for): a PreBind or Bind failure is an
	// error, retried after its backoff whatever happened meanwhile, so the
	// events of a binding cycle, which may wait minutes for volumes, would
	// be kept for nothing.
	s.queue.Done(pod)
	s.bindings.Add(1)
	go func() {
		defer s.bindings.Done()
		s.bindingCycle(ctx, state, qp, assumed, host, start)
	}()
}

func (s *Scheduler) bindingCycle(ctx context.Context, state *framework.CycleState, qp *queue.QueuedPodInfo, assumed *v1.Pod, host string, start time.Time) {
	st := s.fwk.RunPreBindPlugins(ctx, state, assumed, host)
	var nom nomination
	var nominated bool
	if st.IsSuccess() {
		nom, nominated = s.statusWrites.supersede(queue.Key(assumed))
		st = s.fwk.RunBindPlugins(ctx, state, assumed, host)
	}
	if st.IsSuccess() && nominated {
		s.writeNominatedNode(ctx, assumed, nom.node)
	}
	if !st.IsSuccess() {
		s.fwk.RunUnreservePlugins(ctx, state, assumed, host)
		if err := s.cache.ForgetPod(assumed); err != nil {
			s.log.Error("forgetting assumed pod", "pod", queue.Key(assumed), "err", err)
		}
		// The node has room again for whoever was waiting on it: to the
		// hints, as kube-scheduler tells them, the assumed pod was deleted.
		s.event(framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Delete}, assumed, nil)
		s.handleFailure(ctx, qp, st.AsError(), clearNomination, start)
		return
	}
	s.cache.FinishBinding(assumed)
	s.metrics.Attempt(s.cfg.SchedulerName, metrics.Scheduled, time.Since(start))
	s.recorder.Eventf(assumed, nil, v1.EventTypeNormal, "Scheduled", "Binding", "Successfully assigned %v/%v to %v", assumed.Namespace, assumed.Name, host)
	s.log.Debug("pod bound", "pod", queue.Key(assumed), "node", host, "took", time.Since(start))
}

// schedulePod runs PreFilter, Filter and Score and returns the chosen node,
// or a *framework.FitError when no node fits.
func (s *Scheduler) schedulePod(ctx context.Context, state *framework.CycleState, pod *v1.Pod) (string, error) {
	s.cache.UpdateSnapshot(s.snapshot)
	nodes := s.snapshot.List()
	if len(nodes) == 0 {
		return "", ErrNoNodesAvailable
	}
	preResult, st, narrowedBy := s.fwk.RunPreFilterPlugins(ctx, state, pod, nodes)
	if !st.IsSuccess() {
		if !st.IsRejected() {
			return "", st.AsError()
		}
		statuses := framework.NodeToStatus{}
		for _, ni := range nodes {
			statuses[ni.Node().Name] = st
		}
		plugins := map[string]bool{st.Plugin(): true}
		for _, p := range narrowedBy {
			plugins[p] = true
		}
		return "", &framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: framework.Diagnosis{
			NodeToStatus: statuses, UnschedulablePlugins: plugins, PreFilterMsg: st.Message(),
		}}
	}

	feasible, statuses, err := s.findFeasibleNodes(ctx, state, pod, nodes, preResult, narrowedBy)
	if err != nil {
		return "", err
	}
	if len(feasible) == 0 {
		plugins := map[string]bool{}
		for _, st := range statuses {
			plugins[st.Plugin()] = true
		}
		for _, p := range narrowedBy {
			plugins[p] = true
		}
		return "", &framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: framework.Diagnosis{NodeToStatus: statuses, UnschedulablePlugins: plugins}}
	}
	if len(feasible) == 1 {
		return feasible[0].Node().Name, nil
	}
	if st := s.fwk.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
		return "", st.AsError()
	}
	scores, st := s.fwk.RunScorePlugins(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return "", st.AsError()
	}
	return s.selectHost(scores), nil
}

// findFeasibleNodes tries the pod's nominated node first (preemption made
// room there), then filters the rest, stopping early on big clusters. When
// PreFilter narrowed the nodes (narrowedBy names the plugins), only those are
// filtered and, as in kube-scheduler, every other node counts as rejected,
// UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) [...]":
// the failure message counts them and preemption leaves them alone.
func (s *Scheduler) findFeasibleNodes(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, pre *framework.PreFilterResult, narrowedBy []string) ([]*framework.NodeInfo, framework.NodeToStatus, error) {
	if nom := pod.Status.NominatedNodeName; nom != "" {
		if ni, err := s.snapshot.Get(nom); err == nil && (pre == nil || pre.NodeNames[nom]) {
			st := s.fwk.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni)
			if st.IsSuccess() {
				return []*framework.NodeInfo{ni}, nil, nil
			}
			if st.Code() == framework.Error {
				return nil, nil, &framework.NodeError{Node: nom, Err: st.AsError()}
			}
		}
	}
	candidates := nodes
	var excluded []*framework.NodeInfo
	if pre != nil && pre.NodeNames != nil {
		candidates = make([]*framework.NodeInfo, 0, len(pre.NodeNames))
		for _, ni := range nodes {
			if pre.NodeNames[ni.Node().Name] {
				candidates = append(candidates, ni)
			} else {
				excluded = append(excluded, ni)
			}
		}
	}
	var feasible []*framework.NodeInfo
	statuses := framework.NodeToStatus{}
	if len(candidates) > 0 {
		want := s.numFeasibleNodesToFind(len(candidates))
		start := s.nextStartNodeIndex % len(candidates)
		var processed int
		var err error
		feasible, statuses, processed, err = s.fwk.FindFeasibleNodes(ctx, state, pod, candidates, start, want)
		if err != nil {
			return nil, nil, err
		}
		s.nextStartNodeIndex = (start + processed) % len(candidates)
	}
	if len(feasible) == 0 && len(excluded) > 0 {
		st := framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", narrowedBy))
		for _, ni := range excluded {
			statuses[ni.Node().Name] = st
		}
	}
	return feasible, statuses, nil
}

// numFeasibleNodesToFind follows kube-scheduler: every node below 100 nodes;
// above, a share that falls from 50% by 1% per 125 nodes, floored at 5% and
// at 100 nodes.
func (s *Scheduler) numFeasibleNodesToFind(all int) int {
	if all < minFeasibleNodesToFind || s.cfg.PercentageOfNodesToScore >= 100 {
		return all
	}
	pct := int(s.cfg.PercentageOfNodesToScore)
	if pct == 0 {
		pct = 50 - all/125
		if pct < minFeasibleNodesPercentageToFind {
			pct = minFeasibleNodesPercentageToFind
		}
	}
	n := all * pct / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

// selectHost returns the highest total, choosing uniformly among ties.
func (s *Scheduler) selectHost(scores []framework.NodeScore) string {
	best, ties := 0, 1
	for i := 1; i < len(scores); i++ {
		switch {
		case scores[i].Score > scores[best].Score:
			best, ties = i, 1
		case scores[i].Score == scores[best].Score:
			ties++
			if s.rand.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return scores[best].Name
}

// nomination is what a failed attempt does to the pod's nominated node
// (kube-scheduler's NominatingInfo): keep it, or override it with node,
// clearing it when node is "".
type nomination struct {
	override bool
	node     string
}

var (
	keepNomination  = nomination{}
	clearNomination = nomination{override: true}
)

// failureAttrs are the log attributes of a failed attempt: the pod, the node
// the error happened on if it was one node's (a Filter's error, whose
// message, kube-scheduler's, leaves the node out), and the error.
func failureAttrs(pod *v1.Pod, err error) []any {
	attrs := []any{"pod", queue.Key(pod)}
	var ne *framework.NodeError
	if errors.As(err, &ne) {
		attrs = append(attrs, "node", ne.Node)
	}
	return append(attrs, "err", err)
}

// handleFailure requeues the pod, records a FailedScheduling event and sets
// PodScheduled=False (and, as nom says, the nominated node) on the pod.
func (s *Scheduler) handleFailure(ctx context.Context, qp *queue.QueuedPodInfo, err error, nom nomination, start time.Time) {
	pod := qp.Pod
	reason := v1.PodReasonSchedulerError
	defer func() {
		result := metrics.Error
		if reason == v1.PodReasonUnschedulable {
			result = metrics.Unschedulable
		}
		s.metrics.Attempt(s.cfg.SchedulerName, result, time.Since(start))
	}()
	var fe *framework.FitError
	if errors.As(err, &fe) {
		reason = v1.PodReasonUnschedulable
		qp.UnschedulablePlugins = sets.New[string]()
		for p := range fe.Diagnosis.UnschedulablePlugins {
			if p != "" {
				qp.UnschedulablePlugins.Insert(p)
			}
		}
	} else if errors.Is(err, ErrNoNodesAvailable) {
		reason = v1.PodReasonUnschedulable
		// A node arriving is the only cure: wait for the node event.
		qp.UnschedulablePlugins = sets.New("NodeAdded")
	} else {
		qp.UnschedulablePlugins = nil
		s.log.Error("scheduling attempt failed", failureAttrs(pod, err)...)
	}
	msg := err.Error()

	// Requeue only if the pod still exists, unbound, as we knew it.
	current, getErr := s.podLister.Pods(pod.Namespace).Get(pod.Name)
	if getErr != nil || current.UID != pod.UID || assigned(current) {
		s.queue.Done(pod)
		return
	}
	switch {
	case nom.override && nom.node != "":
		qp.PodInfo = framework.NewPodInfo(withNominatedNode(current, nom.node))
		// Keep the room from now on, not from when the status write
		// comes back through the informer.
		s.nominator.add(qp.PodInfo.Pod, nom.node)
	case nom.override:
		// Nothing is kept for the pod any more, from now on too.
		s.nominator.delete(current)
		queued := current
		if queued.Status.NominatedNodeName != "" {
			queued = withNominatedNode(current, "")
		}
		qp.PodInfo = framework.NewPodInfo(queued)
	default:
		qp.PodInfo = framework.NewPodInfo(current)
	}
	s.queue.AddUnschedulableIfNotPresent(qp)
	s.recorder.Eventf(current, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "%s", msg)
	key := queue.Key(current)
	writes, seq := s.statusWrites.begin(key, nom)
	s.bindings.Add(1)
	go func() {
		defer s.bindings.Done()
		s.statusWrites.write(key, writes, seq, func(nom nomination) {
			if err := s.patchScheduledCondition(ctx, current, reason, msg, nom); err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
				s.log.Warn("recording PodScheduled=False", "pod", key, "err", err)
			}
		})
	}()
}

func withNominatedNode(pod *v1.Pod, node string) *v1.Pod {
	p := pod.DeepCopy()
	p.Status.NominatedNodeName = node
	return p
}

// writeNominatedNode sets (or, for "", clears) the bound pod's
// nominatedNodeName that an attempt asked for but whose status write the
// binding skipped, unless the pod says so already: kube-scheduler writes it
// before the pod's next attempt, so its bound preemptor shows the node.
func (s *Scheduler) writeNominatedNode(ctx context.Context, pod *v1.Pod, node string) {
	if cur, err := s.podLister.Pods(pod.Namespace).Get(pod.Name); err == nil && cur.UID == pod.UID && cur.Status.NominatedNodeName == node {
		return
	}
	var value any = node
	if node == "" {
		value = nil // a strategic-merge patch's null deletes the field
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"nominatedNodeName": value}})
	if err == nil {
		err = framework.PatchPodStatus(ctx, s.client, pod.Namespace, pod.Name, body)
	}
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		s.log.Warn("recording nominatedNodeName", "pod", queue.Key(pod), "err", err)
	}
}

// patchScheduledCondition writes PodScheduled=False with reason and message
// (and the nominatedNodeName nom sets or clears) via a strategic-merge patch
// of pods/status, skipping the write when the pod already says exactly that.
func (s *Scheduler) patchScheduledCondition(ctx context.Context, pod *v1.Pod, reason, msg string, nom nomination) error {
	setNominated := nom.override && pod.Status.NominatedNodeName != nom.node
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == reason && c.Message == msg && !setNominated {
			return nil
		}
	}
	cond := map[string]any{
		"type":               v1.PodScheduled,
		"status":             v1.ConditionFalse,
		"reason":             reason,
		"message":            msg,
		"lastProbeTime":      nil,
		"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
	}
	status := map[string]any{"conditions": []any{cond}}
	if setNominated {
		if nom.node == "" {
			status["nominatedNodeName"] = nil // a strategic-merge patch's null deletes the field
		} else {
			status["nominatedNodeName"] = nom.node
		}
	}
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return fmt.Errorf("encoding status patch: %w", err)
	}
	return framework.PatchPodStatus(ctx, s.client, pod.Namespace, pod.Name, body)
}
