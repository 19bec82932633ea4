package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateConfigMapAndSecret(t *testing.T) {
	big := strings.Repeat("x", MaxConfigSize)
	cm := func(data map[string]string, bin map[string][]byte) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: data, BinaryData: bin}
	}
	sec := func(typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
		return defaulted(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Type: typ, Data: data})
	}
	runCreate(t, []testCase{
		{name: "configmap valid", obj: cm(map[string]string{"app.properties": "a=b", "KEY_1": "v"}, map[string][]byte{"logo.png": {1}})},
		{name: "configmap bad key", obj: cm(map[string]string{"a/b": "x"}, nil), want: []want{{"data[a/b]", invalid}}},
		{name: "configmap key in both", obj: cm(map[string]string{"k": "x"}, map[string][]byte{"k": {1}}),
			want: []want{{"data[k]", invalid}, {"binaryData[k]", invalid}}},
		{name: "configmap over 1MiB", obj: cm(map[string]string{"a": big, "b": "x"}, nil), want: []want{{"[]", tooLong}}},
		{name: "configmap bad name", obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name", Namespace: "default"}},
			want: []want{{"metadata.name", invalid}}},
		{name: "secret valid", obj: sec("", map[string][]byte{"password": []byte("x")})},
		{name: "secret bad key", obj: sec("", map[string][]byte{"bad key": []byte("x")}), want: []want{{"data[bad key]", invalid}}},
		{name: "secret over 1MiB", obj: sec("", map[string][]byte{"a": []byte(big), "b": []byte("x")}), want: []want{{"data", tooLong}}},
		{name: "tls secret needs key and cert", obj: sec(corev1.SecretTypeTLS, map[string][]byte{"tls.crt": []byte("c")}),
			want: []want{{"data[tls.key]", required}}},
	})
}

func TestSecretStringDataIsFoldedAndValidated(t *testing.T) {
	s := defaulted(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, StringData: map[string]string{"token": "abc"}})
	if string(s.Data["token"]) != "abc" || s.StringData != nil {
		t.Fatalf("stringData not folded into data: %+v", s)
	}
	if errs := Validate(s); len(errs) != 0 {
		t.Fatal(errs)
	}
}

func TestImmutableConfigMapAndSecret(t *testing.T) {
	yes, no := true, false
	oldCM := stored(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Immutable: &yes, Data: map[string]string{"a": "1"}})
	changed := oldCM.DeepCopy()
	changed.Data["a"] = "2"
	unset := oldCM.DeepCopy()
	unset.Immutable = &no
	relabelled := oldCM.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	mutableOld := oldCM.DeepCopy()
	mutableOld.Immutable = nil
	mutableNew := mutableOld.DeepCopy()
	mutableNew.Data["a"] = "2"

	oldSec := stored(defaulted(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Immutable: &yes, Data: map[string][]byte{"a": []byte("1")}}))
	secChanged := oldSec.DeepCopy()
	secChanged.Data["a"] = []byte("2")
	secType := oldSec.DeepCopy()
	secType.Immutable = nil
	secTypeOld := secType.DeepCopy()
	secType.Type = corev1.SecretTypeBasicAuth
	secType.Data = map[string][]byte{"username": []byte("u")}

	runUpdate(t, []updateCase{
		{name: "immutable configmap data", old: oldCM, new: changed, want: []want{{"data", forbidden}}},
		{name: "immutable cannot be unset", old: oldCM, new: unset, want: []want{{"immutable", forbidden}}},
		{name: "immutable configmap metadata may change", old: oldCM, new: relabelled},
		{name: "mutable configmap data may change", old: mutableOld, new: mutableNew},
		{name: "immutable secret data", old: oldSec, new: secChanged, want: []want{{"data", forbidden}}},
		{name: "secret type immutable", old: secTypeOld, new: secType, want: []want{{"type", invalid}}},
	})
}

