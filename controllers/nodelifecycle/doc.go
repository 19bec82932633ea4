// Package nodelifecycle notices nodes that stopped heartbeating and moves their work elsewhere.
//
// A node agent renews its Lease in kube-node-lease (and posts Ready in node status). When the
// controller has seen neither change for the grace period (50s by default; by its own clock, from when
// it saw the last change, as kube-controller-manager: a node's clock may differ, and a controller that
// just started or took over the lead gives every node a full grace period; a node that has never posted
// a Ready condition gets the startup grace period, 60s by default, from its registration) the
// controller sets the node's conditions to Unknown with reason NodeStatusUnknown, marks its pods not
// ready when it was Ready until then (so Services stop sending them traffic; a node whose agent
// reported Ready=False keeps its pods' readiness as the agent left it, as in kube-controller-manager;
// but, as there, a pod that arrives on a node not Ready, bound to it or found on it when the controller
// starts, is marked not ready, so one a stopped leader left Ready on a dead node is not served),
// and taints it node.kubernetes.io/unreachable:NoExecute (not-ready:NoExecute when the agent reports
// Ready=False; the one swapped for the other at once). Pods on a NoExecute-tainted node are then
// deleted: at once when they do not tolerate the taint, after tolerationSeconds when they tolerate it
// for a while (admission adds 300s for these two taints), never when they tolerate it without a limit;
// each first marked DisruptionTarget (reason DeletionByTaintManager), those terminating already too.
// As Kubernetes' taint eviction controller, the tolerationSeconds count from when the controller first
// saw the pod on the tainted node, not from the taint's timeAdded (a pod bound to a node tainted long
// ago gets its whole toleration; a new leader counts afresh), and a scheduled deletion is cancelled,
// with a "Cancelling deletion" event, when the taints go (not when the node is deleted: it is carried out
// when due, if the pod garbage collector has not removed the pod first). When the NoExecute taints
// change (not-ready swapped for unreachable, one added or removed), as there, a scheduled deletion is
// kept as it is, even when the new taints are tolerated for less time, and a pod deleted already but
// still there (its agent is down) is judged again: also after taints that came and went between two
// checks of the node, and when its own tolerations change. An eviction tries its writes up to five
// times and records its event once. One whose tries all fail is tried again at each sync of the node,
// without an event: Kubernetes drops it and tries again only on the next change of the node's NoExecute
// taints or the pod's tolerations, with a new event, and those events are the ones recorded here too
// (a pod that does not tolerate its node's taints is not left running for want of a change). Taints go
// away when the node is Ready again; a node without a Ready condition (its agent not reporting yet)
// keeps those it has, as kube-controller-manager leaves them.
//
// NoExecute taints are paced by zone (region and zone labels, the deprecated failure-domain.beta ones
// first), as kube-controller-manager paces them (disruption.go; nodes labelled
// node.kubernetes.io/exclude-disruption are left out of their zone's count): 0.1 nodes a second in a
// healthy zone; in a partly disrupted one (more than two nodes and 55% not Ready) none when it has at
// most 50 nodes, 0.01 a second otherwise (a zone's change of state keeps its pace's last taint counted,
// as kube swaps its limiter); and when no node of any zone is Ready, none at all, the taints put on
// before lifted: the control plane is then more likely cut off from the nodes than every node dead
// ("master disruption mode"), and evicting everything would empty the cluster once the nodes come back.
//
// It also taints nodes by condition, as Kubernetes' TaintNodesByCondition, with NoSchedule taints (with
// their timeAdded, as kube writes them) that keep new pods off and evict none: not-ready / unreachable
// for Ready=False / Unknown, memory-pressure, disk-pressure and pid-pressure for the node agent's
// pressure conditions, network-unavailable for NetworkUnavailable=True, and unschedulable for a
// cordoned node. Each goes when its condition clears; other NoSchedule taints are never touched.
// DaemonSet pods tolerate them (controllers/daemonset adds Kubernetes' daemon tolerations).
//
// As kube-controller-manager, it keeps the deprecated beta.kubernetes.io/os and beta.kubernetes.io/arch
// labels of each node equal to kubernetes.io/os and kubernetes.io/arch, so nodeSelectors written for
// the beta labels still match.
package nodelifecycle
