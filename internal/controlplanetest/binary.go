package controlplanetest

import (
	"fmt"
	"os"
	"path/filepath"
)

// Binary returns the built distribution, bin/network-enforcer, or an error that
// says to run `make build` when it is missing.
func Binary() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "bin", "network-enforcer")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s is missing: run `make build` first", bin)
	}
	return bin, nil
}
