package controlplanetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAssetsDir: $KUBEBUILDER_ASSETS is used when it holds every binary; else
// the folder of hack/controlplane.sh, and when that lacks a binary the error is
// a *MissingError that names the make target.
func TestAssetsDir(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	full, empty := t.TempDir(), t.TempDir()
	for _, bin := range controlPlaneBinaries {
		if err := os.WriteFile(filepath.Join(full, bin), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("NETWORK_ENFORCER_CONTROLPLANE_DIR", empty)

	t.Setenv("KUBEBUILDER_ASSETS", full)
	if dir, err := AssetsDir(root); err != nil || dir != full {
		t.Fatalf("with a complete $KUBEBUILDER_ASSETS: %q, %v; want %q", dir, err, full)
	}

	partial := t.TempDir()
	if err := os.WriteFile(filepath.Join(partial, "etcd"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, assets := range []string{"", partial} {
		t.Setenv("KUBEBUILDER_ASSETS", assets)
		_, err := AssetsDir(root)
		if !IsMissing(err) || !strings.Contains(err.Error(), "run `make controlplane`") || !strings.Contains(err.Error(), empty) {
			t.Fatalf("$KUBEBUILDER_ASSETS %q and an empty cache folder: %v", assets, err)
		}
	}

	t.Setenv("NETWORK_ENFORCER_CONTROLPLANE_DIR", full)
	if dir, err := AssetsDir(root); err != nil || dir != full {
		t.Fatalf("with a complete cache folder: %q, %v; want %q", dir, err, full)
	}
}
