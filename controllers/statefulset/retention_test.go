package statefulset

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

// owners lists a claim's references as "Kind/name(uid)", "*" marking the controller.
func owners(c *corev1.PersistentVolumeClaim) []string {
	var out []string
	for _, r := range c.OwnerReferences {
		s := r.Kind + "/" + r.Name + "(" + string(r.UID) + ")"
		if r.Controller != nil && *r.Controller {
			s += "*"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// TestClaimOwnersFollowTheRetentionPolicy: each sync gives the claims of
// kept and condemned pods the owners the policy asks for now, whatever
// they had, as Kubernetes' StatefulSetAutoDeletePVC.
func TestClaimOwnersFollowTheRetentionPolicy(t *testing.T) {
	retain, del := appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	setRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "uid-web", Controller: ptr.To(true)}
	podRef := func(name string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(controller)}
	}
	foreign := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Backup", Name: "b", UID: "uid-b", Controller: ptr.To(true)}
	for _, tc := range []struct {
		name             string
		whenDeleted      appsv1.PersistentVolumeClaimRetentionPolicyType
		whenScaled       appsv1.PersistentVolumeClaimRetentionPolicyType
		claim            string // data-web-0 is kept (replicas 1), data-web-1 condemned
		refs             []metav1.OwnerReference
		want             []string
		wantNoClaimWrite bool
	}{
		{name: "Delete with the set: a kept pod's claim gets the set", whenDeleted: del, whenScaled: retain, claim: "data-web-0",
			want: []string{"StatefulSet/web(uid-web)*"}},
		{name: "policy back to Retain: the set's reference goes", whenDeleted: retain, whenScaled: retain, claim: "data-web-0",
			refs: []metav1.OwnerReference{setRef}, want: nil},
		{name: "Delete/Delete: a condemned pod's claim moves from the set to the pod", whenDeleted: del, whenScaled: del, claim: "data-web-1",
			refs: []metav1.OwnerReference{setRef}, want: []string{"Pod/web-1(uid-web-1)*"}},
		{name: "whenScaled Delete: an older non-controller pod reference becomes the controller", whenDeleted: retain, whenScaled: del, claim: "data-web-1",
			refs: []metav1.OwnerReference{podRef("web-1", false)}, want: []string{"Pod/web-1(uid-web-1)*"}},
		{name: "scaled back up: the pod lets go", whenDeleted: del, whenScaled: del, claim: "data-web-0",
			refs: []metav1.OwnerReference{podRef("web-0", true)}, want: []string{"StatefulSet/web(uid-web)*"}},
		{name: "a reference to an earlier set of the name is left to the garbage collector", whenDeleted: del, whenScaled: del, claim: "data-web-0",
			refs:             []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "uid-old", Controller: ptr.To(true)}},
			want:             []string{"StatefulSet/web(uid-old)*"},
			wantNoClaimWrite: true},
		{name: "another controller keeps the claim; the set's reference goes", whenDeleted: del, whenScaled: del, claim: "data-web-0",
			refs: []metav1.OwnerReference{foreign, {APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "uid-web"}},
			want: []string{"Backup/b(uid-b)*"}},
		{name: "a claim already right is not written", whenDeleted: del, whenScaled: retain, claim: "data-web-0",
			refs: []metav1.OwnerReference{setRef}, want: []string{"StatefulSet/web(uid-web)*"}, wantNoClaimWrite: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := newSet(1, parallel, claimTemplates, retention(tc.whenDeleted, tc.whenScaled))
			rev := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "r"}}
			web0, web1 := podFor(set, 0, rev, &set.Spec.Template), podFor(set, 1, rev, &set.Spec.Template)
			web0.UID, web1.UID = "uid-web-0", "uid-web-1"
			for _, p := range []*corev1.Pod{web0, web1} {
				p.Spec.NodeName = "n1"
				p.Status = member(set, 0, "r").Status
			}
			var claims []*corev1.PersistentVolumeClaim
			for _, name := range []string{"data-web-0", "data-web-1"} {
				c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "1"}}
				if name == tc.claim {
					c.OwnerReferences = tc.refs
				} else if name == "data-web-0" {
					// The other claim is already as the policy wants it.
					setClaimOwners(c, set, web0, false)
				} else {
					setClaimOwners(c, set, web1, true)
				}
				claims = append(claims, c)
			}
			fx := newFixture(t, set, web0, web1, claims[0], claims[1])
			fx.sync(t)
			got, err := fx.client.CoreV1().PersistentVolumeClaims("ns").Get(context.Background(), tc.claim, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(owners(got), tc.want) {
				t.Errorf("owners of %s = %v, want %v", tc.claim, owners(got), tc.want)
			}
			writes := controllertest.Filter(fx.client.Actions(), "update", "persistentvolumeclaims")
			if tc.wantNoClaimWrite && len(writes) != 0 {
				t.Errorf("%d claim updates, want none", len(writes))
			}
			if !tc.wantNoClaimWrite && len(writes) != 1 {
				t.Errorf("%d claim updates, want one (the other claim was already right)", len(writes))
			}
		})
	}
}

// TestIdentityLabelsAreRestored: a member whose pod-name label was
// removed or edited gets both identity labels back, with Kubernetes'
// event; one whose labels are right is not written.
func TestIdentityLabelsAreRestored(t *testing.T) {
	set := newSet(2, parallel)
	rev := revisionFor(t, set, "web:2", 1)
	edited := member(set, 0, rev.Name, func(p *corev1.Pod) { delete(p.Labels, podNameLabel); p.Labels[podIndexLabel] = "7" })
	fine := member(set, 1, rev.Name)
	fx := newFixture(t, set, rev, edited, fine)
	fx.sync(t)
	patches := controllertest.Filter(fx.client.Actions(), "patch", "pods")
	if len(patches) != 1 {
		t.Fatalf("%d pod patches, want 1 (web-0 only)", len(patches))
	}
	got, err := fx.client.CoreV1().Pods("ns").Get(context.Background(), "web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[podNameLabel] != "web-0" || got.Labels[podIndexLabel] != "0" || got.Labels["app"] != "web" {
		t.Errorf("web-0 labels = %v", got.Labels)
	}
	var events []string
	for len(fx.rec.Events) > 0 {
		events = append(events, <-fx.rec.Events)
	}
	if !slices.ContainsFunc(events, func(e string) bool {
		return strings.HasPrefix(e, "Normal SuccessfulUpdate update Pod web-0 in StatefulSet web successful")
	}) {
		t.Errorf("events %q lack the SuccessfulUpdate of web-0", events)
	}
}

// TestPodIndexLabelAloneIsNotRestored: as Kubernetes' identityMatches, only
// the pod-name label is checked; a pod whose pod-index label alone was
// edited is left as it is (both come back when pod-name is wrong too).
func TestPodIndexLabelAloneIsNotRestored(t *testing.T) {
	set := newSet(1, parallel)
	rev := revisionFor(t, set, "web:2", 1)
	edited := member(set, 0, rev.Name, func(p *corev1.Pod) { p.Labels[podIndexLabel] = "7" })
	fx := newFixture(t, set, rev, edited)
	fx.sync(t)
	if patches := controllertest.Filter(fx.client.Actions(), "patch", "pods"); len(patches) != 0 {
		t.Fatalf("%d pod patches, want none", len(patches))
	}
}
