package controlplanetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubewarden/network-enforcer/internal/testproc"
)

// AuthorizationPolicyCRD is the name of Istio's AuthorizationPolicy CRD, which
// the control plane has unless Options.WithoutIstio.
const AuthorizationPolicyCRD = "authorizationpolicies.security.istio.io"

// istioAPIModule ships Istio's CRDs beside its API types. The version that go.mod
// selects is the one whose types the project renders, so CRD and types agree.
const istioAPIModule = "istio.io/api"

// istioCRDsFile holds every Istio CRD in istioAPIModule, one YAML document each.
const istioCRDsFile = "kubernetes/customresourcedefinitions.gen.yaml"

// IstioCRD returns the CRD called name from Istio's CRD file, at the version
// of istio.io/api that the go.mod of root selects.
func IstioCRD(root, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	dir, err := ModuleDir(root, istioAPIModule)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, istioCRDsFile)
	objs, err := ReadManifest(path)
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		if obj.GetKind() != "CustomResourceDefinition" || obj.GetName() != name {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
			return nil, fmt.Errorf("%s: CRD %s: %w", path, name, err)
		}
		return crd, nil
	}
	return nil, fmt.Errorf("%s has no CRD %s", path, name)
}

// ModuleDir returns the folder of module (a path, or path@version), at the
// version that the go.mod of dir selects when none is given, downloading it when
// the module cache lacks it. The go command is asked because only it knows where
// that folder is (GOMODCACHE, GOPATH and the escaping of module paths all play
// a part).
func ModuleDir(dir, module string) (string, error) {
	cmd := testproc.Command("go", "mod", "download", "-json", module)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", module, errors.Join(runErr, err, errors.New(stderr.String())))
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", module, m.Error)
	}
	return m.Dir, nil
}
