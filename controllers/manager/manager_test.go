package manager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/record"

	"github.com/skiffkube/skiff/controllers/controllertest"
)

func TestConfigValidation(t *testing.T) {
	client := controllertest.NewClient()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"defaults are valid", Config{}, ""},
		{"unknown controller is named", Config{Controllers: []string{"nope"}}, `unknown controller "nope"`},
		{"a controller asked for by name must be buildable", Config{Controllers: []string{"namespace-controller"}}, "Options.Metadata"},
		{"the root CA publisher asked for by name needs a root CA", Config{Controllers: []string{"root-ca-cert-publisher"}}, "Options.RootCA"},
		{"an unknown controller left out is named too", Config{Controllers: []string{"*", "-nope"}}, `unknown controller "nope" in "*,-nope"`},
		{"nothing left to run", Config{Controllers: []string{"job-controller", "-job-controller"}}, `"job-controller,-job-controller" leaves no controller to run`},
		{"a kube controller skiff folds into a larger one", Config{Controllers: []string{"*", "-pvc-protection"}},
			`"pvc-protection" is part of skiff's volume-protection-controller, which can only run or stop as a whole: name volume-protection-controller instead (in "*,-pvc-protection")`},
		{"a kube controller skiff has not", Config{Controllers: []string{"*", "bootstrapsigner"}}, `unknown controller "bootstrapsigner" in "*,bootstrapsigner"`},
		{"a kube name of a controller that must be buildable", Config{Controllers: []string{"garbagecollector"}}, "Options.Metadata"},
		{"node monitor grace period within one Lease renewal", Config{NodeMonitorGracePeriod: 10 * time.Second}, "node monitor grace period 10s: must be more than 10s"},
		{"node startup grace period within one Lease renewal", Config{NodeStartupGracePeriod: 5 * time.Second}, "node startup grace period 5s: must be more than 10s"},
		{"negative workers", Config{Workers: -1}, "workers"},
		{"more endpoints per slice than Kubernetes allows", Config{MaxEndpointsPerSlice: 1001}, "--max-endpoints-per-slice 1001: must be 1-1000"},
		{"negative endpoints per mirrored subset", Config{MirroringMaxEndpointsPerSubset: -1}, "--mirroring-max-endpoints-per-subset -1: must be 1-1000"},
		{"a negative legacy token clean-up period", Config{LegacyServiceAccountTokenCleanUpPeriod: -time.Hour}, "--legacy-service-account-token-clean-up-period -1h0m0s: must be positive"},
		{"renew deadline must be below lease duration", Config{LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}, "leaseDuration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(client, tc.cfg, Options{})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				// Without a metadata client the controllers that reach any resource do not run,
				// nor without a root CA its publisher.
				skipped := []string{"namespace-controller", "garbage-collector-controller", "root-ca-cert-publisher"}
				if len(m.Controllers()) != len(Registry)-len(skipped) || slices.ContainsFunc(m.Controllers(), func(n string) bool { return slices.Contains(skipped, n) }) {
					t.Errorf("controllers = %v, want all of the registry but %v", m.Controllers(), skipped)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
}

// --controllers, as kube-controller-manager reads it: "*" is all of them,
// a name adds one, -name leaves one out; what "*" brought in may be
// skipped for want of an option, what was named may not.
func TestControllersSelection(t *testing.T) {
	client := controllertest.NewClient()
	opts := Options{Metadata: metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()), RootCA: []byte("ca")}
	all := slices.Sorted(maps.Keys(Registry))
	without := func(names ...string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(names, n) })
	}
	for _, tc := range []struct {
		spec []string
		opts Options
		want []string
	}{
		{nil, opts, all},
		{[]string{"*"}, opts, all},
		{[]string{"*", "-nodeipam-controller", "-local-path-provisioner"}, opts, without("nodeipam-controller", "local-path-provisioner")},
		{[]string{"-job-controller", "*"}, opts, without("job-controller")},
		{[]string{"job-controller", "cronjob-controller", "job-controller"}, opts, []string{"cronjob-controller", "job-controller"}},
		// kube-controller-manager's names, canonical and older alias, for the same controllers.
		{[]string{"*", "-node-ipam-controller", "-podgc"}, opts, without("nodeipam-controller", "pod-garbage-collector")},
		{[]string{"job", "cronjob-controller", "serviceaccount-token"}, opts, []string{"cronjob-controller", "job-controller", "token-secret-controller"}},
		{[]string{"nodelifecycle", "node-lifecycle-controller"}, opts, []string{"nodelifecycle-controller"}},
		{[]string{"endpointslicemirroring", "endpointslice-mirroring-controller"}, opts, []string{"endpointslice-mirroring-controller"}},
		// Without a root CA, "*" runs everything else; naming the publisher as well is an error (TestConfigValidation).
		{[]string{"*"}, Options{Metadata: opts.Metadata}, without("root-ca-cert-publisher")},
	} {
		spec := slices.Clone(tc.spec)
		m, err := New(client, Config{Controllers: spec}, tc.opts)
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		if !slices.Equal(m.Controllers(), tc.want) {
			t.Errorf("%q runs %v, want %v", tc.spec, m.Controllers(), tc.want)
		}
		if !slices.Equal(spec, tc.spec) {
			t.Errorf("New changed the caller's list %q to %q", tc.spec, spec)
		}
	}
}

