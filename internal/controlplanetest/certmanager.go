package controlplanetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// CertManagerController returns the path of cert-manager's controller as
// hack/certmanager.sh builds it in the repository at root, or a *MissingError
// when it is not built.
func CertManagerController(root string) (string, error) {
	out, err := testproc.Command(filepath.Join(root, "hack", "certmanager.sh"), "--print").Output()
	if err != nil {
		return "", fmt.Errorf("hack/certmanager.sh --print: %w", err)
	}
	bin := strings.TrimSpace(string(out))
	if _, err := os.Stat(bin); err != nil {
		return "", &MissingError{What: "cert-manager's controller", Target: "certmanager", Detail: bin + " is missing"}
	}
	return bin, nil
}
