package keyring

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

func configJSON(name, json string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(json)}}
}

func dockercfg(name, json string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Type: corev1.SecretTypeDockercfg,
		Data: map[string][]byte{corev1.DockerConfigKey: []byte(json)}}
}

func auth(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

func cred(user string) krt.Credential { return krt.Credential{Username: user, Password: "pw-" + user} }

func TestLookup(t *testing.T) {
	secrets := []*corev1.Secret{
		configJSON("hosts", `{"auths": {
			"registry.example.com": {"username": "host", "password": "pw-host"},
			"https://registry.example.com:5000/v2/": {"auth": "`+auth("port", "pw-port")+`"},
			"registry.example.com/team": {"username": "team", "password": "pw-team"},
			"*.glob.example": {"username": "glob", "password": "pw-glob"},
			"https://index.docker.io/v1/": {"username": "hub", "password": "pw-hub"}
		}}`),
		dockercfg("legacy", `{"registry.example.com": {"auth": "`+auth("legacy", "pw-legacy")+`"},
			"127.0.0.1:5000": {"username": "local", "password": "pw-local"}}`),
		{ObjectMeta: metav1.ObjectMeta{Name: "opaque"}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {"registry.example.com": {"username": "opaque"}}}`)}},
	}
	ring, err := FromSecrets(secrets)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		image string
		want  []krt.Credential
	}{
		{"a host key matches every repository of the host, in secret order", "registry.example.com/app:v1",
			[]krt.Credential{cred("host"), cred("legacy")}},
		{"a path key comes before its host's key", "registry.example.com/team/app",
			[]krt.Credential{cred("team"), cred("host"), cred("legacy")}},
		{"a port must match", "registry.example.com:5000/app", []krt.Credential{cred("port")}},
		{"a host without port does not match a key with one", "127.0.0.1/app", nil},
		{"a loopback registry with port", "127.0.0.1:5000/skiff/app:v1", []krt.Credential{cred("local")}},
		{"a glob matches one domain label", "a.glob.example/app", []krt.Credential{cred("glob")}},
		{"a glob does not match two labels", "a.b.glob.example/app", nil},
		{"Docker Hub's index key matches short names", "nginx:1.27", []krt.Credential{cred("hub")}},
		{"Docker Hub's index key matches user repositories", "docker.io/someone/app", []krt.Credential{cred("hub")}},
		{"another registry gets nothing", "quay.io/app", nil},
		{"an invalid reference gets nothing", "Bad Ref!", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ring.Lookup(tc.image); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Lookup(%q) = %+v, want %+v", tc.image, got, tc.want)
			}
		})
	}
}

func TestBadSecretsAreReportedAndSkipped(t *testing.T) {
	ring, err := FromSecrets([]*corev1.Secret{
		configJSON("broken", `{"auths": `),
		configJSON("badauth", `{"auths": {"r.example": {"auth": "not base64!"}}}`),
		configJSON("good", `{"auths": {"r.example": {"username": "good", "password": "pw-good"}}}`),
	})
	if err == nil {
		t.Fatal("broken secrets gave no error")
	}
	for _, name := range []string{"ns/broken", "ns/badauth"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name secret %s", err, name)
		}
	}
	if got := ring.Lookup("r.example/app"); !reflect.DeepEqual(got, []krt.Credential{cred("good")}) {
		t.Errorf("the good secret's credentials: %+v", got)
	}
	var empty *Keyring
	if got := empty.Lookup("r.example/app"); got != nil {
		t.Errorf("nil keyring: %+v", got)
	}
}
