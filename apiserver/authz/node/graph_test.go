package node

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/apiserver/authn"
	"github.com/skiffkube/skiff/apiserver/authz"
	"github.com/skiffkube/skiff/storage"
	"github.com/skiffkube/skiff/storage/storagetest"
)

func TestGraphFollowsEveryKindOfReference(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{
		NodeName: "n1", ServiceAccountName: "sa",
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
		Volumes: []corev1.Volume{
			{Name: "a", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
			{Name: "b", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}},
			{Name: "d", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}}},
			}}}},
		},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e",
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "debug-cm"}}}}}}},
		InitContainers: []corev1.Container{{Name: "i", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-secret"}}}}}},
		Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "k"}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}, Key: "k"}}},
		}}},
	}}
	data, _ := json.Marshal(p)
	g := NewGraph(nil)
	g.Reset([]*storage.KeyValue{{Key: PodPrefix + "ns/p", Value: data}})
	a := NewAuthorizer(g, nil)
	n1 := &authn.User{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	n2 := &authn.User{Name: "system:node:n2", Groups: []string{"system:nodes", "system:authenticated"}}
	get := func(u *authn.User, resource, name string) bool {
		ok, _, _ := a.Authorize(context.Background(), authz.Attributes{User: u, Verb: "get", Resource: resource, Namespace: "ns", Name: name, ResourceRequest: true})
		return ok
	}
	for _, c := range []struct{ resource, name string }{
		{"secrets", "pull"}, {"secrets", "vol-secret"}, {"secrets", "proj-secret"}, {"secrets", "init-secret"}, {"secrets", "env-secret"},
		{"configmaps", "vol-cm"}, {"configmaps", "proj-cm"}, {"configmaps", "env-cm"}, {"configmaps", "debug-cm"}, {"persistentvolumeclaims", "claim"}, {"pods", "p"},
	} {
		if !get(n1, c.resource, c.name) {
			t.Errorf("n1 may not get %s %s its pod uses", c.resource, c.name)
		}
		if get(n2, c.resource, c.name) {
			t.Errorf("n2 may get %s %s of n1's pod", c.resource, c.name)
		}
	}
	if get(n1, "secrets", "unrelated") || get(n1, "configmaps", "pull") {
		t.Error("n1 may get objects its pod does not reference (or of another kind)")
	}
	tok, _, _ := a.Authorize(context.Background(), authz.Attributes{User: n1, Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: "ns", Name: "sa", ResourceRequest: true})
	if !tok {
		t.Error("n1 may not request a token for its pod's service account")
	}
	// The pod moves away (rebinding is not possible in Kubernetes, but a
	// delete and recreate on another node is): n1 loses everything.
	g.Apply(storage.Event{Type: storage.Deleted, KV: &storage.KeyValue{Key: PodPrefix + "ns/p", Value: data}})
	p.Spec.NodeName = "n2"
	data, _ = json.Marshal(p)
	g.Apply(storage.Event{Type: storage.Created, KV: &storage.KeyValue{Key: PodPrefix + "ns/p", Value: data}})
	if get(n1, "secrets", "vol-secret") || !get(n2, "secrets", "vol-secret") {
		t.Error("the graph did not follow the pod to n2")
	}
	g.Apply(storage.Event{Type: storage.Deleted, KV: &storage.KeyValue{Key: PodPrefix + "ns/p", Value: data}})
	if get(n2, "secrets", "vol-secret") || len(g.nodes) != 0 || len(g.pods) != 0 {
		t.Errorf("the graph kept a deleted pod: %v %v", g.nodes, g.pods)
	}
}

