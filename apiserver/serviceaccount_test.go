package apiserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/skiffkube/skiff/apiserver/apiservertest"
)

func tokenConfig(srv *apiservertest.Running, token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(srv.Config)
	cfg.BearerToken = token
	return cfg
}

func TestServiceAccountTokens(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	sa, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	if tr.Status.Token == "" || *tr.Spec.ExpirationSeconds != 3600 {
		t.Fatalf("TokenRequest = %+v", tr)
	}
	robot := clientsetFor(t, tokenConfig(srv, tr.Status.Token))

	who, err := robot.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("whoami with the token: %v", err)
	}
	if u := who.Status.UserInfo; u.Username != "system:serviceaccount:default:robot" || u.UID != string(sa.UID) ||
		!strings.Contains(strings.Join(u.Groups, ","), "system:serviceaccounts:default") {
		t.Errorf("token user = %+v", u)
	}
	if _, err := robot.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("unbound service account lists pods: %v, want 403", err)
	}
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "robot-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "robot", Namespace: "default"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, "bound service account lists pods", func() error {
		_, err := robot.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return err
	})

	t.Run("TokenReview", func(t *testing.T) {
		r, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tr.Status.Token}}, metav1.CreateOptions{})
		if err != nil || !r.Status.Authenticated || r.Status.User.Username != "system:serviceaccount:default:robot" || r.Spec.Token != "" {
			t.Errorf("TokenReview = %+v, %v", r, err)
		}
		r, err = admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{
			Token: tr.Status.Token, Audiences: []string{"vault"}}}, metav1.CreateOptions{})
		if err != nil || r.Status.Authenticated || !strings.Contains(r.Status.Error, "audience") {
			t.Errorf("TokenReview for another audience = %+v, %v", r.Status, err)
		}
	})
	t.Run("a token for another audience is refused by the API", func(t *testing.T) {
		vault, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"vault"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = clientsetFor(t, tokenConfig(srv, vault.Status.Token)).CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) || !strings.Contains(err.Error(), "audience") {
			t.Errorf("vault token: %v, want 401 naming the audience", err)
		}
	})
	t.Run("bad token requests", func(t *testing.T) {
		_, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](60)}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "less than 10 minutes") {
			t.Errorf("60s token: %v", err)
		}
		// 2^64 ns and an hour: as a Duration it wraps around to an hour.
		_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](18446744074 + 3600)}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "larger than 2^32 seconds") {
			t.Errorf("token for 584 years: %v, want 422", err)
		}
		_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "nobody", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("token for a missing service account: %v", err)
		}
		_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "ghost"}}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("token bound to a missing pod: %v", err)
		}
		_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "ConfigMap", Name: "n"}}}, metav1.CreateOptions{})
		if !apierrors.IsBadRequest(err) || err.Error() != "cannot bind token to object of type /, Kind=ConfigMap" {
			t.Errorf("token bound to a ConfigMap: %v, want 400 as Kubernetes", err)
		}
		_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "ghost"}}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("token bound to a missing node: %v", err)
		}
	})
	t.Run("a token bound to a node dies with the node", func(t *testing.T) {
		node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "holder-node"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: node.Name, UID: "not-its-uid"}}}, metav1.CreateOptions{})
		if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "does not match the UID in record") {
			t.Errorf("node reference with another uid: %v, want 409", err)
		}
		bound, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: node.Name, UID: node.UID}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: bound.Status.Token}}, metav1.CreateOptions{})
		if err != nil || !r.Status.Authenticated {
			t.Fatalf("TokenReview of a node-bound token = %+v, %v", r, err)
		}
		extra := r.Status.User.Extra
		if strings.Join(extra["authentication.kubernetes.io/node-name"], "") != node.Name ||
			strings.Join(extra["authentication.kubernetes.io/node-uid"], "") != string(node.UID) || extra["authentication.kubernetes.io/pod-name"] != nil {
			t.Errorf("TokenReview extras of a node-bound token = %v, want the node's name and uid only", extra)
		}
		if err := admin.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = clientsetFor(t, tokenConfig(srv, bound.Status.Token)).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if !apierrors.IsUnauthorized(err) || !strings.Contains(err.Error(), "node holder-node no longer exists") {
			t.Errorf("token of a deleted node: %v, want 401", err)
		}
	})
	t.Run("a token bound to a pod dies with the pod", func(t *testing.T) {
		holder := testPod("holder")
		holder.Spec.ServiceAccountName = "robot"
		pod, err := admin.CoreV1().Pods("default").Create(ctx, holder, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bound, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "holder", UID: pod.UID}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bc := clientsetFor(t, tokenConfig(srv, bound.Status.Token))
		who, err := bc.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil || strings.Join(who.Status.UserInfo.Extra["authentication.kubernetes.io/pod-name"], "") != "holder" {
			t.Fatalf("whoami with a pod-bound token = %+v, %v", who, err)
		}
		if err := admin.CoreV1().Pods("default").Delete(ctx, "holder", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		_, err = bc.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if !apierrors.IsUnauthorized(err) || !strings.Contains(err.Error(), "pod default/holder no longer exists") {
			t.Errorf("token of a deleted pod: %v, want 401", err)
		}
	})
	t.Run("a token of a deleted service account is refused", func(t *testing.T) {
		if err := admin.CoreV1().ServiceAccounts("default").Delete(ctx, "robot", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := robot.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) || !strings.Contains(err.Error(), "serviceaccount default/robot no longer exists") {
			t.Errorf("token of a deleted service account: %v, want 401", err)
		}
		// A new account of the same name does not inherit the old tokens.
		if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = robot.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) || !strings.Contains(err.Error(), "recreated") {
			t.Errorf("token of a recreated service account: %v, want 401", err)
		}
	})
}

