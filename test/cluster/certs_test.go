//go:build cluster

package cluster

import (
	"testing"

	"github.com/kubewarden/network-enforcer/internal/certtest"
)

// secret creates (or replaces) a Secret of the files given, key=path.
func secret(t *testing.T, namespace, name string, files map[string]string) {
	t.Helper()
	args := []string{"-n", namespace, "create", "secret", "generic", name, "--dry-run=client", "-o", "yaml"}
	for key, path := range files {
		args = append(args, "--from-file="+key+"="+path)
	}
	manifest := kubectl(t, args...)
	apply(t, manifest)
}

// collectorSecrets makes the default collector's server certificate, for
// telemetry.default.tls existingSecret: the enforcer verifies the collector
// with its CA.
func collectorSecrets(t *testing.T) {
	t.Helper()
	events := certtest.NewCA(t, "events")
	svc := fullname + "-collector"
	collector := events.Server(t, "collector", svc, svc+"."+namespace, svc+"."+namespace+".svc", svc+"."+namespace+".svc.cluster.local")
	secret(t, namespace, collectorSecret, map[string]string{"ca.crt": events.CertFile, "tls.crt": collector.CertFile, "tls.key": collector.KeyFile})
}

// collectorSecret is the default collector's server key pair and CA.
const collectorSecret = "collector-tls"
