package realnodetest

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Down cleans the host of what a run left behind when it was killed: it waits
// for the machine's lock (up to cfg.LockWait) and then cleans as a stop does.
func Down(cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	lock, err := cfg.lock()
	if err != nil {
		return err
	}
	defer lock.Close()
	cfg.down()
	return nil
}

// down cleans the host of everything a run makes, whether that run ended or
// was killed. The order matters: pods go while the kubelet runs, so that the
// CNI plugin frees their addresses and namespaces.
func (cfg Config) down() {
	if cfg.running("kubelet") {
		cfg.stop("kube-controller-manager")
		cfg.stop("kube-scheduler")
		if _, err := cfg.kubectl("get", "--raw", "/readyz"); err == nil {
			if _, err := cfg.kubectl("delete", "pods", "--all", "--all-namespaces", "--now", "--wait=true", "--timeout=40s"); err != nil {
				cfg.logf("some pods did not go before the kubelet stops")
			}
		}
	}
	cfg.stop("kube-router")
	if exists(cfg.binary("kube-router")) {
		quiet(cfg.binary("kube-router"), "--cleanup-config")
	}
	cfg.stop("kube-proxy")
	if exists(cfg.binary("kube-proxy")) {
		quiet(cfg.binary("kube-proxy"), "--cleanup")
	}
	cfg.stop("kubelet")
	if exists(cfg.sock()) && cfg.running("containerd") {
		tasks, _ := run(cfg.binary("ctr"), "-a", cfg.sock(), "-n", "k8s.io", "tasks", "ls", "-q")
		for _, task := range strings.Fields(tasks) {
			quiet(cfg.binary("ctr"), "-a", cfg.sock(), "-n", "k8s.io", "tasks", "kill", "-s", "KILL", task)
		}
		time.Sleep(500 * time.Millisecond)
	}
	cfg.stop("containerd")
	// A shim outlives containerd; ours are those that serve our socket.
	for _, pid := range processes(func(argv []string) bool {
		return strings.Contains(argv[0], "containerd-shim") && slices.ContainsFunc(argv, func(a string) bool { return strings.Contains(a, cfg.sock()) })
	}) {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	for _, part := range []string{"kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"} {
		cfg.stop(part)
	}
	cfg.ciliumDown()

	// Mounts under the kubelet's and containerd's folders, deepest first.
	under := regexp.MustCompile("^(/var/lib/kubelet|" + regexp.QuoteMeta(cfg.path("containerd")) + "|" + regexp.QuoteMeta(RunDir) + "|/run/netns/cni-)")
	points := slices.DeleteFunc(mounts(), func(m string) bool { return !under.MatchString(m) })
	slices.Sort(points)
	slices.Reverse(points)
	for _, m := range points {
		_ = unix.Unmount(m, unix.MNT_DETACH)
	}
	if out, err := run("ip", "netns", "list"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			if name, _, _ := strings.Cut(line, " "); strings.HasPrefix(name, "cni-") {
				quiet("ip", "netns", "delete", name)
			}
		}
	}
	for _, link := range []string{bridgeDev, nodeDev, outsideDev} {
		quiet("ip", "link", "delete", link)
	}
	quiet("ip", "netns", "delete", OutsideNS)
	quiet("nft", "delete", "table", "inet", isolationName)
	flushChains()
	cfg.dropNewTables()
	for _, key := range sysctls {
		cfg.restoreSysctl(key)
	}
	// Every run starts from an empty etcd and new certificates: nothing of a
	// previous run's objects comes back. The CNI configuration goes too: the
	// next run may have another CNI.
	for _, dir := range []string{"/var/lib/kubelet", "/var/log/pods", "/var/log/containers", RunDir,
		cfg.path("containerd"), cfg.path("pids"), cfg.path("pki"), cfg.path("cni"), cfg.path("cni-bin"),
		cfg.path("etcd"), cfg.path("apiserver-certs"), cfg.path("kcm-certs"), cfg.path("kubelet-certs")} {
		if err := os.RemoveAll(dir); err != nil {
			cfg.logf("removing %s: %v", dir, err)
		}
	}
}

