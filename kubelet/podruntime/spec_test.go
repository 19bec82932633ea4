package podruntime

import (
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiffkube/skiff/kubelet/nodeapi"
	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"},
		Spec:       corev1.PodSpec{NodeName: "node-a", ServiceAccountName: "default"},
	}
}

func TestEnvForResolvesLiteralsFieldRefsAndReferences(t *testing.T) {
	c := &corev1.Container{Env: []corev1.EnvVar{
		{Name: "A", Value: "one"},
		{Name: "B", Value: "$(A)-two $$(A) $(MISSING)"},
		{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
		{Name: "TIER", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}}},
		{Name: "ABSENT", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['absent']"}}},
	}}
	pod := testPod()
	pod.Labels = map[string]string{"tier": "front"}
	pod.Annotations = map[string]string{"batch.kubernetes.io/job-completion-index": "3"}
	got, err := envFor(pod, c, "10.1.0.5", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"A=one", "B=one-two $(A) $(MISSING)", "POD=web", "NS=shop", "IP=10.1.0.5", "NODE=node-a", "INDEX=3", "TIER=front", "ABSENT="}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("env = %q, want %q", got, want)
	}
	if args := expandAll([]string{"--name=$(POD)", "$(NOPE)"}, got); !reflect.DeepEqual(args, []string{"--name=web", "$(NOPE)"}) {
		t.Errorf("expandAll = %q", args)
	}
}

func TestEnvForRejectsWhatItCannotResolve(t *testing.T) {
	cases := []struct {
		name string
		c    corev1.Container
	}{
		{"secret key", corev1.Container{Env: []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}}},
		{"unknown field", corev1.Container{Env: []corev1.EnvVar{{Name: "F", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		{"subscript of a field without keys", corev1.Container{Env: []corev1.EnvVar{{Name: "F", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name['x']"}}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := envFor(testPod(), &tc.c, "10.1.0.5", nil, nil); !errors.Is(err, errConfig) {
				t.Errorf("err = %v, want a configuration error", err)
			}
		})
	}
}

func TestResourcesForFollowsTheKubelet(t *testing.T) {
	q := resource.MustParse
	cases := []struct {
		name string
		res  corev1.ResourceRequirements
		want krt.Resources
	}{
		{"nothing set", corev1.ResourceRequirements{}, krt.Resources{}},
		{"request only", corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("250m")}},
			krt.Resources{CPUShares: 256}},
		{"limit only sets the request too", corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("32Mi")}},
			krt.Resources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimit: 32 << 20}},
		{"tiny request gets the minimum shares", corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("1m")}},
			krt.Resources{CPUShares: 2}},
		{"tiny limit gets the minimum quota", corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: q("1m")}},
			krt.Resources{CPUShares: 2, CPUQuota: 1000, CPUPeriod: 100000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := resourcesFor(&corev1.Container{Resources: tc.res}); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSecurityForMergesPodAndContainer(t *testing.T) {
	u, g, cu := int64(1000), int64(2000), int64(3000)
	tr := true
	pod := testPod()
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &u, RunAsGroup: &g}
	c := &corev1.Container{SecurityContext: &corev1.SecurityContext{
		RunAsUser: &cu, ReadOnlyRootFilesystem: &tr,
		Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}},
	}}
	s := securityFor(pod, c)
	if *s.RunAsUser != 3000 || *s.RunAsGroup != 2000 || !s.ReadOnlyRootFilesystem || s.Privileged ||
		!reflect.DeepEqual(s.AddCapabilities, []string{"NET_ADMIN"}) || !reflect.DeepEqual(s.DropCapabilities, []string{"ALL"}) {
		t.Errorf("merged %+v", s)
	}
	if s := securityFor(pod, &corev1.Container{}); *s.RunAsUser != 1000 {
		t.Errorf("pod-level user not inherited: %+v", s)
	}
}

