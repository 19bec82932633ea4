package agent

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// As the v1.33 kubelet's resolveRecursiveReadOnly: IfPossible follows the
// runtime handler's support; Enabled without it is an error, worded as
// the kubelet's, that keeps the container from starting.
func TestResolveRecursiveReadOnly(t *testing.T) {
	mount := func(mode corev1.RecursiveReadOnlyMode) corev1.VolumeMount {
		return corev1.VolumeMount{Name: "config", MountPath: "/etc/app", ReadOnly: true, RecursiveReadOnly: &mode}
	}
	cases := []struct {
		name      string
		m         corev1.VolumeMount
		supported bool
		want      bool
		err       string
	}{
		{"unset", corev1.VolumeMount{Name: "config", ReadOnly: true}, true, false, ""},
		{"Disabled", mount(corev1.RecursiveReadOnlyDisabled), true, false, ""},
		{"IfPossible with support", mount(corev1.RecursiveReadOnlyIfPossible), true, true, ""},
		{"IfPossible without support", mount(corev1.RecursiveReadOnlyIfPossible), false, false, ""},
		{"Enabled with support", mount(corev1.RecursiveReadOnlyEnabled), true, true, ""},
		{"Enabled without support", mount(corev1.RecursiveReadOnlyEnabled), false, false,
			`failed to resolve recursive read-only mode: volume "config" requested recursive read-only mode, but it is not supported by the runtime`},
		{"Enabled on a writable mount", corev1.VolumeMount{Name: "config", RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyEnabled)}, true, false,
			`failed to resolve recursive read-only mode: volume "config" requested recursive read-only mode, but it is not read-only`},
		{"Enabled with propagation", corev1.VolumeMount{Name: "config", ReadOnly: true, RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyEnabled),
			MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)}, true, false,
			`failed to resolve recursive read-only mode: volume "config" requested recursive read-only mode, but it is not compatible with propagation "HostToContainer"`},
		{"unknown mode", mount("Sometimes"), true, false, `failed to resolve recursive read-only mode: unknown recursive read-only mode "Sometimes"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveRecursiveReadOnly(tc.m, tc.supported)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if got != tc.want || msg != tc.err {
				t.Errorf("ResolveRecursiveReadOnly = %v, %q; want %v, %q", got, msg, tc.want, tc.err)
			}
		})
	}
}

// On a runtime whose default handler makes recursively read-only mounts,
// a read-only mount resolved to one reports Enabled, the others Disabled,
// as the kubelet reports them.
func TestVolumeMountsReportRecursiveReadOnlyWhereTheRuntimeMakesIt(t *testing.T) {
	pod, state := specPod()
	app := &pod.Spec.Containers[0]
	app.VolumeMounts = append(app.VolumeMounts, corev1.VolumeMount{Name: "secret", MountPath: "/etc/secret", ReadOnly: true,
		RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyEnabled)})
	enabled, disabled := corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyDisabled
	cases := []struct {
		name       string
		rro        bool
		config     corev1.RecursiveReadOnlyMode // IfPossible
		secret     corev1.RecursiveReadOnlyMode // Enabled
		saReported corev1.RecursiveReadOnlyMode // unset
	}{
		{"with support", true, enabled, enabled, disabled},
		{"without support", false, disabled, disabled, disabled}, // the Enabled one does not start
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := computeStatus(pod, state, "10.0.0.5", "192.168.1.10", time.Now(), tc.rro)
			want := []corev1.VolumeMountStatus{
				{Name: "data", MountPath: "/data"},
				{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true, RecursiveReadOnly: &tc.saReported},
				{Name: "config", MountPath: "/etc/app", ReadOnly: true, RecursiveReadOnly: &tc.config},
				{Name: "secret", MountPath: "/etc/secret", ReadOnly: true, RecursiveReadOnly: &tc.secret},
			}
			if got := findStatus(st.ContainerStatuses, "app").VolumeMounts; !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("app's volumeMounts %+v, want %+v", got, want)
			}
		})
	}
}

// handlersRuntime is a runtime that reports its runtime handlers.
type handlersRuntime struct {
	fakeVersionRuntime
	handlers []corev1.NodeRuntimeHandler
}

func (r handlersRuntime) RuntimeHandlers() []corev1.NodeRuntimeHandler { return r.handlers }

// The node status lists the runtime's handlers as the v1.33 kubelet
// does (status.runtimeHandlers), and pods resolve their mounts against
// the default one's; a runtime that reports none supports neither.
func TestNodeStatusListsTheRuntimeHandlers(t *testing.T) {
	handlers := []corev1.NodeRuntimeHandler{{Name: "", Features: &corev1.NodeRuntimeHandlerFeatures{
		RecursiveReadOnlyMounts: ptr.To(true), UserNamespaces: ptr.To(false)}}}
	cfg, err := Config{NodeName: "n", Logger: slog.New(slog.DiscardHandler)}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		rt   Runtime
		want []corev1.NodeRuntimeHandler
		rro  bool
	}{
		{"reporting a default handler with support", handlersRuntime{handlers: handlers}, handlers, true},
		{"reporting none", fakeVersionRuntime{}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &node{cfg: cfg, runtime: tc.rt}
			var st corev1.NodeStatus
			n.fillStatus(&st, n.observeRuntime(context.Background()), metav1.Now())
			if !equality.Semantic.DeepEqual(st.RuntimeHandlers, tc.want) {
				t.Errorf("runtimeHandlers %+v, want %+v", st.RuntimeHandlers, tc.want)
			}
			if got := supportsRecursiveReadOnly(tc.rt); got != tc.rro {
				t.Errorf("recursive read-only mounts supported: %v, want %v", got, tc.rro)
			}
		})
	}
}
