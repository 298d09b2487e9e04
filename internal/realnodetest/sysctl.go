package realnodetest

import (
	"os"
	"path/filepath"
	"strings"
)

// sysctls are the kernel settings that a run changes: the run itself
// (forwarding, the bridge's netfilter) and the Cilium agent (forwarding on
// every interface, reverse-path filtering, its BPF JIT and neighbour
// settings). Each is remembered before the run changes it and restored at the
// end.
var sysctls = []string{
	"net.ipv4.ip_forward", "net.bridge.bridge-nf-call-iptables", "net.ipv4.conf.all.forwarding",
	"net.ipv4.conf.default.forwarding", "net.ipv4.conf.all.rp_filter", "net.ipv4.conf.default.rp_filter",
	"net.core.bpf_jit_enable", "net.ipv4.fib_multipath_use_neigh", "kernel.timer_migration",
}

func sysctlPath(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

// rememberSysctl saves key's value once, so that a killed run's saved value
// stays the one to restore. A key that the kernel does not have is skipped.
func (cfg Config) rememberSysctl(key string) {
	saved := cfg.path("sysctl." + key)
	if exists(saved) {
		return
	}
	if v, err := os.ReadFile(sysctlPath(key)); err == nil {
		_ = os.WriteFile(saved, v, 0o644)
	}
}

// setSysctl remembers key's value and sets it.
func (cfg Config) setSysctl(key, value string) error {
	cfg.rememberSysctl(key)
	return os.WriteFile(sysctlPath(key), []byte(value+"\n"), 0o644)
}

// restoreSysctl puts back the value that rememberSysctl saved.
func (cfg Config) restoreSysctl(key string) {
	saved := cfg.path("sysctl." + key)
	v, err := os.ReadFile(saved)
	if err != nil {
		return
	}
	if err := os.WriteFile(sysctlPath(key), v, 0o644); err != nil {
		cfg.logf("restoring %s: %v", key, err)
	}
	_ = os.Remove(saved)
}
