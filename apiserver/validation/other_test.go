package validation

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestValidateRBAC(t *testing.T) {
	role := func(rules ...rbacv1.PolicyRule) *rbacv1.Role {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: "default"}, Rules: rules}
	}
	read := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}
	binding := func(m func(*rbacv1.RoleBinding)) *rbacv1.RoleBinding {
		b := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "read-pods", Namespace: "default"},
			RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"},
			Subjects:   []rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "ServiceAccount", Name: "builder"}},
		}
		m(b)
		return defaulted(b)
	}
	crb := func(m func(*rbacv1.ClusterRoleBinding)) *rbacv1.ClusterRoleBinding {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "system:admins"},
			RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: "Group", Name: "system:masters"}},
		}
		m(b)
		return defaulted(b)
	}
	runCreate(t, []testCase{
		{name: "role valid", obj: role(read)},
		{name: "role name may contain colons", obj: &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "system:reader", Namespace: "default"}, Rules: []rbacv1.PolicyRule{read}}},
		{name: "role name may not contain a slash", obj: &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "a/b", Namespace: "default"}},
			want: []want{{"metadata.name", invalid}}},
		{name: "verbs required", obj: role(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}}),
			want: []want{{"rules[0].verbs", required}}},
		{name: "resources required", obj: role(rbacv1.PolicyRule{APIGroups: []string{""}, Verbs: []string{"get"}}),
			want: []want{{"rules[0].resources", required}}},
		{name: "namespaced non-resource URL", obj: role(rbacv1.PolicyRule{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}}),
			want: []want{{"rules[0].nonResourceURLs", invalid}}},
		{name: "clusterrole non-resource URL", obj: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "health"},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}}}}},
		{name: "binding valid", obj: binding(func(*rbacv1.RoleBinding) {})},
		{name: "binding bad roleRef kind", obj: binding(func(b *rbacv1.RoleBinding) { b.RoleRef.Kind = "User" }),
			want: []want{{"roleRef.kind", notSupported}}},
		{name: "binding bad subject kind", obj: binding(func(b *rbacv1.RoleBinding) { b.Subjects[0].Kind = "Robot" }),
			want: []want{{"subjects[0].kind", notSupported}}},
		{name: "clusterrolebinding valid", obj: crb(func(*rbacv1.ClusterRoleBinding) {})},
		{name: "clusterrolebinding to a Role", obj: crb(func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.Kind = "Role" }),
			want: []want{{"roleRef.kind", notSupported}}},
		{name: "clusterrolebinding serviceaccount needs namespace", obj: crb(func(b *rbacv1.ClusterRoleBinding) {
			b.Subjects = []rbacv1.Subject{{Kind: "ServiceAccount", Name: "builder"}}
		}), want: []want{{"subjects[0].namespace", required}}},
	})

	old := stored(binding(func(*rbacv1.RoleBinding) {}))
	moved := old.DeepCopy()
	moved.RoleRef.Name = "admin"
	moreSubjects := old.DeepCopy()
	moreSubjects.Subjects = append(moreSubjects.Subjects, rbacv1.Subject{Kind: "User", Name: "bob", APIGroup: rbacv1.GroupName})
	runUpdate(t, []updateCase{
		{name: "subjects may change", old: old, new: moreSubjects},
		{name: "roleRef immutable", old: old, new: moved, want: []want{{"roleRef", invalid}}},
	})
}

func TestValidateSchedulingCoordinationDiscoveryPolicy(t *testing.T) {
	pc := func(name string, value int32) *schedulingv1.PriorityClass {
		return defaulted(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value})
	}
	dur := func(v int32) *int32 { return &v }
	tcp := corev1.ProtocolTCP
	http := "http"
	port := int32(8080)
	slice := func(m func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Namespace: "default"},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.42.0.5"}}},
			Ports:       []discoveryv1.EndpointPort{{Name: &http, Protocol: &tcp, Port: &port}},
		}
		m(s)
		return defaulted(s)
	}
	pdb := func(m func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
		p := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
		m(p)
		return p
	}
	two := intstr.FromInt32(2)
	half := intstr.FromString("50%")
	runCreate(t, []testCase{
		{name: "priorityclass valid", obj: pc("high", 1000)},
		{name: "priorityclass system class", obj: pc("system-node-critical", 2000001000)},
		{name: "priorityclass above user range", obj: pc("huge", 2000000000), want: []want{{"value", forbidden}}},
		{name: "priorityclass reserved prefix", obj: pc("system-mine", 10), want: []want{{"metadata.name", forbidden}}},
		{name: "lease valid", obj: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease"},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: dur(40)}}},
		{name: "lease zero duration", obj: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease"},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: dur(0)}}, want: []want{{"spec.leaseDurationSeconds", invalid}}},
		{name: "endpointslice valid", obj: slice(func(*discoveryv1.EndpointSlice) {})},
		{name: "endpointslice bad address type", obj: slice(func(s *discoveryv1.EndpointSlice) { s.AddressType = "IPX" }),
			want: []want{{"addressType", notSupported}}},
		{name: "endpointslice IPv6 address in IPv4 slice", obj: slice(func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"fd00::1"} }),
			want: []want{{"endpoints[0].addresses[0]", invalid}}},
		{name: "endpointslice endpoint without address", obj: slice(func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = nil }),
			want: []want{{"endpoints[0].addresses", required}}},
		{name: "pdb valid", obj: pdb(func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = &two })},
		{name: "pdb both set", obj: pdb(func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = &two; p.Spec.MaxUnavailable = &half }),
			want: []want{{"spec", invalid}}},
	})

	oldPC := stored(pc("high", 1000))
	newPC := oldPC.DeepCopy()
	newPC.Value = 2000
	oldES := stored(slice(func(*discoveryv1.EndpointSlice) {}))
	newES := oldES.DeepCopy()
	newES.AddressType = discoveryv1.AddressTypeIPv6
	newES.Endpoints[0].Addresses = []string{"fd00::1"}
	runUpdate(t, []updateCase{
		{name: "priorityclass value immutable", old: oldPC, new: newPC, want: []want{{"value", forbidden}}},
		{name: "endpointslice addressType immutable", old: oldES, new: newES, want: []want{{"addressType", invalid}}},
	})
}

func TestValidateName(t *testing.T) {
	tests := []struct {
		kind, name string
		valid      bool
	}{
		{"Pod", "web-0.a", true},
		{"Pod", "Web", false},
		{"Namespace", "team-a", true},
		{"Namespace", "team.a", false},
		{"Service", "web", true},
		{"Service", "1web", false},
		{"ClusterRole", "system:controller:x", true},
		{"ClusterRole", "..", false},
		{"Widget", "widgets.example.com", true}, // custom resources: subdomain
		{"Widget", "Widget", false},
	}
	for _, tc := range tests {
		errs := ValidateName(tc.kind)(tc.name, false)
		if (len(errs) == 0) != tc.valid {
			t.Errorf("ValidateName(%q)(%q) = %v, want valid=%v", tc.kind, tc.name, errs, tc.valid)
		}
	}
	// generateName prefixes may end with a dash.
	if errs := ValidateName("Pod")("web-", true); len(errs) != 0 {
		t.Errorf("prefix rejected: %v", errs)
	}
}

func TestUnknownTypes(t *testing.T) {
	if errs := Validate(&metav1.Status{}); errs != nil {
		t.Errorf("Validate(unknown) = %v", errs)
	}
	if errs := Validate(nil); errs != nil {
		t.Errorf("Validate(nil) = %v", errs)
	}
}