// A bound pod's status updates leave its references as they are, and an
// ephemeral container added to it brings its own.
func TestGraphFollowsABoundPodsUpdates(t *testing.T) {
	g := NewGraph(nil)
	a := NewAuthorizer(g, nil)
	n1 := &authn.User{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	mayGet := func(secret string) bool {
		ok, _, _ := a.Authorize(context.Background(), authz.Attributes{User: n1, Verb: "get", Resource: "secrets", Namespace: "ns", Name: secret, ResourceRequest: true})
		return ok
	}
	key := PodPrefix + "ns/p"
	p := benchPod()
	apply := func(typ storage.EventType) {
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		g.Apply(storage.Event{Type: typ, KV: &storage.KeyValue{Key: key, Value: data}})
	}
	apply(storage.Created)
	if mayGet("vol-secret") {
		t.Fatal("n1 may get a secret of a pod not bound to it")
	}
	p.Spec.NodeName = "n1" // the binding
	apply(storage.Updated)
	if !mayGet("vol-secret") {
		t.Fatal("n1 may not get the secret of its pod after the binding")
	}
	p.Status.Phase = corev1.PodRunning // the kubelet's status update
	p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "not-a-container"}}
	apply(storage.Updated)
	if !mayGet("vol-secret") || mayGet("debug-secret") {
		t.Fatal("a status update changed what n1 may get")
	}
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
		EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "debug-secret"}}}}}}}
	apply(storage.Updated)
	if !mayGet("vol-secret") || !mayGet("debug-secret") {
		t.Fatal("n1 may not get the secret of an ephemeral container added to its pod")
	}
}

// benchPod is a bound pod as a Deployment and a kubelet leave it: a
// service account token volume, a secret volume, a status with conditions.
func benchPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web", "pod-template-hash": "5d8f9c7b6"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "default",
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
				}}}},
			},
			Containers: []corev1.Container{{Name: "web", Image: "nginx", Env: []corev1.EnvVar{{Name: "MODE", Value: "production"}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
}

// BenchmarkGraphApply is the graph's cost for the pod events of a pod's
// life: its creation (unbound), its binding, and a status update of the
// bound pod, the most common pod event under load.
func BenchmarkGraphApply(b *testing.B) {
	unbound := benchPod()
	bound := benchPod()
	bound.Spec.NodeName = "n1"
	for _, bc := range []struct {
		name   string
		before *corev1.Pod // in the graph already; nil: none
		pod    *corev1.Pod
		typ    storage.EventType
	}{
		{"create", nil, unbound, storage.Created},
		{"binding", unbound, bound, storage.Updated},
		{"status", bound, bound, storage.Updated},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g := NewGraph(nil)
			key := PodPrefix + "ns/p"
			var before []byte
			if bc.before != nil {
				before, _ = json.Marshal(bc.before)
			}
			data, err := json.Marshal(bc.pod)
			if err != nil {
				b.Fatal(err)
			}
			ev := storage.Event{Type: bc.typ, KV: &storage.KeyValue{Key: key, Value: data}}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				if before != nil {
					g.Reset([]*storage.KeyValue{{Key: key, Value: before}})
				} else {
					g.Reset(nil)
				}
				b.StartTimer()
				g.Apply(ev)
			}
		})
	}
}

