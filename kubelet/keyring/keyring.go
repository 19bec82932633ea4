package keyring

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"

	krt "github.com/skiffkube/skiff/kubelet/runtime"
)

// Keyring holds registry credentials by key ("registry.example:5000/team").
type Keyring struct {
	// index holds the keys, reverse-sorted so that longer (more specific)
	// paths come before their prefixes.
	index []string
	creds map[string][]krt.Credential
}

// entry is one registry of a docker config file.
type entry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
}

// FromSecrets builds a keyring from secrets in the order given (the pod's
// imagePullSecrets). Secrets of other types are ignored; a secret whose
// config does not parse is reported in the error and skipped, the others
// still count.
func FromSecrets(secrets []*corev1.Secret) (*Keyring, error) {
	k := &Keyring{creds: map[string][]krt.Credential{}}
	var errs []string
	for _, s := range secrets {
		var cfg map[string]entry
		var err error
		switch s.Type {
		case corev1.SecretTypeDockerConfigJson:
			var file struct {
				Auths map[string]entry `json:"auths"`
			}
			err = json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &file)
			cfg = file.Auths
		case corev1.SecretTypeDockercfg:
			err = json.Unmarshal(s.Data[corev1.DockerConfigKey], &cfg)
		default:
			continue
		}
		if err == nil {
			err = k.add(cfg)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("secret %s/%s: %v", s.Namespace, s.Name, err))
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
	if len(errs) > 0 {
		return k, fmt.Errorf("image pull secrets: %s", strings.Join(errs, "; "))
	}
	return k, nil
}

// add indexes one docker config. As the docker client and the kubelet, a
// key's scheme is ignored and a leading /v1/ or /v2/ path means the host.
func (k *Keyring) add(cfg map[string]entry) error {
	for loc, e := range cfg {
		c := krt.Credential{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken}
		if e.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil {
				return fmt.Errorf("registry %q: auth is not base64: %w", loc, err)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return fmt.Errorf("registry %q: auth is not user:password", loc)
			}
			c.Username, c.Password = user, pass
		}
		value := loc
		if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
			value = "https://" + value
		}
		u, err := url.Parse(value)
		if err != nil {
			return fmt.Errorf("registry %q: %w", loc, err)
		}
		path := u.Path
		if strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/v2/") {
			path = path[3:]
		}
		key := u.Host
		if path != "" && path != "/" {
			key += path
		}
		if _, seen := k.creds[key]; !seen {
			k.index = append(k.index, key)
		}
		k.creds[key] = append(k.creds[key], c)
	}
	return nil
}

// Lookup returns the credentials to try for image, most specific key
// first, and in secret order for one key. None means pulling anonymously.
func (k *Keyring) Lookup(image string) []krt.Credential {
	if k == nil || len(k.index) == 0 {
		return nil
	}
	named, err := reference.ParseDockerRef(image)
	if err != nil {
		return nil
	}
	repo := named.Name() // "docker.io/library/nginx", "127.0.0.1:5000/app"
	out := k.match(repo)
	if len(out) == 0 && reference.Domain(named) == "docker.io" {
		// Docker Hub's credentials are usually keyed by its index's URL,
		// "https://index.docker.io/v1/".
		out = k.match("index.docker.io" + strings.TrimPrefix(repo, "docker.io"))
	}
	return out
}

func (k *Keyring) match(repo string) []krt.Credential {
	var out []krt.Credential
	for _, key := range k.index {
		if matches(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	return out
}

// matches says whether key matches the repository as the kubelet's
// keyring: the same port, the same number of domain labels each matching
// (with globs such as "*.example.com"), and the key's path a prefix of the
// repository's.
func matches(key, repo string) bool {
	ku, err := url.Parse("https://" + key)
	if err != nil {
		return false
	}
	ru, err := url.Parse("https://" + repo)
	if err != nil {
		return false
	}
	kLabels, kPort := split(ku.Host)
	rLabels, rPort := split(ru.Host)
	if kPort != rPort || len(kLabels) != len(rLabels) || !strings.HasPrefix(ru.Path, ku.Path) {
		return false
	}
	for i, glob := range kLabels {
		if ok, err := filepath.Match(glob, rLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func split(hostport string) (labels []string, port string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}
