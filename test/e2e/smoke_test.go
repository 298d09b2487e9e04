package e2e

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubewarden/network-enforcer/internal/certtest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// TestSampleConfigStartsAndStops runs the binary with the sample configuration,
// waits until health_check reports it ready, and stops it with SIGTERM.
func TestSampleConfigStartsAndStops(t *testing.T) {
	controlplanetest.Require(t)
	health := freeAddr(t)
	// No relay answers at this endpoint: the receiver keeps retrying in the
	// background, and the collector is healthy all the same.
	p := startBinary(t, repoFile(t, "testdata/collector/sample.yaml"),
		"NE_HEALTH_ENDPOINT="+health,
		"NE_HUBBLE_ENDPOINT="+freeAddr(t),
		"NE_HUBBLE_CA_FILE="+certtest.NewCA(t, "cilium-ca").CertFile,
		"NE_PROMETHEUS_ENDPOINT="+freeAddr(t),
		"KUBECONFIG="+kubeconfig)

	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) {
			select {
			case <-p.exited:
				return false, errors.Join(errors.New("the collector exited before it was healthy"), p.err)
			default:
			}
			resp, err := http.Get("http://" + health + "/")
			if err != nil {
				return false, nil //nolint:nilerr // not listening yet: poll again
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
	if err != nil {
		t.Fatalf("health_check did not answer 200: %v", err)
	}
	// The collector catches SIGTERM only once its components have started
	// (otelcol's Collector.Run calls signal.Notify after it logs that everything
	// is ready, and health_check answers 200 before both): a SIGTERM in between
	// ends the process with Go's default action. Wait for the line, then for the
	// few statements between it and signal.Notify.
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) {
			return strings.Contains(p.output.String(), "Everything is ready. Begin running and processing data."), nil
		})
	if err != nil {
		t.Fatalf("the collector never logged that it is ready: %v", err)
	}
	// Time must pass because the few statements between the line and
	// signal.Notify leave nothing to see.
	time.Sleep(200 * time.Millisecond)

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.err != nil {
			t.Fatalf("the collector did not exit cleanly on SIGTERM: %v", p.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the collector did not exit within 30s of SIGTERM")
	}
	if !strings.Contains(p.output.String(), "Shutdown complete") {
		t.Fatalf("no clean shutdown in the log:\n%s", p.output)
	}
}

// TestInvalidConfigNamesComponentAndKey: a configuration that fails validation
// stops the binary at once with a non-zero exit and a message that names the
// component and the key to fix.
func TestInvalidConfigNamesComponentAndKey(t *testing.T) {
	for name, tc := range map[string]struct {
		config string
		want   []string
	}{
		"goldmane without mutual TLS": {
			config: `
receivers:
  goldmane:
    endpoint: goldmane.calico-system.svc:7443
exporters:
  debug:
service:
  pipelines:
    logs: {receivers: [goldmane], exporters: [debug]}
`,
			want: []string{"receivers::goldmane", "tls::ca_file, tls::cert_file, tls::key_file"},
		},
		"leader elector lease shorter than its renew deadline": {
			config: `
extensions:
  leader_elector:
    lease_duration: 5s
  enforcer: {}
receivers:
  hubble:
    relay:
exporters:
  debug:
service:
  extensions: [leader_elector, enforcer]
  pipelines:
    logs: {receivers: [hubble], exporters: [debug]}
`,
			want: []string{"extensions::leader_elector", "invalid lease_duration 5s"},
		},
		"writer pointing at another extension": {
			config: `
receivers:
  hubble:
    relay:
exporters:
  k8swriter:
    enforcer: health_check
service:
  pipelines:
    logs: {receivers: [hubble], exporters: [k8swriter]}
`,
			want: []string{"exporters::k8swriter", `invalid enforcer "health_check"`},
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := testproc.CommandContext(ctx, binaryPath(t), "--config", path).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("want a non-zero exit, got %v\n%s", err, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("output does not name %q:\n%s", want, out)
				}
			}
		})
	}
}