// TestPodsMountTheirServiceAccountToken: as Kubernetes' ServiceAccount
// admission, a new pod's containers mount the kube-api-access projected
// volume unless the pod or its account opts out or a container has
// something of its own at the path.
func TestPodsMountTheirServiceAccountToken(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet"},
		AutomountServiceAccountToken: ptr.To(false)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create := func(p *corev1.Pod) *corev1.Pod {
		t.Helper()
		out, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod %s: %v", p.Name, err)
		}
		return out
	}
	tokenVolume := func(p *corev1.Pod) *corev1.Volume {
		for i, v := range p.Spec.Volumes {
			if strings.HasPrefix(v.Name, "kube-api-access-") {
				return &p.Spec.Volumes[i]
			}
		}
		return nil
	}
	mountPath := "/var/run/secrets/kubernetes.io/serviceaccount"

	withInit := testPod("auto")
	withInit.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
	p := create(withInit)
	v := tokenVolume(p)
	if v == nil || v.Projected == nil || len(v.Projected.Sources) != 3 || *v.Projected.DefaultMode != 0o644 {
		t.Fatalf("pod volumes = %+v, want one kube-api-access projected volume", p.Spec.Volumes)
	}
	src := v.Projected.Sources
	if tok := src[0].ServiceAccountToken; tok == nil || tok.Path != "token" || *tok.ExpirationSeconds != 3607 || tok.Audience != "" {
		t.Errorf("token projection = %+v", src[0])
	}
	if cm := src[1].ConfigMap; cm == nil || cm.Name != "kube-root-ca.crt" || len(cm.Items) != 1 || cm.Items[0].Key != "ca.crt" || cm.Items[0].Path != "ca.crt" {
		t.Errorf("CA projection = %+v", src[1])
	}
	if d := src[2].DownwardAPI; d == nil || len(d.Items) != 1 || d.Items[0].Path != "namespace" || d.Items[0].FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("namespace projection = %+v", src[2])
	}
	for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
		if m := c.VolumeMounts; len(m) != 1 || m[0].Name != v.Name || !m[0].ReadOnly || m[0].MountPath != mountPath {
			t.Errorf("container %s mounts %+v, want %s read-only at %s", c.Name, m, v.Name, mountPath)
		}
	}

	optOut := testPod("optout")
	optOut.Spec.AutomountServiceAccountToken = ptr.To(false)
	if p := create(optOut); len(p.Spec.Volumes) != 0 || len(p.Spec.Containers[0].VolumeMounts) != 0 {
		t.Errorf("pod with automountServiceAccountToken false got %+v", p.Spec.Volumes)
	}
	quiet := testPod("quiet")
	quiet.Spec.ServiceAccountName = "quiet"
	if p := create(quiet); tokenVolume(p) != nil {
		t.Errorf("pod of an account with automountServiceAccountToken false got a token volume")
	}
	insist := testPod("insist")
	insist.Spec.ServiceAccountName = "quiet"
	insist.Spec.AutomountServiceAccountToken = ptr.To(true)
	if p := create(insist); tokenVolume(p) == nil {
		t.Errorf("pod asking for a token against its account's default got none")
	}

	// A container with its own volume at the path keeps it; the volume is
	// added only for the containers that have none there.
	own := testPod("own")
	own.Spec.Volumes = []corev1.Volume{{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	own.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: mountPath}}
	if p := create(own); tokenVolume(p) != nil || len(p.Spec.Containers[0].VolumeMounts) != 1 {
		t.Errorf("pod mounting its own volume at the token path = %+v", p.Spec)
	}
	mixed := own.DeepCopy()
	mixed.Name = "mixed"
	mixed.Spec.Containers = append(mixed.Spec.Containers, corev1.Container{Name: "d", Image: "busybox"})
	p = create(mixed)
	if v := tokenVolume(p); v == nil || len(p.Spec.Containers[1].VolumeMounts) != 1 || p.Spec.Containers[1].VolumeMounts[0].Name != v.Name ||
		p.Spec.Containers[0].VolumeMounts[0].Name != "mine" {
		t.Errorf("pod with one container mounting its own volume = %+v", p.Spec)
	}
}

