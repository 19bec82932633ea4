package legacytokencleaner

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"

	"github.com/skiffkube/skiff/apiserver/serviceaccount"
	"github.com/skiffkube/skiff/controllers/controllertest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// now is the tests' clock: well over a year after tracking began.
var now = time.Date(2027, 6, 15, 12, 0, 0, 0, time.UTC)

func day(s string) time.Time {
	d, err := time.Parse(dateFormat, s)
	if err != nil {
		panic(err)
	}
	return d
}

func tracking(since string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: trackingConfigMap, Namespace: "kube-system"},
		Data: map[string]string{trackingSinceKey: since}}
}

// account is the service account "builder", listing secrets.
func account(secrets ...string) *corev1.ServiceAccount {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: "ci", UID: "sa-uid"}}
	for _, s := range secrets {
		sa.Secrets = append(sa.Secrets, corev1.ObjectReference{Name: s})
	}
	return sa
}

// token is builder's token Secret "builder-token", created on 2025-01-01,
// changed by edit.
func token(edit func(*corev1.Secret)) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "builder-token", Namespace: "ci", UID: "secret-uid", ResourceVersion: "5",
			CreationTimestamp: metav1.NewTime(day("2025-01-01")), Labels: map[string]string{},
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "builder", corev1.ServiceAccountUIDKey: "sa-uid"}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	if edit != nil {
		edit(s)
	}
	return s
}

func labelled(key, value string) func(*corev1.Secret) {
	return func(s *corev1.Secret) { s.Labels[key] = value }
}

func pod(spec corev1.PodSpec) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ci"}, Spec: spec}
}

