package k8sconfig

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
)

// TestClientSideRateLimitIsOff: the configuration of a kubeconfig carries no
// client-side rate limit (QPS -1: client-go's 5 per second per kind is off);
// one that sets a limit keeps it.
func TestClientSideRateLimitIsOff(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
	cfg, err := RestConfig(APIConfig{AuthType: AuthTypeKubeConfig})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS != -1 {
		t.Fatalf("QPS %v, want -1 (no client-side limit)", cfg.QPS)
	}
	if got := unthrottled(&rest.Config{QPS: 50, Burst: 100}); got.QPS != 50 || got.Burst != 100 {
		t.Fatalf("a set limit became %v/%d", got.QPS, got.Burst)
	}
}
