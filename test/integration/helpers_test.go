package integration

import (
	"path/filepath"
	"testing"

	"go.opentelemetry.io/otel/attribute"

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

func attributeKey(k string) attribute.Key { return attribute.Key(k) }
