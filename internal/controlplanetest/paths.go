package controlplanetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubewarden/network-enforcer/internal/testproc"
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

// CacheDir returns the folder where the Makefile and hack/ build what comes from
// pinned versions (the tools, the control plane, the real node's parts), as
// hack/lib.sh chooses it: $NETWORK_ENFORCER_CACHE when set, else network-enforcer
// in the user's cache folder ($XDG_CACHE_HOME, or ~/.cache).
func CacheDir() (string, error) {
	if dir := os.Getenv("NETWORK_ENFORCER_CACHE"); dir != "" {
		return dir, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("the project's cache folder: %w", err)
	}
	return filepath.Join(dir, "network-enforcer"), nil
}

// AssetsDir returns the folder that holds the control-plane binaries, as
// `hack/controlplane.sh --print` finds it: $KUBEBUILDER_ASSETS when that folder
// holds all of them (as setup-envtest's folder does once kube-controller-manager
// is added), else the folder that hack/controlplane.sh builds them into. When a
// binary is missing it returns a *MissingError, which names the make target.
func AssetsDir(root string) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" && missingBinary(dir) == "" {
		return dir, nil
	}
	out, err := testproc.Command(filepath.Join(root, "hack", "controlplane.sh"), "--print").Output()
	if err != nil {
		return "", fmt.Errorf("hack/controlplane.sh --print: %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if bin := missingBinary(dir); bin != "" {
		detail := fmt.Sprintf("%s is missing in %s", bin, dir)
		if env := os.Getenv("KUBEBUILDER_ASSETS"); env != "" && env != dir {
			detail += fmt.Sprintf(" and $KUBEBUILDER_ASSETS (%s) does not hold all of %s", env, strings.Join(controlPlaneBinaries, ", "))
		}
		return "", &MissingError{What: "the test control plane", Target: "controlplane", Detail: detail}
	}
	return dir, nil
}

// missingBinary returns the first control-plane binary that dir lacks, or "".
func missingBinary(dir string) string {
	for _, bin := range controlPlaneBinaries {
		if info, err := os.Stat(filepath.Join(dir, bin)); err != nil || info.IsDir() {
			return bin
		}
	}
	return ""
}
