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

func TestLoadConfig(t *testing.T) {
	withTLS := createDefaultConfig().(*Config)
	withTLS.TLS.CAFile = "/etc/hubble/ca.crt"
	withTLS.TLS.CertFile = "/etc/hubble/tls.crt"
	withTLS.TLS.KeyFile = "/etc/hubble/tls.key"
	withTLS.TLS.ServerName = "*.hubble-relay.cilium.io"
	withTLS.Backfill = BackfillConfig{Enabled: false, Since: time.Minute, Number: 1000}
	withTLS.FieldMask = false
	withTLS.Reconnect.InitialInterval = 500 * time.Millisecond
	withTLS.Reconnect.MaxInterval = 10 * time.Second

	plaintext := createDefaultConfig().(*Config)
	plaintext.Endpoint = "hubble-relay.kube-system.svc:80"
	plaintext.TLS.Insecure = true

	batch := createDefaultConfig().(*Config)
	batch.Batch = flowsource.BatchConfig{MaxSize: 256, Timeout: 20 * time.Millisecond}

	leader := createDefaultConfig().(*Config)
	primary := component.MustNewIDWithName("enforcer", "primary")
	leader.Enforcer = &primary

	// Nodes mode: the endpoint and the TLS server name, unless set, are the
	// Peer service's; the TLS settings dial every node too;
	// and the field mask is off unless set.
	nodes := createDefaultConfig().(*Config)
	nodes.Mode = ModeNodes
	nodes.FieldMask = false
	nodes.Endpoint = "hubble-peer.kube-system.svc:443"
	nodes.TLS.ServerName = "hubble-peer.default.hubble-grpc.cilium.io"
	nodes.TLS.CAFile = "/etc/hubble/ca.crt"
	nodes.TLS.CertFile = "/etc/hubble/tls.crt"
	nodes.TLS.KeyFile = "/etc/hubble/tls.key"
	enforcer := component.MustNewID("enforcer")
	nodes.Enforcer = &enforcer

	nodesElsewhere := createDefaultConfig().(*Config)
	nodesElsewhere.Mode = ModeNodes
	nodesElsewhere.FieldMask = true // set
	nodesElsewhere.Endpoint = "hubble-peer.cilium.svc:443"
	nodesElsewhere.TLS.ServerName = "hubble-peer.prod.hubble-grpc.cilium.io"

	nodesPlaintext := createDefaultConfig().(*Config)
	nodesPlaintext.Mode = ModeNodes
	nodesPlaintext.FieldMask = false
	nodesPlaintext.Endpoint = "hubble-peer.kube-system.svc:443"
	nodesPlaintext.TLS.Insecure = true

	configtest.Run(t, NewFactory(), filepath.Join("testdata", "config.yaml"), []configtest.Case{
		{ID: component.NewID(metadata.Type), Want: createDefaultConfig()},
		{ID: component.NewIDWithName(metadata.Type, "leader"), Want: leader},
		{ID: component.NewIDWithName(metadata.Type, "bad_enforcer"), WantErr: []string{`invalid enforcer "health_check": must name an extension of type "enforcer"`}},
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
		{ID: component.NewIDWithName(metadata.Type, "bad_mode"), WantErr: []string{`invalid mode "agents": must be one of relay, nodes`}},
		{ID: component.NewIDWithName(metadata.Type, "no_endpoint"), WantErr: []string{
			"endpoint must be set to the Hubble Relay address",
			"invalid backfill::since -1m0s: must not be negative",
			"reconnect: invalid initial_interval 0s: must be positive",
		}},
	})
}

func TestDefaultIsTLS(t *testing.T) {
	if createDefaultConfig().(*Config).TLS.Insecure {
		t.Fatal("the default configuration is plaintext")
	}
}

func TestDefaultModeIsRelay(t *testing.T) {
	if cfg := createDefaultConfig().(*Config); cfg.Mode != ModeRelay || cfg.Endpoint != "hubble-relay.kube-system.svc:443" {
		t.Fatalf("default mode %q endpoint %q, want relay at hubble-relay.kube-system.svc:443", cfg.Mode, cfg.Endpoint)
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