func TestMountsFor(t *testing.T) {
	pod := testPod()
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv"}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		{Name: "ro-claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: true}}},
		{Name: "lost", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "gone"}}},
	}
	claims := map[string]string{"claim": "/var/lib/skiff/agent/storage/pvc-1", "ro-claim": "/var/lib/skiff/agent/storage/pvc-1"}
	got, err := mountsFor(pod, &corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "host", MountPath: "/data", ReadOnly: true},
		{Name: "claim", MountPath: "/claim"},
		{Name: "ro-claim", MountPath: "/ro"},
	}}, "/pods/uid-1", nil, claims, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []krt.Mount{
		{HostPath: "/pods/uid-1/volumes/empty-dir/scratch", ContainerPath: "/scratch"},
		{HostPath: "/srv", ContainerPath: "/data", ReadOnly: true},
		{HostPath: "/var/lib/skiff/agent/storage/pvc-1", ContainerPath: "/claim"},
		{HostPath: "/var/lib/skiff/agent/storage/pvc-1", ContainerPath: "/ro", ReadOnly: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mounts = %+v", got)
	}
	for name, vm := range map[string]corev1.VolumeMount{
		"unknown volume":   {Name: "nope", MountPath: "/x"},
		"unsupported kind": {Name: "cfg", MountPath: "/x"},
		"subPath":          {Name: "scratch", MountPath: "/x", SubPath: "a"},
		"unresolved claim": {Name: "lost", MountPath: "/x"},
	} {
		failed := map[string]error{"cfg": errors.New("configMap \"x\" not found"), "lost": errors.New("persistentvolumeclaim \"gone\" not found")}
		if _, err := mountsFor(pod, &corev1.Container{VolumeMounts: []corev1.VolumeMount{vm}}, "/pods/uid-1", failed, claims, false); !errors.Is(err, errConfig) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// A read-only mount asking for recursiveReadOnly is made recursively
// read-only where the runtime can (IfPossible falls back to plain
// read-only where it cannot); Enabled where it cannot keeps the container
// from starting, with the kubelet's message.
func TestMountsForRecursiveReadOnly(t *testing.T) {
	pod := testPod()
	pod.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv"}}}}
	mount := func(mode corev1.RecursiveReadOnlyMode) *corev1.Container {
		return &corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "host", MountPath: "/data", ReadOnly: true, RecursiveReadOnly: &mode}}}
	}
	cases := []struct {
		name      string
		mode      corev1.RecursiveReadOnlyMode
		supported bool
		want      bool
	}{
		{"Enabled where supported", corev1.RecursiveReadOnlyEnabled, true, true},
		{"IfPossible where supported", corev1.RecursiveReadOnlyIfPossible, true, true},
		{"IfPossible where not", corev1.RecursiveReadOnlyIfPossible, false, false},
		{"Disabled", corev1.RecursiveReadOnlyDisabled, true, false},
	}
	for _, tc := range cases {
		got, err := mountsFor(pod, mount(tc.mode), "/pods/uid-1", nil, nil, tc.supported)
		want := []krt.Mount{{HostPath: "/srv", ContainerPath: "/data", ReadOnly: true, RecursiveReadOnly: tc.want}}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: mounts %+v, %v; want %+v", tc.name, got, err, want)
		}
	}
	_, err := mountsFor(pod, mount(corev1.RecursiveReadOnlyEnabled), "/pods/uid-1", nil, nil, false)
	const msg = `failed to resolve recursive read-only mode: volume "host" requested recursive read-only mode, but it is not supported by the runtime`
	if !errors.Is(err, errConfig) || err.Error() != msg {
		t.Errorf("Enabled where unsupported: err = %v, want the kubelet's %q (CreateContainerConfigError)", err, msg)
	}
}

// The node API serves logs and exec straight from the pod runtime.
var _ nodeapi.Pods = (*Runtime)(nil)

// The node reports one runtime handler, the default (""), with what the
// containers' runtime can do: recursive read-only mounts as detected, no
// user namespaces (the agent refuses pods with hostUsers: false).
func TestRuntimeHandlers(t *testing.T) {
	for _, rro := range []bool{true, false} {
		got := (&Runtime{rro: rro}).RuntimeHandlers()
		want := []corev1.NodeRuntimeHandler{{Name: "", Features: &corev1.NodeRuntimeHandlerFeatures{RecursiveReadOnlyMounts: &rro, UserNamespaces: new(bool)}}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("rro %v: handlers %+v, want %+v", rro, got, want)
		}
	}
}