func TestValidateNamespaceNodeAndQuota(t *testing.T) {
	ns := func(name string) *corev1.Namespace {
		return defaulted(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	node := func(m func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1.example"}}
		m(n)
		return defaulted(n)
	}
	runCreate(t, []testCase{
		{name: "namespace valid", obj: ns("team-a")},
		{name: "namespace name is a DNS label", obj: ns("team.a"), want: []want{{"metadata.name", invalid}}},
		{name: "namespace must not have a namespace", obj: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "b"}},
			want: []want{{"metadata.namespace", forbidden}}},
		{name: "node valid", obj: node(func(n *corev1.Node) {
			n.Spec.PodCIDRs = []string{"10.42.0.0/24"}
			n.Spec.PodCIDR = "10.42.0.0/24"
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
			n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		})},
		{name: "node bad CIDR", obj: node(func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.42.0.0/33"} }),
			want: []want{{"spec.podCIDRs[0]", invalid}}},
		{name: "node two IPv4 pod CIDRs", obj: node(func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.42.0.0/24", "10.42.1.0/24"} }),
			want: []want{{"spec.podCIDRs", invalid}}},
		{name: "node three pod CIDRs", obj: node(func(n *corev1.Node) {
			n.Spec.PodCIDRs = []string{"10.42.0.0/24", "fd00:42::/64", "10.42.1.0/24"}
		}), want: []want{{"spec.podCIDRs", invalid}}},
		{name: "node dual-stack pod CIDRs", obj: node(func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.42.0.0/24", "fd00:42::/64"} })},
		{name: "node bad taint effect", obj: node(func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: "Sometimes"}}
		}), want: []want{{"spec.taints[0].effect", notSupported}}},
		{name: "quota negative", obj: &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("-1")}}},
			want: []want{{"spec.hard[pods]", invalid}}},
		{name: "limitrange bad type", obj: &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "default"},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: "Cluster"}}}},
			want: []want{{"spec.limits[0].type", notSupported}}},
	})

	oldNode := stored(node(func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.42.0.0/24"}; n.Spec.PodCIDR = "10.42.0.0/24" }))
	newNode := oldNode.DeepCopy()
	newNode.Spec.PodCIDRs = []string{"10.42.1.0/24"}
	newNode.Spec.PodCIDR = "10.42.1.0/24"
	unassigned := stored(node(func(*corev1.Node) {}))
	assigned := unassigned.DeepCopy()
	assigned.Spec.PodCIDRs = []string{"10.42.2.0/24"}
	assigned.Spec.PodCIDR = "10.42.2.0/24"
	runUpdate(t, []updateCase{
		{name: "podCIDR may be assigned", old: unassigned, new: assigned},
		{name: "podCIDR may not change", old: oldNode, new: newNode, want: []want{{"spec.podCIDRs", forbidden}}},
	})
}

func TestValidateEndpointsAndEvents(t *testing.T) {
	ep := func(m func(*corev1.Endpoints)) *corev1.Endpoints {
		e := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Subsets: []corev1.EndpointSubset{{
				Addresses: []corev1.EndpointAddress{{IP: "10.42.0.7"}},
				Ports:     []corev1.EndpointPort{{Name: "http", Port: 8080}},
			}}}
		m(e)
		return defaulted(e)
	}
	ev := func(m func(*corev1.Event)) *corev1.Event {
		e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "web-0.17a8c3f2b7e4", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-0", Namespace: "default"}, Type: corev1.EventTypeNormal, Reason: "Started"}
		m(e)
		return e
	}
	runCreate(t, []testCase{
		{name: "endpoints valid", obj: ep(func(*corev1.Endpoints) {})},
		{name: "endpoints bad IP", obj: ep(func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "nope" }),
			want: []want{{"subsets[0].addresses[0].ip", invalid}}},
		{name: "endpoints bad port", obj: ep(func(e *corev1.Endpoints) { e.Subsets[0].Ports[0].Port = 0 }),
			want: []want{{"subsets[0].ports[0].port", invalid}}},
		{name: "event valid", obj: ev(func(*corev1.Event) {})},
		{name: "event in another namespace than its object", obj: ev(func(e *corev1.Event) { e.InvolvedObject.Namespace = "other" }),
			want: []want{{"involvedObject.namespace", invalid}}},
		{name: "event bad type", obj: ev(func(e *corev1.Event) { e.Type = "Loud" }), want: []want{{"type", invalid}}},
		{name: "serviceaccount bad name", obj: &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "Builder", Namespace: "default"}},
			want: []want{{"metadata.name", invalid}}},
	})
}
