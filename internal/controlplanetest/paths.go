package controlplanetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// AdmissionPoliciesFile is the repository path of the admission policies YAML, the
// one file that the chart and the tests both install.
const AdmissionPoliciesFile = "chart/files/admission-policies.yaml"

// controlPlaneBinaries are the programs that AssetsDir must hold.
var controlPlaneBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager"}

// RepoRoot returns the repository root: the nearest folder above the working
// directory whose go.mod declares the project module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/kubewarden/network-enforcer\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root not found above the working directory")
		}
		dir = parent
	}
}

// AssetsDir returns the folder that holds the control-plane binaries:
// $KUBEBUILDER_ASSETS when set, else the cache folder of hack/controlplane.sh. It
// fails, naming the command to run, when a binary is missing.
func AssetsDir(root string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		out, err := exec.Command(filepath.Join(root, "hack", "controlplane.sh"), "--print").Output()
		if err != nil {
			return "", fmt.Errorf("hack/controlplane.sh --print: %w", err)
		}
		dir = strings.TrimSpace(string(out))
	}
	for _, bin := range controlPlaneBinaries {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("control-plane binary %s missing in %s: run `make controlplane` first", bin, dir)
		}
	}
	return dir, nil
}