// Every kube-controller-manager name maps to a controller skiff has, and
// none hides one of skiff's own.
func TestKubeControllerNames(t *testing.T) {
	for kube, skiff := range kubeNames {
		if _, ok := Registry[skiff]; !ok {
			t.Errorf("kube name %q maps to %q, which is not in the registry", kube, skiff)
		}
		if _, ok := Registry[kube]; ok {
			t.Errorf("kube name %q is also a skiff name", kube)
		}
	}
	for kube, skiff := range kubeFolded {
		if _, ok := Registry[skiff]; !ok {
			t.Errorf("folded kube name %q points at %q, which is not in the registry", kube, skiff)
		}
		if _, ok := kubeNames[kube]; ok {
			t.Errorf("kube name %q is both an alias and folded", kube)
		}
	}
}

// A Deployment becomes a ReplicaSet and pods purely through informers, queues and the clientset.
func TestRunReconcilesThroughInformers(t *testing.T) {
	replicas := int32(3)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-web", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
	client := controllertest.NewClient(d)
	m, err := New(client, Config{Workers: 1}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 3, nil
	})
	cancel()
	if err != nil {
		t.Fatalf("pods never reached 3: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err == nil {
		t.Error("a second Run succeeded")
	}
	rss, _ := client.AppsV1().ReplicaSets("ns").List(context.Background(), metav1.ListOptions{})
	if len(rss.Items) != 1 || !strings.HasPrefix(rss.Items[0].Name, "web-") {
		t.Errorf("replicasets = %v", rss.Items)
	}
}

