package controlplanetest

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/testproc"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// heldLine is what the holding test binary prints, with its control plane's
// folder, once its control plane runs.
const heldLine = "control plane held in "

// TestNothingOutlivesAKilledTestBinary kills a test binary that runs a control
// plane with SIGKILL, which gives it no time to stop anything, and finds none
// of the processes it started still running, and its files removed by the
// next control plane's start.
func TestNothingOutlivesAKilledTestBinary(t *testing.T) {
	Require(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := testproc.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), holdVar+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	held := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if dir, ok := strings.CutPrefix(sc.Text(), heldLine); ok {
				held <- dir
				return
			}
		}
		held <- ""
	}()
	var dir string
	select {
	case dir = <-held:
		if dir == "" {
			_ = cmd.Wait()
			t.Fatalf("the test binary ended before its control plane ran: %v", cmd.ProcessState)
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the test binary's control plane did not start within 2 minutes")
	}

	started := descendants(t, cmd.Process.Pid)
	var names []string
	for _, p := range started {
		names = append(names, p.name)
	}
	for _, want := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if !slices.Contains(names, want) {
			t.Fatalf("the test binary runs %v, not %s", names, want)
		}
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The kernel signals the children as their parent dies; each takes a moment
	// to be gone.
	var left []string
	if !testwait.Try(t, "the started processes to end", 30*time.Second, func() bool {
		left = nil
		for _, p := range started {
			if p.running() {
				left = append(left, p.name+" "+strconv.Itoa(p.pid))
			}
		}
		return len(left) == 0
	}) {
		t.Fatalf("30 s after SIGKILL of the test binary, these still run: %v", left)
	}

	if _, err := os.Stat(filepath.Join(dir, "etcd")); os.IsNotExist(err) {
		// The control plane of another test package, started since the
		// kill (go test runs packages side by side), swept it already.
		t.Logf("the killed control plane's folder %s was swept by another start", dir)
		return
	} else if err != nil {
		t.Fatalf("the killed control plane's etcd data: %v", err)
	}
	sweepStale()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the killed control plane's folder %s is still there after the next start's sweep (%v)", dir, err)
	}
}

// process is a process found in /proc, told apart from a later one with the
// same PID by its start time.
type process struct {
	pid   int
	start string
	name  string
}

// descendants lists the processes below pid, each named by the base name of
// its argv[0].
func descendants(t *testing.T, pid int) []process {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	children := map[int][]process{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := readStat(p)
		if !ok {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		children[st.ppid] = append(children[st.ppid], process{pid: p, start: st.start, name: filepath.Base(argv0)})
	}
	var out []process
	queue := []int{pid}
	for len(queue) > 0 {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return out
}

// running reports whether the process still runs: the PID is not taken by
// another process since, and the process has not ended (a zombie has).
func (p process) running() bool {
	st, ok := readStat(p.pid)
	return ok && st.start == p.start && st.state != "Z"
}

type stat struct {
	ppid  int
	state string
	start string
}

// readStat reads the fields of /proc/PID/stat that tell a process apart.
func readStat(pid int) (stat, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return stat{}, false
	}
	// The command name, in parentheses, may hold spaces; the fields after it
	// are state (3), ppid (4), ..., starttime (22).
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return stat{}, false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return stat{}, false
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return stat{}, false
	}
	return stat{ppid: ppid, state: fields[0], start: fields[19]}, true
}