// ciliumDown removes what the Cilium agent put on the host, whether it ended
// or was killed: its process, then (with the agent's own post-uninstall
// clean-up) its BPF programs, maps and tc filters, its links and routes, then
// its pins, mounts and run folder (its iptables chains go in flushChains).
func (cfg Config) ciliumDown() {
	cfg.stop("cilium-agent")
	if exists(cfg.binary("cilium-dbg")) && (exists("/sys/fs/bpf/cilium") || linkExists("cilium_host")) {
		if _, err := run(cfg.binary("cilium-dbg"), "post-uninstall-cleanup", "--all-state", "--force"); err != nil {
			cfg.logf("cilium-dbg post-uninstall-cleanup failed: %v", err)
		}
	}
	links := []string{"cilium_host", "cilium_net", "cilium_vxlan"}
	if ifaces, err := net.Interfaces(); err == nil {
		for _, iface := range ifaces {
			if strings.HasPrefix(iface.Name, "lxc") { // the pods' ends of the agent's veth pairs
				links = append(links, iface.Name)
			}
		}
	}
	for _, link := range links {
		quiet("ip", "link", "delete", link)
	}
	_ = os.RemoveAll("/sys/fs/bpf/cilium")
	pins, _ := filepath.Glob("/sys/fs/bpf/tc/globals/cilium_*")
	for _, p := range pins {
		_ = os.RemoveAll(p)
	}
	if mounted("/run/cilium/cgroupv2") {
		if err := unix.Unmount("/run/cilium/cgroupv2", 0); err != nil {
			cfg.logf("unmounting /run/cilium/cgroupv2: %v", err)
		}
	}
	if exists(cfg.path("bpffs.mounted")) {
		_ = unix.Unmount("/sys/fs/bpf", 0)
		_ = os.Remove(cfg.path("bpffs.mounted"))
	}
	_ = os.RemoveAll("/run/cilium")
	_ = os.RemoveAll("/var/run/cilium")
}

func linkExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

// chainPrefix matches the chains of kube-router, the CNI plugins and the
// Cilium agent.
var (
	chainPrefix = regexp.MustCompile(`^(KUBE-|CNI-|CILIUM_)`)
	jumpRule    = regexp.MustCompile(`^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) .*-j (KUBE-|CNI-|CILIUM_)`)
)

// flushChains removes the KUBE-*, CNI-* and CILIUM_* chains of iptables and
// the jumps to them from the built-in chains, and kube-router's ipsets.
func flushChains() {
	for _, ipt := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(ipt); err != nil {
			continue
		}
		for _, table := range []string{"filter", "nat", "mangle", "raw"} {
			rules, err := run(ipt, "-t", table, "-S")
			if err != nil {
				continue
			}
			var chains []string
			for _, rule := range strings.Split(rules, "\n") {
				if jumpRule.MatchString(rule) {
					// The rule as -S prints it, "-A CHAIN ...", deleted with -D.
					quiet(ipt, append([]string{"-t", table, "-D"}, shellWords(rule)[1:]...)...)
				}
				if f := strings.Fields(rule); len(f) == 2 && f[0] == "-N" && chainPrefix.MatchString(f[1]) {
					chains = append(chains, f[1])
				}
			}
			for _, chain := range chains {
				quiet(ipt, "-t", table, "-F", chain)
			}
			for _, chain := range chains {
				quiet(ipt, "-t", table, "-X", chain)
			}
		}
	}
	if _, err := exec.LookPath("ipset"); err == nil {
		sets, _ := run("ipset", "list", "-n")
		for _, set := range strings.Fields(sets) {
			if strings.HasPrefix(set, "KUBE-") || strings.HasPrefix(set, "kube-router") {
				quiet("ipset", "destroy", set)
			}
		}
	}
}

// shellWords splits a rule as iptables -S prints it: words apart by spaces,
// a comment in double quotes with backslash escapes.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		case c == '"':
			quoted = !quoted
			inWord = true
		case c == ' ' && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// dropNewTables deletes the nftables tables that the run made (iptables-nft
// makes ip filter, ip nat and so on for kube-router and the CNI plugins), once
// they hold no rule. The list of the tables before the run is kept while a
// table is left, so that the next clean-up knows it.
func (cfg Config) dropNewTables() {
	before, err := os.ReadFile(cfg.path("nft-tables.before"))
	if err != nil {
		return
	}
	had := map[string]bool{}
	for _, t := range strings.Split(string(before), "\n") {
		had[strings.TrimSpace(t)] = true
	}
	left := false
	for _, t := range nftTables() {
		if had[t] {
			continue
		}
		family, name, _ := strings.Cut(t, " ")
		if tableHasRules(family, name) {
			cfg.logf("nft table %s still holds rules: left in place", t)
			left = true
			continue
		}
		if _, err := run("nft", "delete", "table", family, name); err != nil {
			left = true
		}
	}
	if !left {
		_ = os.Remove(cfg.path("nft-tables.before"))
	}
}

// nftTables lists the host's tables as "family name".
func nftTables() []string {
	out, _ := run("nft", "list", "tables")
	var tables []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "table" {
			tables = append(tables, f[1]+" "+f[2])
		}
	}
	return tables
}

var structureLine = regexp.MustCompile(`^\s*(table|chain|type|policy|\}|$)`)

func tableHasRules(family, name string) bool {
	out, _ := run("nft", "list", "table", family, name)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if !structureLine.MatchString(sc.Text()) {
			return true
		}
	}
	return false
}

// processes returns the PIDs of the host's processes whose argument list
// matches.
func processes(match func(argv []string) bool) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		if argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"); match(argv) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