func TestLeaderElectionHandsOver(t *testing.T) {
	client := controllertest.NewClient()
	cfg := func(id string) Config {
		return Config{Identity: id, LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond}
	}
	a, err := New(client, cfg("a"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(client, cfg("b"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	holder := func(ctx context.Context) string {
		l, err := client.CoordinationV1().Leases(DefaultLeaseNamespace).Get(ctx, DefaultLeaseName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	doneA := make(chan error, 1)
	go func() { doneA <- a.RunWithLeaderElection(ctxA) }()
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		return holder(ctx) == "a", nil
	}); err != nil {
		t.Fatal("a never became leader")
	}
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	doneB := make(chan error, 1)
	go func() { doneB <- b.RunWithLeaderElection(ctxB) }()
	// While a renews, b must stay a follower.
	time.Sleep(500 * time.Millisecond)
	if h := holder(context.Background()); h != "a" {
		t.Fatalf("holder = %q while a is alive", h)
	}
	cancelA()
	if err := <-doneA; err != nil {
		t.Fatalf("a returned %v after its context ended", err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		return holder(ctx) == "b", nil
	}); err != nil {
		t.Fatalf("b never took over; holder %q", holder(context.Background()))
	}
	cancelB()
	if err := <-doneB; err != nil && !errors.Is(err, ErrLostLeadership) {
		t.Fatal(err)
	}
}

func TestMetadataClientAndRootCAEnableEveryController(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	m, err := New(controllertest.NewClient(), Config{}, Options{Metadata: metadatafake.NewSimpleMetadataClient(scheme), RootCA: []byte("ca")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(m.Controllers(), "namespace-controller") || !slices.Contains(m.Controllers(), "root-ca-cert-publisher") ||
		len(m.Controllers()) != len(Registry) {
		t.Errorf("controllers = %v, want the whole registry", m.Controllers())
	}
}

// kube-controller-manager's --terminated-pod-gc-threshold disables with 0
// or less; podgc's zero option means its default, so 0 must become -1.
func TestTerminatedPodGCThresholdFromFlag(t *testing.T) {
	for flag, want := range map[int]int{12500: 12500, 1: 1, 0: -1, -5: -1} {
		if got := TerminatedPodGCThresholdFromFlag(flag); got != want {
			t.Errorf("TerminatedPodGCThresholdFromFlag(%d) = %d, want %d", flag, got, want)
		}
	}
}

// --concurrent-*-syncs set one controller's workers; the others keep
// Workers, and a count below 1 or an unknown controller is refused.
func TestConcurrentSyncs(t *testing.T) {
	cfg := Config{ConcurrentSyncs: map[string]int{"garbage-collector-controller": 20}}
	if _, err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	if got := cfg.workers("garbage-collector-controller"); got != 20 {
		t.Errorf("garbage collector workers = %d, want 20", got)
	}
	if got := cfg.workers("deployment-controller"); got != DefaultWorkers {
		t.Errorf("deployment workers = %d, want %d", got, DefaultWorkers)
	}
	for _, bad := range []map[string]int{{"deployment-controller": 0}, {"hpa-controller": 3}} {
		c := Config{ConcurrentSyncs: bad}
		if _, err := c.defaults(); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	for _, f := range ConcurrentSyncsFlags {
		if _, ok := Registry[f.Controller]; !ok {
			t.Errorf("--%s names unknown controller %q", f.Flag, f.Controller)
		}
	}
}

// --max-endpoints-per-slice and --mirroring-max-endpoints-per-subset reach
// the EndpointSlice controllers; left at zero they are Kubernetes' defaults.
func TestEndpointLimits(t *testing.T) {
	cfg := Config{}
	if _, err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	if cfg.MaxEndpointsPerSlice != 100 || cfg.MirroringMaxEndpointsPerSubset != 1000 {
		t.Errorf("defaults: %d endpoints per slice, %d per mirrored subset; want 100, 1000", cfg.MaxEndpointsPerSlice, cfg.MirroringMaxEndpointsPerSubset)
	}

	objs := []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-web"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: "10.43.0.10", Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "ns", UID: "uid-ext"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.43.0.11", Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "ns", UID: "uid-ext-ep"},
			Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "192.0.2.1"}, {IP: "192.0.2.2"}}, Ports: []corev1.EndpointPort{{Port: 80}}}}},
	}
	for i := range 3 {
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: "ns", UID: types.UID(fmt.Sprintf("uid-pod-%d", i)), Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{NodeName: "n1"},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.42.0.%d", i+2)},
		})
	}
	client := controllertest.NewClient(objs...)
	m, err := New(client, Config{Workers: 1, Controllers: []string{"endpointslice-controller", "endpointslice-mirroring-controller"},
		MaxEndpointsPerSlice: 2, MirroringMaxEndpointsPerSubset: 1}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var sizes map[string][]int
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		sizes = map[string][]int{}
		for _, s := range l.Items {
			sizes[s.Labels[discoveryv1.LabelServiceName]] = append(sizes[s.Labels[discoveryv1.LabelServiceName]], len(s.Endpoints))
		}
		slices.Sort(sizes["web"])
		return slices.Equal(sizes["web"], []int{1, 2}) && slices.Equal(sizes["ext"], []int{1}), nil
	})
	cancel()
	if err != nil {
		t.Errorf("endpoints per slice by Service = %v, want web's 3 in slices of at most 2, ext's subset mirrored to 1", sizes)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestEventSourcesAreKubeControllerManagers: each controller's Events come
// from the component kube-controller-manager's counterpart reports, so
// `kubectl describe` shows the From a Kubernetes user knows (node-controller
// for a node not ready, endpoint-slice-controller, controllermanager for a
// disruption budget), whatever skiff calls the controller in logs.
func TestEventSourcesAreKubeControllerManagers(t *testing.T) {
	cfg := Config{}
	if _, err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"cronjob-controller":                 {"cronjob-controller"},
		"daemonset-controller":               {"daemonset-controller"},
		"deployment-controller":              {"deployment-controller"},
		"disruption-controller":              {"controllermanager"},
		"endpoints-controller":               {"endpoint-controller"},
		"endpointslice-controller":           {"endpoint-slice-controller"},
		"endpointslice-mirroring-controller": {"endpoint-slice-mirroring-controller"},
		"job-controller":                     {"job-controller"},
		"nodeipam-controller":                {"cidrAllocator"},
		"nodelifecycle-controller":           {"node-controller", "taint-eviction-controller"},
		"persistentvolume-binder-controller": {"persistentvolume-controller"},
		"replicaset-controller":              {"replicaset-controller"},
		"replicationcontroller-controller":   {"replication-controller"},
		"statefulset-controller":             {"statefulset-controller"},
	}
	scheme := metadatafake.NewTestScheme()
	for name, sources := range want {
		var got []string
		b := BuildContext{
			Client: controllertest.NewClient(), Informers: informers.NewSharedInformerFactory(controllertest.NewClient(), 0), Config: cfg,
			Options: Options{Metadata: metadatafake.NewSimpleMetadataClient(scheme), RootCA: []byte("ca")},
			Recorder: func(component string) record.EventRecorder {
				got = append(got, component)
				return record.NewFakeRecorder(1)
			},
		}
		if _, err := Registry[name](b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if slices.Sort(got); !slices.Equal(got, sources) {
			t.Errorf("%s records Events as %v, want %v", name, got, sources)
		}
	}
}
