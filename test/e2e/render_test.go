package e2e

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// TestRenderSubcommand: the built binary runs `render` (the subcommand that
// the distribution's main adds to the collector's) and prints what the
// command's own tests expect; its errors exit 1 with the message; the collector's flags are
// still the collector's.
func TestRenderSubcommand(t *testing.T) {
	bin := binaryPath(t)
	want, err := os.ReadFile(repoFile(t, "internal/rendercmd/testdata/proposal.protect.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(repoFile(t, "internal/rendercmd/testdata/proposal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd := testproc.Command(bin, "render", "--mode", "protect")
	cmd.Stdin = in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !bytes.Equal(out, want) {
		t.Errorf("render --mode protect: %v %s\n%s", err, stderr.String(), out)
	}

	cmd = testproc.Command(bin, "render", "--mode", "x", "-f", repoFile(t, "internal/rendercmd/testdata/proposal.yaml"))
	b, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 ||
		!strings.Contains(string(b), `render: invalid mode "x": must be one of monitor, protect`) {
		t.Errorf("render --mode x: %v %s", err, b)
	}

	if b, err := testproc.Command(bin, "render", "-h").CombinedOutput(); err != nil || !strings.Contains(string(b), "Usage: network-enforcer render") {
		t.Errorf("render -h: %v %s", err, b)
	}
	if b, err := testproc.Command(bin, "--version").CombinedOutput(); err != nil || !strings.HasPrefix(string(b), "network-enforcer version ") {
		t.Errorf("--version: %v %s", err, b)
	}
}
