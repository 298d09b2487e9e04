package controlplanetest

import (
	"os"
	"path/filepath"
)

// Binary returns the built distribution, bin/network-enforcer, or a
// *MissingError that says to run `make build` when it is missing.
func Binary() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "bin", "network-enforcer")
	if _, err := os.Stat(bin); err != nil {
		return "", &MissingError{What: "the built distribution", Target: "build", Detail: bin + " is missing"}
	}
	return bin, nil
}
