package pki

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigName names the cluster, user and context in written kubeconfigs.
const KubeconfigName = "skiff"

// Kubeconfig builds the admin kubeconfig for serverURL with every credential
// inline.
func Kubeconfig(serverURL string, b *Bundle) (*clientcmdapi.Config, error) {
	if serverURL == "" {
		return nil, errors.New("pki: kubeconfig needs a server URL")
	}
	if b == nil || b.CAPEM == nil || b.AdminCertPEM == nil || b.AdminKeyPEM == nil {
		return nil, errors.New("pki: kubeconfig needs a bundle with a CA and an admin credential")
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeconfigName] = &clientcmdapi.Cluster{
		Server:                   serverURL,
		CertificateAuthorityData: b.CAPEM,
	}
	cfg.AuthInfos[KubeconfigName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: b.AdminCertPEM,
		ClientKeyData:         b.AdminKeyPEM,
	}
	cfg.Contexts[KubeconfigName] = &clientcmdapi.Context{
		Cluster:  KubeconfigName,
		AuthInfo: KubeconfigName,
	}
	cfg.CurrentContext = KubeconfigName
	return cfg, nil
}

// WriteKubeconfig writes the admin kubeconfig to path with mode 0600,
// creating the parent directory (0700) if needed. It replaces the file
// atomically and tightens the mode even when the file already existed.
func WriteKubeconfig(path, serverURL string, b *Bundle) error {
	cfg, err := Kubeconfig(serverURL, b)
	if err != nil {
		return err
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("pki: encode kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("pki: create directory for %s: %w", path, err)
	}
	return writeFileAtomic(path, data, 0o600)
}

// AdminRESTConfig is a client-go configuration for in-process components that
// act as the admin over HTTPS.
func (b *Bundle) AdminRESTConfig(serverURL string) *rest.Config {
	return &rest.Config{
		Host: serverURL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   b.CAPEM,
			CertData: b.AdminCertPEM,
			KeyData:  b.AdminKeyPEM,
		},
	}
}
