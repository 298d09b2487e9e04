package controlplanetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// controllerManagerUser is the user that kube-controller-manager authenticates as,
// the same name it has in a real cluster, so admission rules that exempt it are
// tested as they will run.
const controllerManagerUser = "system:kube-controller-manager"

// controllerManager is a running kube-controller-manager process.
type controllerManager struct {
	cmd     *exec.Cmd
	logPath string
	// exited is closed when the process has ended, with its exit status in err.
	exited chan struct{}
	err    error
}

// startControllerManager runs kube-controller-manager with only the garbage
// collector, as a cluster administrator, against the envtest API server.
func startControllerManager(env *envtest.Environment, assets, dir string) (*controllerManager, error) {
	user, err := env.AddUser(envtest.User{Name: controllerManagerUser, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, err
	}
	kubeconfigPath := filepath.Join(dir, "kube-controller-manager.kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "kube-controller-manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()

	cmd := testproc.Command(filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig="+kubeconfigPath,
		"--controllers=garbage-collector-controller",
		"--leader-elect=false",
		"--secure-port=0",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("kube-controller-manager: %w", err)
	}
	kcm := &controllerManager{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() { kcm.err = cmd.Wait(); close(kcm.exited) }()

	// A start-up failure (a bad flag, an unreachable API server) ends the process
	// within moments; report it here rather than as a test that waits for a
	// garbage collection that never comes.
	select {
	case <-kcm.exited:
		return nil, fmt.Errorf("kube-controller-manager exited at start (%w):\n%s", kcm.err, kcm.logTail())
	case <-time.After(time.Second):
		return kcm, nil
	}
}

// stop ends the process: SIGTERM, then SIGKILL after ten seconds. Its exit
// status is the signal's, which says nothing about the tests.
func (k *controllerManager) stop() {
	select {
	case <-k.exited:
		return
	default:
	}
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(10 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.exited
	}
}

// logTail returns the last lines of the process log, for error messages.
func (k *controllerManager) logTail() string {
	data, err := os.ReadFile(k.logPath)
	if err != nil {
		return err.Error()
	}
	if len(data) > 4096 {
		data = data[len(data)-4096:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return string(data)
}
