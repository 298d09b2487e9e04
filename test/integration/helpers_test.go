package integration

import (
	"path/filepath"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	root, err := controlplanetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}
