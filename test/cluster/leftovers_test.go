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
)

// The folders and the lock of hack/cluster/cluster.sh (its state, run and lock
// variables): every process of the cluster names one of the folders in its
// command line.
const (
	clusterRunDir = "/run/network-enforcer-cluster"
	clusterLock   = "/run/network-enforcer-cluster.lock"
)

func clusterState() string {
	if s := os.Getenv("NETWORK_ENFORCER_CLUSTER_STATE"); s != "" {
		return s
	}
	return "/var/lib/network-enforcer-cluster"
}

// hostLeftovers returns what a stopped cluster left on the host: a process of
// it still running, its lock still held, its recorded PIDs, or a link it made.
func hostLeftovers() error {
	var left []string
	state := clusterState()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || len(cmdline) == 0 {
			continue // ended since, or a kernel thread
		}
		if bytes.Contains(cmdline, []byte(state)) || bytes.Contains(cmdline, []byte(clusterRunDir)) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			if pid == os.Getpid() {
				continue
			}
			left = append(left, fmt.Sprintf("process %d (%s)", pid, strings.ReplaceAll(string(bytes.TrimRight(cmdline, "\x00")), "\x00", " ")))
		}
	}
	if f, err := os.OpenFile(clusterLock, os.O_RDONLY, 0); err == nil {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			left = append(left, "the lock "+clusterLock+" is held")
		}
		_ = f.Close()
	}
	if _, err := os.Stat(filepath.Join(state, "pids")); !errors.Is(err, os.ErrNotExist) {
		left = append(left, "recorded PIDs in "+filepath.Join(state, "pids"))
	}
	for _, link := range []string{"ne-br0", "ne-node0", "ne-out0", "cilium_host"} {
		if _, err := net.InterfaceByName(link); err == nil {
			left = append(left, "the link "+link)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("the stopped cluster left on the host: %s", strings.Join(left, "; "))
	}
	return nil
}
