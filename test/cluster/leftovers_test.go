//go:build cluster

package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kubewarden/network-enforcer/internal/realnodetest"
)

// hostLeftovers returns what a stopped cluster left on the host: a process of
// it still running, its lock still held, its recorded PIDs, or a link it made.
func hostLeftovers() error {
	var left []string
	state := realnodetest.StateDir()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || len(cmdline) == 0 {
			continue // ended since, or a kernel thread
		}
		if bytes.Contains(cmdline, []byte(state)) || bytes.Contains(cmdline, []byte(realnodetest.RunDir)) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			if pid == os.Getpid() {
				continue
			}
			left = append(left, fmt.Sprintf("process %d (%s)", pid, strings.ReplaceAll(string(bytes.TrimRight(cmdline, "\x00")), "\x00", " ")))
		}
	}
	if f, err := os.OpenFile(realnodetest.LockPath, os.O_RDONLY, 0); err == nil {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			left = append(left, "the lock "+realnodetest.LockPath+" is held")
		}
		_ = f.Close()
	}
	if _, err := os.Stat(filepath.Join(state, "pids")); !errors.Is(err, os.ErrNotExist) {
		left = append(left, "recorded PIDs in "+filepath.Join(state, "pids"))
	}
	for _, link := range realnodetest.Links {
		if _, err := net.InterfaceByName(link); err == nil {
			left = append(left, "the link "+link)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("the stopped cluster left on the host: %s", strings.Join(left, "; "))
	}
	return nil
}
