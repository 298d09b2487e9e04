package controlplanetest

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig file (mode 0600) that reaches the control
// plane as a cluster administrator, for components and binaries that read
// $KUBECONFIG.
func (e *Env) WriteKubeconfig(path string) error {
	return e.WriteKubeconfigVia(path, "")
}

// WriteKubeconfigVia writes a kubeconfig that reaches the API server through
// proxyAddr (host:port), such as a Proxy's; empty means directly.
func (e *Env) WriteKubeconfigVia(path, proxyAddr string) error {
	c := e.Config
	server := c.Host
	if proxyAddr != "" {
		u, err := e.apiServerURL()
		if err != nil {
			return err
		}
		u.Host = proxyAddr
		server = u.String()
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: c.CertData, ClientKeyData: c.KeyData, Token: c.BearerToken,
	}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	cfg.CurrentContext = "test"
	return clientcmd.WriteToFile(*cfg, path)
}

// APIServerAddr is the API server's host:port, for a Proxy to forward to.
func (e *Env) APIServerAddr() (string, error) {
	u, err := e.apiServerURL()
	if err != nil {
		return "", err
	}
	return u.Host, nil
}

func (e *Env) apiServerURL() (*url.URL, error) {
	host := e.Config.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	return url.Parse(host)
}

// UseKubeconfig writes a kubeconfig of the control plane into its own folder,
// which Stop removes, and points $KUBECONFIG at it: the components that a test
// configures with auth_type kubeConfig then reach it, as they do outside a
// cluster. For a package's setup (Main).
func (e *Env) UseKubeconfig() error {
	path := filepath.Join(e.dir, "kubeconfig")
	if err := e.WriteKubeconfig(path); err != nil {
		return err
	}
	return os.Setenv("KUBECONFIG", path)
}