// jwtClaims decodes a token's payload without checking it.
func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a JWT", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPodTokenExtension: a pod-bound token for the API of exactly 3607 s
// (what a kube-api-access volume asks for) is valid for a year and says
// when it should have been renewed; its status still reports 3607 s, so
// the node agent renews it in time. Any other request is issued as asked.
func TestPodTokenExtension(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	pod, err := admin.CoreV1().Pods("default").Create(ctx, testPod("holder"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	request := func(exp int64, aud []string, bound bool) (*authenticationv1.TokenRequest, error) {
		spec := authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp, Audiences: aud}
		if bound {
			spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
		}
		return admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: spec}, metav1.CreateOptions{})
	}
	lifetime := func(tr *authenticationv1.TokenRequest) (time.Duration, map[string]any) {
		c := jwtClaims(t, tr.Status.Token)
		return time.Duration(c["exp"].(float64)-c["iat"].(float64)) * time.Second, c
	}
	year := 365 * 24 * time.Hour

	tr, err := request(3607, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Until(tr.Status.ExpirationTimestamp.Time); left < 3500*time.Second || left > 3608*time.Second {
		t.Errorf("extended token's status expires in %s, want the 3607s asked for", left)
	}
	life, c := lifetime(tr)
	k8s, _ := c["kubernetes.io"].(map[string]any)
	if life != year || k8s == nil || k8s["warnafter"] == nil || k8s["warnafter"].(float64)-c["iat"].(float64) != 3607 {
		t.Errorf("extended token lives %s with claims %v, want a year and warnafter 3607s after issue", life, c)
	}
	for _, tc := range []struct {
		name  string
		exp   int64
		aud   []string
		bound bool
	}{
		{"not bound to a pod", 3607, nil, false},
		{"for another audience", 3607, []string{"vault"}, true},
		{"of another lifetime", 3600, nil, true},
	} {
		tr, err := request(tc.exp, tc.aud, tc.bound)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if life, c := lifetime(tr); life != time.Duration(tc.exp)*time.Second || c["kubernetes.io"].(map[string]any)["warnafter"] != nil {
			t.Errorf("token %s lives %s (claims %v), want %ds and no warnafter", tc.name, life, c, tc.exp)
		}
	}
	// A token bound to a pod is the pod's own account's.
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "other", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name}}}, metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "different serviceaccount name") {
		t.Errorf("token of another account bound to the pod: %v, want 400", err)
	}
}

