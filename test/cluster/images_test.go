//go:build cluster

package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/realnodetest"
	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// Images of the suite, imported into the node's containerd; pods use them with
// imagePullPolicy: Never, as no registry is reachable.
const (
	testpodImage = "ne.local/testpod:dev"
	// testpodRelease is the same program under another tag: a release of a
	// workload changes its pod template's image to it.
	testpodRelease = "ne.local/testpod:release"
)

// importImages imports, once per cluster: the distribution's image from `make
// image`, the tests' pod program (under two tags) and cert-manager's
// controller. (The cluster imports its hubble-relay itself.)
func importImages(t *testing.T) {
	t.Helper()
	if running.imported {
		return
	}
	if err := buildAndImport(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	running.imported = true
}

func buildAndImport(dir string) error {
	goBuild := testproc.Command("go", "build", "-o", dir+"/", "./test/cluster/testpod", "./tools/cluster/staticimage")
	goBuild.Dir = env.root
	goBuild.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := goBuild.CombinedOutput(); err != nil {
		return &cmdError{"go build", err, out}
	}
	for _, img := range []struct{ name, binary string }{
		{testpodImage, filepath.Join(dir, "testpod")},
		{testpodRelease, filepath.Join(dir, "testpod")},
		{certManagerImage, env.certManager},
	} {
		tar := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(img.name)+".tar")
		if out, err := testproc.Command(filepath.Join(dir, "staticimage"), "-name", img.name, "-binary", img.binary, "-tarball", tar).CombinedOutput(); err != nil {
			return &cmdError{"staticimage " + img.name, err, out}
		}
		if err := importTarball(tar); err != nil {
			return err
		}
	}
	return importTarball(filepath.Join(env.root, "bin", "network-enforcer-image.tar"))
}

func importTarball(tar string) error {
	return realnodetest.Import(realnodetest.Config{Root: env.root}, tar)
}

type cmdError struct {
	what string
	err  error
	out  []byte
}

func (e *cmdError) Error() string { return e.what + ": " + e.err.Error() + ": " + string(e.out) }