func TestNodeMayGetVolumesBehindItsPodsClaims(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: "n1",
		Volumes: []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}}}}}
	podData, _ := json.Marshal(p)
	claim := func(volume string) []byte {
		data, _ := json.Marshal(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: "ns"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}})
		return data
	}
	g := NewGraph(nil)
	g.Reset([]*storage.KeyValue{{Key: PodPrefix + "ns/p", Value: podData}})
	g.claims.Reset([]*storage.KeyValue{{Key: ClaimPrefix + "ns/claim", Value: claim("")}})
	a := NewAuthorizer(g, nil)
	getPV := func(node, name, verb string) bool {
		u := &authn.User{Name: "system:node:" + node, Groups: []string{"system:nodes"}}
		ok, _, _ := a.Authorize(context.Background(), authz.Attributes{User: u, Verb: verb, Resource: "persistentvolumes", Name: name, ResourceRequest: true})
		return ok
	}
	pv := func(name string, localPathOn ...string) *storage.KeyValue {
		v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if len(localPathOn) > 0 {
			v.Annotations = map[string]string{"pv.kubernetes.io/provisioned-by": "skiff.io/local-path"}
			v.Spec.Local = &corev1.LocalVolumeSource{Path: "/var/lib/skiff/agent/storage/" + name}
			v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: localPathOn}}}}}}
		}
		data, _ := json.Marshal(v)
		return &storage.KeyValue{Key: VolumePrefix + name, Value: data}
	}
	g.volumes.Reset([]*storage.KeyValue{pv("pv1"), pv("pv2"), pv("local-n3", "n3")})
	if getPV("n1", "pv1", "get") {
		t.Error("n1 may get a volume before its pod's claim is bound to it")
	}
	// Kubernetes' graph has no vertex for a volume that does not exist: a
	// node asking for one is refused (403), not told it is missing (404).
	if allowed, why, _ := a.Authorize(context.Background(), authz.Attributes{User: &authn.User{Name: "system:node:n1", Groups: []string{"system:nodes"}},
		Verb: "get", Resource: "persistentvolumes", Name: "deleted", ResourceRequest: true}); allowed || why != "no relationship found between node 'n1' and this object" {
		t.Errorf("n1 asking for a volume that does not exist: allowed %v (%q), want refused", allowed, why)
	}
	// A local-path volume placed on a node is readable by that node only,
	// until it is deleted.
	if !getPV("n3", "local-n3", "get") || getPV("n1", "local-n3", "get") || getPV("n3", "local-n3", "delete") {
		t.Error("only n3 may get (not delete) the local-path volume placed on it")
	}
	g.volumes.Apply(storage.Event{Type: storage.Deleted, KV: &storage.KeyValue{Key: VolumePrefix + "local-n3"}})
	if getPV("n3", "local-n3", "get") {
		t.Error("n3 may get a deleted local-path volume")
	}
	g.claims.Apply(storage.Event{Type: storage.Updated, KV: &storage.KeyValue{Key: ClaimPrefix + "ns/claim", Value: claim("pv1")}})
	if !getPV("n1", "pv1", "get") {
		t.Error("n1 may not get the volume its pod's claim is bound to")
	}
	if getPV("n2", "pv1", "get") || getPV("n1", "pv2", "get") || getPV("n1", "pv1", "delete") || getPV("n1", "", "list") {
		t.Error("a node may read other volumes, or write or list volumes")
	}
	g.claims.Apply(storage.Event{Type: storage.Deleted, KV: &storage.KeyValue{Key: ClaimPrefix + "ns/claim"}})
	if getPV("n1", "pv1", "get") {
		t.Error("n1 may still get the volume after its claim is deleted")
	}
}

// The graph trails the store's watch; a node that saw its pod's binding on
// its own watch writes the pod's status at once. The store answers then.
func TestNodeMayWriteItsPodBeforeTheGraphSeesIt(t *testing.T) {
	store := storagetest.Open(t, storagetest.SQLiteEndpoint(t))
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	data, _ := json.Marshal(p)
	if _, err := store.Create(ctx, PodPrefix+"ns/p", data, 0); err != nil {
		t.Fatal(err)
	}
	g := NewGraph(nil) // never started: it knows no pods
	n1 := &authn.User{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	n2 := &authn.User{Name: "system:node:n2", Groups: []string{"system:nodes", "system:authenticated"}}
	update := func(a *Authorizer, u *authn.User, name string) bool {
		t.Helper()
		ok, _, err := a.Authorize(ctx, authz.Attributes{User: u, Verb: "update", Resource: "pods", Subresource: "status", Namespace: "ns", Name: name, ResourceRequest: true})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if update(NewAuthorizer(g, nil), n1, "p") {
		t.Fatal("the graph alone allowed a pod it has not seen")
	}
	a := NewAuthorizer(g, StorePods{Store: store})
	if !update(a, n1, "p") {
		t.Error("n1 may not update the status of a pod bound to it")
	}
	if update(a, n2, "p") || update(a, n1, "missing") {
		t.Error("a node may update a pod bound elsewhere, or one that does not exist")
	}
	// Only pods: the store is not asked about what pods reference.
	if ok, _, _ := a.Authorize(ctx, authz.Attributes{User: n1, Verb: "get", Resource: "secrets", Namespace: "ns", Name: "s", ResourceRequest: true}); ok {
		t.Error("n1 may get a secret no pod of its references")
	}
}