// TestNodeTokenRequests: a node may ask only for tokens bound to a pod on
// itself (Kubernetes' NodeRestriction; not even one bound to its own Node),
// for the accounts those pods use (the node authorizer).
func TestNodeTokenRequests(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	n1 := clientsetFor(t, srv.UserConfig(t, "system:node:n1", "system:nodes"))
	ctx := context.Background()
	onNode := func(name, node string) *corev1.Pod {
		p := testPod(name)
		p.Spec.NodeName = node
		out, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	n1Node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := onNode("mine", "n1"), onNode("theirs", "n2")
	ask := func(ref *authenticationv1.BoundObjectReference) error {
		_, err := n1.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref}}, metav1.CreateOptions{})
		return err
	}
	// The pod reaches the node authorizer's graph through a watch.
	waitAllowed(t, "token for a pod on the node", func() error {
		return ask(&authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: mine.Name, UID: mine.UID})
	})
	for _, tc := range []struct {
		name string
		ref  *authenticationv1.BoundObjectReference
		want string
	}{
		{"unbound", nil, "node requested token not bound to a pod"},
		{"bound to a secret", &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: "s"}, "node requested token not bound to a pod"},
		{"bound to itself", &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: "n1", UID: n1Node.UID}, "node requested token not bound to a pod"},
		{"without a uid", &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: mine.Name}, "node requested token with a pod binding without a uid"},
		{"for another node's pod", &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: theirs.Name, UID: theirs.UID},
			"node requested token bound to a pod scheduled on a different node"},
	} {
		err := ask(tc.ref)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want 403 %q", tc.name, err, tc.want)
		}
	}
	// The token names the pod's node (Kubernetes' ServiceAccountTokenPodNodeInfo);
	// a pod on a node without a Node object gets its name alone.
	for _, tc := range []struct {
		pod           *corev1.Pod
		wantNode, uid string
	}{{mine, "n1", string(n1Node.UID)}, {theirs, "n2", ""}} {
		tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: tc.pod.Name, UID: tc.pod.UID}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		who, err := clientsetFor(t, tokenConfig(srv, tr.Status.Token)).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		extra := who.Status.UserInfo.Extra
		if got := strings.Join(extra["authentication.kubernetes.io/node-name"], ","); got != tc.wantNode ||
			strings.Join(extra["authentication.kubernetes.io/node-uid"], ",") != tc.uid {
			t.Errorf("token of pod %s: node extras %v, want node %q uid %q", tc.pod.Name, extra, tc.wantNode, tc.uid)
		}
	}

	// Accounts no pod of the node runs as stay out of reach.
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "unused"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = n1.CoreV1().ServiceAccounts("default").CreateToken(ctx, "unused", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: mine.Name, UID: mine.UID}}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("token of an account no pod on the node uses: %v, want 403", err)
	}
}

