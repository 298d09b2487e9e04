package controlplanetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/testproc"
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

// TestCacheDirIsLibSh: the tests look for helm (and so for what the Makefile
// builds) where hack/lib.sh, which the Makefile reads, puts the cache, with
// $NETWORK_ENFORCER_CACHE, with $XDG_CACHE_HOME, and with neither.
func TestCacheDirIsLibSh(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	for name, env := range map[string]map[string]string{
		"NETWORK_ENFORCER_CACHE": {"NETWORK_ENFORCER_CACHE": filepath.Join(home, "mine"), "XDG_CACHE_HOME": filepath.Join(home, "xdg")},
		"XDG_CACHE_HOME":         {"NETWORK_ENFORCER_CACHE": "", "XDG_CACHE_HOME": filepath.Join(home, "xdg")},
		"HOME only":              {"NETWORK_ENFORCER_CACHE": "", "XDG_CACHE_HOME": ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("HOME", home)
			for k, v := range env {
				t.Setenv(k, v)
				if v == "" {
					os.Unsetenv(k) // t.Setenv restores it afterwards
				}
			}
			cmd := testproc.Command("bash", "-c", `. hack/lib.sh && echo "$NETWORK_ENFORCER_CACHE"`)
			cmd.Dir = root
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			got, err := CacheDir()
			if want := strings.TrimSpace(string(out)); err != nil || got != want {
				t.Fatalf("CacheDir() = %q, %v; hack/lib.sh says %q", got, err, want)
			}
		})
	}
}
