package podruntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiffkube/skiff/kubelet/satoken"
)

// objectStore is an in-memory ObjectGetter for tests.
type objectStore struct {
	mu         sync.Mutex
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func newObjectStore() *objectStore {
	return &objectStore{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
}

func (s *objectStore) putConfigMap(ns, name string, data map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.configMaps[ns+"/"+name] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func (s *objectStore) putSecret(ns, name string, data map[string][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets[ns+"/"+name] = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func (s *objectStore) GetConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cm, ok := s.configMaps[ns+"/"+name]; ok {
		return cm.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (s *objectStore) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec, ok := s.secrets[ns+"/"+name]; ok {
		return sec.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func optional() *bool { t := true; return &t }

func TestEnvFromConfigMapsAndSecrets(t *testing.T) {
	objs := newObjectStore()
	objs.putConfigMap("shop", "settings", map[string]string{"mode": "fast", "level": "3"})
	objs.putSecret("shop", "creds", map[string][]byte{"password": []byte("s3cret")})
	r := &Runtime{objects: objs}
	pod := testPod()
	c := &corev1.Container{
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}, Prefix: "APP_"},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: optional()}},
		},
		Env: []corev1.EnvVar{
			{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
			{Name: "APP_mode", Value: "overridden"},
			{Name: "MAYBE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "nope", Optional: optional()}}},
		},
	}
	from, err := r.envFromSources(context.Background(), pod, c)
	if err != nil {
		t.Fatal(err)
	}
	env, err := envFor(pod, c, "10.0.0.1", from, func(e corev1.EnvVar) (string, bool, error) { return r.objectEnv(context.Background(), pod, e) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"APP_level=3", "APP_mode=overridden", "PASSWORD=s3cret"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}

	for name, e := range map[string]corev1.EnvVar{
		"missing key":       {Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "nope"}}},
		"missing configMap": {Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "k"}}},
	} {
		if _, _, err := r.objectEnv(context.Background(), pod, e); !errors.Is(err, errConfig) {
			t.Errorf("%s: err = %v, want a configuration error", name, err)
		}
	}
	if _, _, err := (&Runtime{}).objectEnv(context.Background(), pod, corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}); !errors.Is(err, errConfig) {
		t.Errorf("no object access: %v", err)
	}
}

func TestVolumesFollowTheirObjects(t *testing.T) {
	objs := newObjectStore()
	objs.putConfigMap("shop", "web", map[string]string{"index.html": "v1", "extra.txt": "x"})
	objs.putSecret("shop", "tls", map[string][]byte{"key": []byte("k1")})
	dir := t.TempDir()
	r := &Runtime{objects: objs, podDir: dir}
	pod := testPod()
	pod.Labels = map[string]string{"app": "web", "tier": "front"}
	mode := int32(0o600)
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "site", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web"}}}},
		{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", DefaultMode: &mode,
			Items: []corev1.KeyToPath{{Key: "key", Path: "private/tls.key"}}}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		{Name: "missing", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}}},
	}
	read := func(vol, p string) string {
		b, err := os.ReadFile(filepath.Join(objectVolumePath(r.podPath(pod.UID), vol), p))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	failed := r.writeVolumes(context.Background(), pod, "10.0.0.1")
	if len(failed) != 1 || failed["missing"] == nil {
		t.Errorf("failed volumes = %v, want only \"missing\"", failed)
	}
	if got := read("site", "index.html"); got != "v1" {
		t.Errorf("index.html = %q", got)
	}
	if got := read("certs", "private/tls.key"); got != "k1" {
		t.Errorf("tls.key = %q", got)
	}
	if st, err := os.Stat(filepath.Join(objectVolumePath(r.podPath(pod.UID), "certs"), "private/tls.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("tls.key mode %v (%v), want 0600", st.Mode(), err)
	}
	if got := read("info", "labels"); got != "app=\"web\"\ntier=\"front\"" {
		t.Errorf("labels = %q", got)
	}
	if got := read("info", "name"); got != "web" {
		t.Errorf("name = %q", got)
	}

	// The object changes: the next sync rewrites the file and drops the
	// key that went away.
	objs.putConfigMap("shop", "web", map[string]string{"index.html": "v2"})
	r.writeVolumes(context.Background(), pod, "10.0.0.1")
	if got := read("site", "index.html"); got != "v2" {
		t.Errorf("after update index.html = %q", got)
	}
	if _, err := os.Stat(filepath.Join(objectVolumePath(r.podPath(pod.UID), "site"), "extra.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removed key still on disk (%v)", err)
	}
}

// tokenIssuer is an objectStore that also issues service account tokens.
type tokenIssuer struct {
	*objectStore
	issued []string
}

func (s *tokenIssuer) CreateToken(_ context.Context, ns, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	out := tr.DeepCopy()
	ref := tr.Spec.BoundObjectRef
	tok := fmt.Sprintf("token-%d-%s/%s-%s", len(s.issued)+1, ns, sa, ref.Name)
	s.issued = append(s.issued, tok)
	out.Status = authenticationv1.TokenRequestStatus{Token: tok, ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Hour))}
	return out, nil
}

// TestServiceAccountTokenVolume: the kube-api-access volume admission
// gives pods holds a token for the pod's account, ca.crt and the
// namespace; the token is not requested again on every sync.
func TestServiceAccountTokenVolume(t *testing.T) {
	objs := &tokenIssuer{objectStore: newObjectStore()}
	objs.putConfigMap("shop", "kube-root-ca.crt", map[string]string{"ca.crt": "PEM"})
	dir := t.TempDir()
	r := &Runtime{objects: objs, podDir: dir, tokens: satoken.New(objs, nil)}
	pod := testPod()
	pod.Spec.ServiceAccountName = "robot"
	mode, exp := int32(0o644), int64(3607)
	pod.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-x1y2z", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}}}}
	for range 3 {
		if failed := r.writeVolumes(context.Background(), pod, "10.0.0.1"); len(failed) != 0 {
			t.Fatalf("failed volumes: %v", failed)
		}
	}
	vol := objectVolumePath(r.podPath(pod.UID), "kube-api-access-x1y2z")
	for file, want := range map[string]string{"token": "token-1-shop/robot-web", "ca.crt": "PEM", "namespace": "shop"} {
		if b, err := os.ReadFile(filepath.Join(vol, file)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", file, b, err, want)
		}
	}
	if len(objs.issued) != 1 {
		t.Errorf("%d tokens requested over three syncs, want 1", len(objs.issued))
	}
	// An agent that cannot request tokens says so instead of mounting an
	// empty file.
	r.tokens = nil
	if failed := r.writeVolumes(context.Background(), pod, "10.0.0.1"); !errors.Is(failed["kube-api-access-x1y2z"], errConfig) {
		t.Errorf("without a token requester: failed = %v", failed)
	}
}
