package testenv

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig file (mode 0600) that reaches the control
// plane as a cluster administrator, for components and binaries that read
// $KUBECONFIG.
func (e *Env) WriteKubeconfig(path string) error {
	c := e.Config
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: c.CertData, ClientKeyData: c.KeyData, Token: c.BearerToken,
	}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	cfg.CurrentContext = "test"
	return clientcmd.WriteToFile(*cfg, path)
}

// Kubeconfig writes a kubeconfig file for the test and returns its path.
func (e *Env) Kubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := e.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	return path
}
