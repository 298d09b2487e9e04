// Package e2e tests the built collector binary, bin/network-enforcer, as a user
// runs it: started with a configuration file, observed through what it serves and
// prints, stopped with a signal.
package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// binaryPath returns bin/network-enforcer; when it has not been built, the test
// skips (or fails under controlplanetest.RequireAllVar) with the command to run.
func binaryPath(t *testing.T) string {
	t.Helper()
	return controlplanetest.RequireBinary(t)
}

// repoFile returns the absolute path of a file of the repository.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer is a bytes.Buffer that the process writes and the test reads at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// process is a running collector binary.
type process struct {
	cmd    *exec.Cmd
	output *syncBuffer
	// exited is closed when the process has ended; err is then its exit error.
	exited chan struct{}
	err    error
}

// startBinary starts the binary with the config file and extra environment. The
// process is killed when the test ends, if it still runs then.
func startBinary(t *testing.T, config string, env ...string) *process {
	t.Helper()
	p := &process{output: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = testproc.Command(binaryPath(t), "--config", config)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			fmt.Printf("--- output of %s ---\n%s\n", config, p.output)
		}
	})
	return p
}
