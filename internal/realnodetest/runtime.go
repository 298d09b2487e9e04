package realnodetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// runtime starts containerd with runc and the CRI plugin, and imports the
// images that no registry serves here.
func (cfg Config) runtime() error {
	for _, dir := range []string{RunDir, cfg.path("containerd"), cfg.path("cni-bin")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		return err
	}
	conf := fmt.Sprintf(`version = 3
root = %q
state = %q
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  address = %q
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %q
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%q, "/usr/lib/cni"]
    conf_dir = %q
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "ne.local/pause:1"
[plugins.'io.containerd.grpc.v1.cri']
  enable_cdi = false
`, cfg.path("containerd", "root"), filepath.Join(RunDir, "state"), cfg.sock(), cfg.sock()+".ttrpc",
		filepath.Join(RunDir, "debug.sock"), runc, cfg.path("cni-bin"), cfg.path("cni"))
	if err := os.WriteFile(cfg.path("containerd.toml"), []byte(conf), 0o644); err != nil {
		return err
	}
	// The shim that containerd starts is found on PATH.
	if err := cfg.start("containerd", []string{"PATH=" + cfg.bin + ":" + os.Getenv("PATH")},
		cfg.binary("containerd"), "--config", cfg.path("containerd.toml")); err != nil {
		return err
	}
	if err := cfg.waitFor("containerd", 30*time.Second, func() error {
		_, err := run(cfg.binary("ctr"), "-a", cfg.sock(), "version")
		return err
	}); err != nil {
		return err
	}
	tars, _ := filepath.Glob(cfg.path("images", "*.tar"))
	for _, tar := range tars {
		if _, err := run(cfg.binary("ctr"), "-a", cfg.sock(), "-n", "k8s.io", "images", "import", "--no-unpack=false", tar); err != nil {
			return err
		}
	}
	return nil
}

// images builds the images that no registry serves here into docker
// tarballs: the pod sandbox, CoreDNS and, with Cilium, hubble-relay.
func (cfg Config) images() error {
	tools := cfg.path("tools")
	for _, dir := range []string{tools, cfg.path("images")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	build := exec.Command("go", "build", "-o", tools+"/", "./tools/cluster/pki", "./tools/cluster/staticimage", "./tools/cluster/pause")
	build.Dir = cfg.Root
	if out, err := build.CombinedOutput(); err != nil {
		return &CommandError{Args: build.Args, Err: err, Output: string(out)}
	}
	images := [][2]string{
		{"ne.local/pause:1", filepath.Join(tools, "pause")},
		{"ne.local/coredns:" + resolvedVersion(cfg.binary("coredns")), cfg.binary("coredns")},
	}
	if cfg.CNI == CNICilium {
		images = append(images, [2]string{cfg.relayImage(), cfg.binary("hubble-relay")})
	}
	for _, img := range images {
		tar := cfg.path("images", filepath.Base(img[1])+".tar")
		if _, err := run(filepath.Join(tools, "staticimage"), "-name", img[0], "-binary", img[1], "-tarball", tar); err != nil {
			return err
		}
	}
	return nil
}

func (cfg Config) relayImage() string {
	return "ne.local/hubble-relay:" + resolvedVersion(cfg.binary("hubble-relay"))
}

// Import imports a docker tarball into the running node's containerd; pods
// use it with imagePullPolicy: Never.
func Import(cfg Config, tar string) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	_, err = run(cfg.binary("ctr"), "-a", cfg.sock(), "-n", "k8s.io", "images", "import", tar)
	return err
}

// KillContainer kills the running node's container id (a pod status's
// containerID, with or without its containerd:// prefix) at once, as a crash
// would: SIGKILL to every process of its task, so that nothing of a graceful
// shutdown runs. The kubelet restarts it as its pod's restartPolicy says.
func KillContainer(cfg Config, id string) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	_, err = run(cfg.binary("ctr"), "-a", cfg.sock(), "-n", "k8s.io", "tasks", "kill", "--all", "--signal", "SIGKILL",
		strings.TrimPrefix(id, "containerd://"))
	return err
}
