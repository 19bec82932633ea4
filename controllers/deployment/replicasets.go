package deployment

import (
	"math"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Annotations and labels shared with kubectl and Kubernetes.
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	ChangeCauseAnnotation     = "kubernetes.io/change-cause"
	LastAppliedAnnotation     = "kubectl.kubernetes.io/last-applied-configuration"
	PodTemplateHashLabel      = appsv1.DefaultDeploymentUniqueLabelKey // "pod-template-hash"

	// maxRevisionHistoryChars bounds revision-history as Kubernetes does.
	maxRevisionHistoryChars = 2000
)

// annotationsNotCopied stay on the Deployment: they describe it, not the ReplicaSet.
var annotationsNotCopied = map[string]bool{
	LastAppliedAnnotation:     true,
	RevisionAnnotation:        true,
	RevisionHistoryAnnotation: true,
	DesiredReplicasAnnotation: true,
	MaxReplicasAnnotation:     true,
	RollbackToAnnotation:      true,
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}

// equalIgnoreHash compares templates without the pod-template-hash label, which only ReplicaSets carry.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, PodTemplateHashLabel)
	delete(b.Labels, PodTemplateHashLabel)
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	if len(b.Labels) == 0 {
		b.Labels = nil
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

// findNewReplicaSet returns the ReplicaSet whose template equals the Deployment's; if several do (a
// hash collision long ago), the oldest wins, as in Kubernetes.
func findNewReplicaSet(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sorted := sortedByCreation(rsList)
	for _, rs := range sorted {
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

func findOldReplicaSets(rsList []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var old []*appsv1.ReplicaSet
	for _, rs := range rsList {
		if newRS == nil || rs.UID != newRS.UID {
			old = append(old, rs)
		}
	}
	return old
}

// createdBefore orders ReplicaSets from old to new, by name when created in the same second
// (Kubernetes' ReplicaSetsByCreationTimestamp), so every sort below is total and the lister's
// order never decides.
func createdBefore(a, b *appsv1.ReplicaSet) bool {
	if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.Name < b.Name
	}
	return a.CreationTimestamp.Before(&b.CreationTimestamp)
}

// sortedByCreation returns a sorted copy, without nil entries (a missing new ReplicaSet).
func sortedByCreation(rsList []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rsList {
		if rs != nil {
			out = append(out, rs)
		}
	}
	sort.Slice(out, func(i, j int) bool { return createdBefore(out[i], out[j]) })
	return out
}

// sortByRevision orders ReplicaSets from the lowest revision up; equal revisions, and any pair where
// one revision is not a number, go by creation (Kubernetes' ReplicaSetsByRevision).
func sortByRevision(rsList []*appsv1.ReplicaSet) {
	sort.Slice(rsList, func(i, j int) bool {
		ri, erri := parseRevision(rsList[i].Annotations)
		rj, errj := parseRevision(rsList[j].Annotations)
		if erri != nil || errj != nil || ri == rj {
			return createdBefore(rsList[i], rsList[j])
		}
		return ri < rj
	})
}

// sortBySize orders ReplicaSets from the largest down. Among equal sizes newer ones come first when
// growing, older ones when shrinking (Kubernetes' ReplicaSetsBySizeNewer and ReplicaSetsBySizeOlder).
func sortBySize(rsList []*appsv1.ReplicaSet, newerFirst bool) {
	sort.Slice(rsList, func(i, j int) bool {
		a, b := rsReplicas(rsList[i]), rsReplicas(rsList[j])
		if a != b {
			return a > b
		}
		if newerFirst {
			return createdBefore(rsList[j], rsList[i])
		}
		return createdBefore(rsList[i], rsList[j])
	})
}

func filterActive(rsList []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rsList {
		if rs != nil && rsReplicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// Sums over ReplicaSets; nil entries (no new ReplicaSet yet) count as zero.
func sumSpec(rsList []*appsv1.ReplicaSet) (n int32) {
	for _, rs := range rsList {
		n += rsReplicas(rs)
	}
	return n
}

func sumStatus(rsList []*appsv1.ReplicaSet, f func(*appsv1.ReplicaSetStatus) int32) (n int32) {
	for _, rs := range rsList {
		if rs != nil {
			n += f(&rs.Status)
		}
	}
	return n
}

func revision(annotations map[string]string) int64 {
	v, err := parseRevision(annotations)
	if err != nil {
		return 0
	}
	return v
}

// parseRevision reads the revision annotation: none is revision 0, a value that is not a number an
// error.
func parseRevision(annotations map[string]string) (int64, error) {
	v, ok := annotations[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

func maxRevision(rsList []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rsList {
		m = max(m, revision(rs.Annotations))
	}
	return m
}

// sizeAnnotation reads desired-replicas or max-replicas. They are the controller's own record of a
// size, so anything but a plain non-negative int32 (a sign, a negative, too large, not a number)
// counts as no annotation, as Kubernetes' getNonNegativeInt32FromAnnotation reads them.
func sizeAnnotation(annotations map[string]string, key string) (int32, bool) {
	n, err := strconv.ParseUint(annotations[key], 10, 31)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// desiredForSaturation reads desired-replicas as Kubernetes' IsSaturated does, with a signed parse:
// it differs from sizeAnnotation only for a value with a "+" sign, since a negative or an
// out-of-range value can never equal a Deployment's replicas.
func desiredForSaturation(annotations map[string]string) (int32, bool) {
	n, err := strconv.ParseInt(annotations[DesiredReplicasAnnotation], 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// copyDeploymentAnnotations copies the Deployment's annotations (change-cause among them) to the
// ReplicaSet, so kubectl rollout history shows them per revision. It reports whether anything changed.
func copyDeploymentAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if annotationsNotCopied[k] {
			continue
		}
		if cur, ok := rs.Annotations[k]; !ok || cur != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

// setRevision sets the ReplicaSet's revision, remembering the revision it replaces in
// revision-history (a ReplicaSet reused by rollout undo keeps its earlier numbers there).
func setRevision(rs *appsv1.ReplicaSet, rev int64) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	old, had := rs.Annotations[RevisionAnnotation]
	oldN, _ := strconv.ParseInt(old, 10, 64)
	if had && oldN >= rev {
		return false
	}
	if had && old != "" {
		hist := rs.Annotations[RevisionHistoryAnnotation]
		if hist == "" {
			hist = old
		} else {
			hist += "," + old
		}
		for len(hist) > maxRevisionHistoryChars {
			i := strings.Index(hist, ",")
			if i < 0 {
				hist = ""
				break
			}
			hist = hist[i+1:]
		}
		if hist != "" {
			rs.Annotations[RevisionHistoryAnnotation] = hist
		}
	}
	rs.Annotations[RevisionAnnotation] = strconv.FormatInt(rev, 10)
	return true
}

// setReplicasAnnotations records the Deployment size a ReplicaSet was scaled for; proportional
// scaling reads it back.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	d, m := strconv.Itoa(int(desired)), strconv.Itoa(int(maxReplicas))
	if rs.Annotations[DesiredReplicasAnnotation] == d && rs.Annotations[MaxReplicasAnnotation] == m {
		return false
	}
	rs.Annotations[DesiredReplicasAnnotation] = d
	rs.Annotations[MaxReplicasAnnotation] = m
	return true
}

func isRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.Type == ""
}

// fenceposts resolves maxSurge (rounded up) and maxUnavailable (rounded down) against replicas; both
// zero would deadlock a rollout, so maxUnavailable becomes 1 then.
func fenceposts(d *appsv1.Deployment) (surge, unavailable int32) {
	if !isRollingUpdate(d) {
		return 0, 0
	}
	desired := int(replicas(d))
	ms, mu := intstr.FromString("25%"), intstr.FromString("25%")
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			ms = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			mu = *ru.MaxUnavailable
		}
	}
	s, err := intstr.GetScaledValueFromIntOrPercent(&ms, desired, true)
	if err != nil {
		s = 0
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(&mu, desired, false)
	if err != nil {
		u = 0
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u)
}

func maxSurge(d *appsv1.Deployment) int32 {
	s, _ := fenceposts(d)
	return s
}

// maxUnavailable is capped at replicas.
func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || replicas(d) == 0 {
		return 0
	}
	_, u := fenceposts(d)
	return min(u, replicas(d))
}

// newRSReplicas is the size the new ReplicaSet may grow to now.
func newRSReplicas(d *appsv1.Deployment, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	if !isRollingUpdate(d) {
		return replicas(d)
	}
	current := sumSpec(allRSs)
	maxTotal := replicas(d) + maxSurge(d)
	if current >= maxTotal {
		return rsReplicas(newRS)
	}
	up := min(maxTotal-current, replicas(d)-rsReplicas(newRS))
	return rsReplicas(newRS) + max(up, 0)
}

// proportion is how many replicas a ReplicaSet gains (or loses) when the Deployment is resized in the
// middle of a rollout.
func proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if rs == nil || rsReplicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := replicaSetFraction(rs, d)
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

func replicaSetFraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if replicas(d) == 0 {
		return -rsReplicas(rs)
	}
	target := replicas(d) + maxSurge(d)
	annotated, ok := sizeAnnotation(rs.Annotations, MaxReplicasAnnotation)
	if !ok || annotated == 0 {
		annotated = d.Status.Replicas
	}
	if annotated == 0 {
		return 0
	}
	size := float64(rsReplicas(rs)*target) / float64(annotated)
	return int32(math.Round(size)) - rsReplicas(rs)
}
