package integration

import (
	"path/filepath"
	"testing"

	"github.com/kubewarden/network-enforcer/internal/testenv"
)

func repoFile(t *testing.T, rel string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}