// run makes one pass over objs with a fake API holding them and reports
// what it wrote: "marked <date>", "deleted", or "" for nothing.
func run(t *testing.T, cm *corev1.ConfigMap, objs ...runtime.Object) (string, error) {
	t.Helper()
	all := objs
	if cm != nil {
		all = append([]runtime.Object{cm}, objs...)
	}
	client := controllertest.NewClient(all...)
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := New(client, f.Core().V1().Secrets(), f.Core().V1().ServiceAccounts(), f.Core().V1().Pods(),
		Options{Logger: quiet, CleanUpPeriod: DefaultCleanUpPeriod, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.(type) {
		case *corev1.Secret:
			controllertest.Load(t, f.Core().V1().Secrets().Informer(), o)
		case *corev1.ServiceAccount:
			controllertest.Load(t, f.Core().V1().ServiceAccounts().Informer(), o)
		case *corev1.Pod:
			controllertest.Load(t, f.Core().V1().Pods().Informer(), o)
		}
	}
	client.ClearActions()
	err = c.Sync(context.Background())
	var out string
	for _, a := range controllertest.Filter(client.Actions(), "", "secrets") {
		switch a := a.(type) {
		case k8stesting.PatchAction:
			s, getErr := client.CoreV1().Secrets("ci").Get(context.Background(), a.GetName(), metav1.GetOptions{})
			if getErr != nil {
				t.Fatal(getErr)
			}
			out += "marked " + s.Labels[invalidSinceLabel]
		case k8stesting.DeleteAction:
			out += "deleted"
			if p := a.GetDeleteOptions().Preconditions; p == nil || p.ResourceVersion == nil || *p.ResourceVersion != "5" {
				t.Errorf("delete without the resourceVersion judged as precondition: %+v", p)
			}
		default:
			t.Errorf("unexpected %s of secrets", a.GetVerb())
		}
	}
	return out, err
}

func TestSync(t *testing.T) {
	volume := func(v corev1.VolumeSource) *corev1.Pod {
		return pod(corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: v}}})
	}
	tests := []struct {
		name string
		objs []runtime.Object
		want string
	}{
		{"never used since tracking began: marked invalid today",
			[]runtime.Object{account("builder-token"), token(nil)}, "marked 2027-06-15"},
		{"last used more than a period ago: marked",
			[]runtime.Object{account("builder-token"), token(labelled(lastUsedLabel, "2026-06-14"))}, "marked 2027-06-15"},
		{"last used within the period: kept",
			[]runtime.Object{account("builder-token"), token(labelled(lastUsedLabel, "2026-06-15"))}, ""},
		{"a malformed last-used date: kept",
			[]runtime.Object{account("builder-token"), token(labelled(lastUsedLabel, "last tuesday"))}, ""},
		{"created within the period: kept",
			[]runtime.Object{account("builder-token"), token(func(s *corev1.Secret) { s.CreationTimestamp = metav1.NewTime(now.AddDate(0, -6, 0)) })}, ""},
		{"being deleted: left alone",
			[]runtime.Object{account("builder-token"), token(func(s *corev1.Secret) { ts := metav1.NewTime(now); s.DeletionTimestamp = &ts })}, ""},
		{"not a service account token: left alone",
			[]runtime.Object{account("builder-token"), token(func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque })}, ""},
		{"created by hand (the account does not list it): left alone",
			[]runtime.Object{account(), token(nil)}, ""},
		{"its account is gone: left alone",
			[]runtime.Object{token(nil)}, ""},
		{"the account was recreated (another uid): left alone",
			[]runtime.Object{token(nil), func() *corev1.ServiceAccount {
				sa := account("builder-token")
				sa.UID = "other"
				return sa
			}()}, ""},
		{"mounted by a pod: kept",
			[]runtime.Object{account("builder-token"), token(nil), volume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "builder-token"}})}, ""},
		{"in a pod's projected volume: kept",
			[]runtime.Object{account("builder-token"), token(nil), volume(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "builder-token"}}}}}})}, ""},
		{"a pod's environment refers to it: kept",
			[]runtime.Object{account("builder-token"), token(nil), pod(corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{{Name: "T",
				ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "builder-token"}, Key: "token"}}}}}}})}, ""},
		{"an image pull secret of a pod: kept",
			[]runtime.Object{account("builder-token"), token(nil), pod(corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "builder-token"}}})}, ""},
		{"a pod of another namespace does not count",
			[]runtime.Object{account("builder-token"), token(nil), func() *corev1.Pod {
				p := volume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "builder-token"}})
				p.Namespace = "other"
				return p
			}()}, "marked 2027-06-15"},
		{"invalid for more than a period: deleted",
			[]runtime.Object{account("builder-token"), token(labelled(invalidSinceLabel, "2026-06-14"))}, "deleted"},
		{"invalid for less than a period: kept",
			[]runtime.Object{account("builder-token"), token(labelled(invalidSinceLabel, "2026-06-15"))}, ""},
		{"a malformed invalid-since date: marked again",
			[]runtime.Object{account("builder-token"), token(labelled(invalidSinceLabel, "yes"))}, "marked 2027-06-15"},
		{"marked invalid long ago, used within the period: kept",
			[]runtime.Object{account("builder-token"), token(func(s *corev1.Secret) {
				s.Labels[invalidSinceLabel] = "2025-06-01"
				s.Labels[lastUsedLabel] = "2027-06-01"
			})}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := run(t, tracking("2026-01-01"), tc.objs...)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("wrote %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSyncNeedsTracking: tokens are judged only once the API servers have
// dated their use for a whole period, counted from the day after the
// tracking ConfigMap's since date, and not at all without that ConfigMap.
func TestSyncNeedsTracking(t *testing.T) {
	objs := []runtime.Object{account("builder-token"), token(nil)}
	for _, tc := range []struct {
		name    string
		cm      *corev1.ConfigMap
		want    string
		wantErr bool
	}{
		{"no tracking ConfigMap", nil, "", true},
		{"a since that is no date", tracking("soon"), "", true},
		{"no since", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: trackingConfigMap, Namespace: "kube-system"}}, "", true},
		// 2026-06-14 + 1 day + 365 days is 2027-06-15 00:00, before now.
		{"tracked for a whole period", tracking("2026-06-14"), "marked 2027-06-15", false},
		// 2026-06-15 + 1 day + 365 days is 2027-06-16, after now.
		{"tracked for less than a period", tracking("2026-06-15"), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := run(t, tc.cm, objs...)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("wrote %q, err %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestNamesMatchTheAPIServer: the labels and the ConfigMap are the ones
// the API server writes and reads.
func TestNamesMatchTheAPIServer(t *testing.T) {
	if lastUsedLabel != serviceaccount.LastUsedLabel || invalidSinceLabel != serviceaccount.InvalidSinceLabel ||
		dateFormat != serviceaccount.DateFormat || trackingConfigMap != serviceaccount.TrackingConfigMap || trackingSinceKey != serviceaccount.TrackingSinceKey {
		t.Error("the cleaner's names differ from the API server's")
	}
}

func TestPodSecretNames(t *testing.T) {
	ref := &corev1.LocalObjectReference{Name: "flex"}
	p := pod(corev1.PodSpec{
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
		InitContainers:   []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-env"}}}}}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Env: []corev1.EnvVar{{Name: "x",
			ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "debug-env"}}}}}}}},
		Volumes: []corev1.Volume{
			{VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi"}}}},
			{VolumeSource: corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "d", SecretRef: ref}}},
			{VolumeSource: corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{SecretName: "azure"}}},
		},
	})
	names := map[string]bool{}
	podSecretNames(p, names)
	for _, want := range []string{"pull", "init-env", "debug-env", "csi", "flex", "azure"} {
		if !names[want] {
			t.Errorf("secret %q the pod refers to not found in %v", want, names)
		}
	}
}
