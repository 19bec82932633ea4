// Package podtopologyspread is the PodTopologySpread plugin. For each of the
// pod's topology spread constraints it counts, per domain (the value of the
// constraint's node label), the pods its selector picks in the pod's
// namespace. With whenUnsatisfiable: DoNotSchedule, Filter rejects a node
// whose domain would exceed the least-loaded domain by more than maxSkew;
// with ScheduleAnyway, Score prefers the less-loaded domains.
//
// A pod without constraints gets default ones selecting its Services' and
// controller's pods: kube-scheduler's system defaults (hostname maxSkew 3,
// zone maxSkew 5, ScheduleAnyway), or with Args' List defaulting the
// configured ones, as PodTopologySpreadArgs.
//
// Only nodes that have every constraint's label and (by default) match the
// pod's node affinity/selector count as domains, as in Kubernetes.
package podtopologyspread