// TestNodeTokenAudiences: as Kubernetes' ServiceAccountNodeAudienceRestriction
// (beta, on by default since 1.33), a node may ask only for the audiences
// its pod's projected serviceAccountToken volumes name (none is one: the
// kube-api-access volume's), one at a time, unless the authorizer grants
// it request-serviceaccounts-token-audience on the audience for that
// account. Other users are not restricted.
func TestNodeTokenAudiences(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	n1 := clientsetFor(t, srv.UserConfig(t, "system:node:n1", "system:nodes"))
	ctx := context.Background()
	create := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.NodeName = "n1"
		out, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// withVault also gets the kube-api-access volume (empty audience).
	withVault := testPod("with-vault")
	withVault.Spec.Volumes = []corev1.Volume{{Name: "vault-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", Path: "token"}}}}}}}
	withVault = create(withVault)
	bare := testPod("bare")
	bare.Spec.AutomountServiceAccountToken = ptr.To(false)
	bare = create(bare)
	ask := func(c kubernetes.Interface, pod *corev1.Pod, audiences ...string) error {
		_, err := c.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences:      audiences,
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}, metav1.CreateOptions{})
		return err
	}
	notFound := func(aud string) string {
		return `serviceaccounts "default" is forbidden: audience "` + aud + `" not found in pod spec volume, system:node:n1 is not authorized to request tokens for this audience`
	}
	refused := func(what string, err error, want string) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want 403 %q", what, err, want)
		}
	}

	// The pods reach the node authorizer's graph through a watch.
	waitAllowed(t, "the audience of the pod's projected volume", func() error { return ask(n1, withVault, "vault") })
	if err := ask(n1, withVault); err != nil {
		t.Errorf("no audience (the API server's) for a pod with kube-api-access: %v", err)
	}
	refused("an audience the pod does not use", ask(n1, withVault, "other"), notFound("other"))
	refused("no audience for a pod without kube-api-access", ask(n1, bare), notFound(""))
	refused("two audiences", ask(n1, withVault, "vault", ""), "node may only request 0 or 1 audiences")
	if err := ask(admin, withVault, "other"); err != nil {
		t.Errorf("an admin asking for any audience: %v", err)
	}

	// RBAC grants more: the audience is the resource, the account the
	// resource name, in the pod's namespace.
	grant := func(name string, audiences, accounts []string) {
		t.Helper()
		if _, err := admin.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: audiences, ResourceNames: accounts,
				Verbs: []string{"request-serviceaccounts-token-audience"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:nodes"}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grant("other-for-another-account", []string{"other"}, []string{"someone-else"})
	grant("api-server-audience", []string{""}, nil)
	waitAllowed(t, "the API server's audience granted by RBAC", func() error { return ask(n1, bare) })
	refused("an audience granted for another account", ask(n1, withVault, "other"), notFound("other"))
	grant("other", []string{"other"}, []string{"default"})
	waitAllowed(t, "an audience granted by RBAC", func() error { return ask(n1, withVault, "other") })
	refused("an audience not granted", ask(n1, withVault, "third"), notFound("third"))
	grant("any", []string{"*"}, nil)
	waitAllowed(t, "any audience granted by RBAC", func() error { return ask(n1, bare, "myaud://a/b.example") })
}

// TestTokenReviewAudiences: as Kubernetes' TokenReview, a token is
// reviewed for the audiences asked for (the API server's when none are)
// and the status names those of them it is good for. A static token names
// no audience and is good for the API server alone, so another service
// that reviews what a client presented to it does not accept a token meant
// for the API server.
func TestTokenReviewAudiences(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	forOther, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"other"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	forAPI, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	api := forAPI.Spec.Audiences[0]
	for _, tc := range []struct {
		what, token string
		audiences   []string
		want        []string // nil: not authenticated
	}{
		{"the admin's static token, no audiences", apiservertest.AdminToken, nil, []string{api}},
		{"the admin's static token, for the API server", apiservertest.AdminToken, []string{"vault", api}, []string{api}},
		{"the admin's static token, for another service", apiservertest.AdminToken, []string{"vault"}, nil},
		{"a service account token, no audiences", forAPI.Status.Token, nil, []string{api}},
		{"a token for other, reviewed for vault and other", forOther.Status.Token, []string{"vault", "other"}, []string{"other"}},
		{"a token for other, reviewed for vault", forOther.Status.Token, []string{"vault"}, nil},
	} {
		r, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: tc.token, Audiences: tc.audiences}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		if r.Status.Authenticated != (tc.want != nil) || strings.Join(r.Status.Audiences, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: authenticated %v for %v (%s), want audiences %v", tc.what, r.Status.Authenticated, r.Status.Audiences, r.Status.Error, tc.want)
		}
	}
}

// TestTokenRequestBodyMustNameURLAccount: a TokenRequest whose metadata
// names another service account than the URL is a 422 (Kubernetes'
// TokenREST.Create), one of another namespace a 400 (the create handler's
// namespace check), and no token is issued for either.
func TestTokenRequestBodyMustNameURLAccount(t *testing.T) {
	srv := apiservertest.Start(t)
	admin := clientsetFor(t, srv.Config)
	ctx := context.Background()
	sas := admin.CoreV1().ServiceAccounts("default")
	for _, name := range []string{"robot", "other"} {
		if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := sas.CreateToken(ctx, "robot", &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{})
	if st, ok := err.(apierrors.APIStatus); !ok || st.Status().Code != 422 ||
		st.Status().Message != `TokenRequest.authentication.k8s.io "robot" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified` {
		t.Errorf("token for robot naming other: %v (%+v), want 422 naming metadata.name", err, tr)
	}
	tr, err = sas.CreateToken(ctx, "robot", &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "kube-system"}}, metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) || err.Error() != "the namespace of the provided object does not match the namespace sent on the request" {
		t.Errorf("token for default/robot in kube-system: %v (%+v), want 400", err, tr)
	}
	tr, err = sas.CreateToken(ctx, "robot", &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "default"}}, metav1.CreateOptions{})
	if err != nil || tr.Status.Token == "" || tr.Name != "robot" || tr.Namespace != "default" {
		t.Errorf("token for robot naming itself: %v %+v", err, tr)
	}
}
