package hubblereceiver

import (
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/kubewarden/network-enforcer/internal/configtest"
	"github.com/kubewarden/network-enforcer/internal/dataplanetest"
	"github.com/kubewarden/network-enforcer/internal/flowsource"
	"github.com/kubewarden/network-enforcer/receiver/hubblereceiver/internal/metadata"
)

// relayConfig is the default configuration with relay mode set, as
// `relay:` alone sets it; nodesConfig likewise with nodes mode.
func relayConfig() (*Config, *RelayConfig) {
	cfg := createDefaultConfig().(*Config)
	return cfg, cfg.Relay.GetOrInsertDefault()
}

func nodesConfig() (*Config, *NodesConfig) {
	cfg := createDefaultConfig().(*Config)
	return cfg, cfg.Nodes.GetOrInsertDefault()
}

func TestLoadConfig(t *testing.T) {
	relay, _ := relayConfig()

	withTLS, tlsRelay := relayConfig()
	tlsRelay.TLS.CAFile = "/etc/hubble/ca.crt"
	tlsRelay.TLS.CertFile = "/etc/hubble/tls.crt"
	tlsRelay.TLS.KeyFile = "/etc/hubble/tls.key"
	tlsRelay.TLS.ServerName = "*.hubble-relay.cilium.io"
	tlsRelay.FieldMask = false
	withTLS.Backfill = BackfillConfig{Enabled: false, Since: time.Minute, Number: 1000}
	withTLS.Reconnect.InitialInterval = 500 * time.Millisecond
	withTLS.Reconnect.MaxInterval = 10 * time.Second

	plaintext, plainRelay := relayConfig()
	plainRelay.Endpoint = "hubble-relay.kube-system.svc:80"
	plainRelay.TLS.Insecure = true

	batch, _ := relayConfig()
	batch.Batch = flowsource.BatchConfig{MaxSize: 256, Timeout: 20 * time.Millisecond}

	leader, _ := relayConfig()
	primary := component.MustNewIDWithName("leader_elector", "primary")
	leader.LeaderElector = &primary

	// Nodes mode's own defaults: the Peer service's endpoint and TLS server
	// name, and no field mask; its TLS settings dial every node too.
	nodesDefault, _ := nodesConfig()

	nodes, nodesMode := nodesConfig()
	nodesMode.TLS.CAFile = "/etc/hubble/ca.crt"
	nodesMode.TLS.CertFile = "/etc/hubble/tls.crt"
	nodesMode.TLS.KeyFile = "/etc/hubble/tls.key"
	enforcer := component.MustNewID("enforcer")
	nodes.Enforcer = &enforcer

	nodesElsewhere, elsewhere := nodesConfig()
	elsewhere.FieldMask = true
	elsewhere.Endpoint = "hubble-peer.cilium.svc:443"
	elsewhere.TLS.ServerName = "hubble-peer.prod.hubble-grpc.cilium.io"

	nodesPlaintext, plainNodes := nodesConfig()
	plainNodes.TLS.Insecure = true

	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), WantErr: []string{"exactly one of relay, nodes must be set"}},
		{ID: component.NewIDWithName(metadata.Type, "relay"), Want: relay},
		{ID: component.NewIDWithName(metadata.Type, "nodes_default"), Want: nodesDefault},
		{ID: component.NewIDWithName(metadata.Type, "both"), WantErr: []string{"exactly one of relay, nodes must be set"}},
		{ID: component.NewIDWithName(metadata.Type, "leader"), Want: leader},
		{ID: component.NewIDWithName(metadata.Type, "bad_enforcer"), WantErr: []string{
			`invalid leader_elector "health_check": must name an extension of type "leader_elector"`,
			`invalid enforcer "health_check": must name an extension of type "enforcer"`}},
		{ID: component.NewIDWithName(metadata.Type, "tls"), Want: withTLS},
		{ID: component.NewIDWithName(metadata.Type, "batch"), Want: batch},
		{ID: component.NewIDWithName(metadata.Type, "bad_batch"), WantErr: []string{
			"invalid batch::max_size 0: must be at least 1",
			"invalid batch::timeout 0s: must be positive and at most 1s",
		}},
		{ID: component.NewIDWithName(metadata.Type, "plaintext"), Want: plaintext},
		{ID: component.NewIDWithName(metadata.Type, "insecure_with_ca"), WantErr: []string{
			"tls::insecure is true but a CA, certificate or key is set",
		}},
		{ID: component.NewIDWithName(metadata.Type, "cert_without_key"), WantErr: []string{
			"tls::cert_file and tls::key_file must be set together",
		}},
		{ID: component.NewIDWithName(metadata.Type, "nodes"), Want: nodes},
		{ID: component.NewIDWithName(metadata.Type, "nodes_elsewhere"), Want: nodesElsewhere},
		{ID: component.NewIDWithName(metadata.Type, "nodes_plaintext"), Want: nodesPlaintext},
		{ID: component.NewIDWithName(metadata.Type, "nodes_no_endpoint"), WantErr: []string{
			"endpoint must be set to the Peer service's address, for example hubble-peer.kube-system.svc:443",
		}},
		{ID: component.NewIDWithName(metadata.Type, "nodes_cert_without_key"), WantErr: []string{
			"tls::cert_file and tls::key_file must be set together",
		}},
		{ID: component.NewIDWithName(metadata.Type, "no_endpoint"), WantErr: []string{
			"endpoint must be set to the Hubble Relay address",
			"invalid backfill::since -1m0s: must not be negative",
			"reconnect: invalid initial_interval 0s: must be positive",
		}},
	})
}

func TestDefaultIsTLS(t *testing.T) {
	_, relay := relayConfig()
	_, nodes := nodesConfig()
	if relay.TLS.Insecure || nodes.TLS.Insecure {
		t.Fatal("a mode's default configuration is plaintext")
	}
}

// TestModeDefaults: each mode's defaults are its own, whatever the other's.
func TestModeDefaults(t *testing.T) {
	_, relay := relayConfig()
	if relay.Endpoint != "hubble-relay.kube-system.svc:443" || relay.TLS.ServerName != "" || !relay.FieldMask {
		t.Errorf("relay: endpoint %q server name %q field mask %v, want hubble-relay.kube-system.svc:443, the endpoint's host, on",
			relay.Endpoint, relay.TLS.ServerName, relay.FieldMask)
	}
	_, nodes := nodesConfig()
	if nodes.Endpoint != "hubble-peer.kube-system.svc:443" || nodes.TLS.ServerName != "hubble-peer.default.hubble-grpc.cilium.io" || nodes.FieldMask {
		t.Errorf("nodes: endpoint %q server name %q field mask %v, want hubble-peer.kube-system.svc:443, hubble-peer.default.hubble-grpc.cilium.io, off",
			nodes.Endpoint, nodes.TLS.ServerName, nodes.FieldMask)
	}
}

// TestPeerServerNameIsTheFakeClusters: the fake cluster's Peer service has
// the certificate of an agent's Hubble server, which the default name of
// nodes mode matches.
func TestPeerServerNameIsTheFakeClusters(t *testing.T) {
	if defaultPeerServerName != dataplanetest.PeerServerName {
		t.Fatalf("default peer server name %q, the fake cluster's %q", defaultPeerServerName, dataplanetest.PeerServerName)
	}
}
