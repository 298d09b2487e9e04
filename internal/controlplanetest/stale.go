package controlplanetest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// dirPrefix starts the name of a control plane's temporary folder, followed by
// the PID of the process that made it.
const dirPrefix = "network-enforcer-testenv-"

// sweepStale removes the temporary folders of control planes whose process is
// gone: a test process that was killed could not remove its own (its
// processes end with it; see testproc).
func sweepStale() {
	if _, err := os.Stat("/proc/self"); err != nil {
		return // no way to tell a live process here
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		pid, ok := ownerPID(filepath.Base(dir))
		if !ok {
			continue
		}
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); os.IsNotExist(err) {
			_ = os.RemoveAll(dir)
		}
	}
}

// ownerPID reads the PID in a control plane folder's name.
func ownerPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, dirPrefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}
