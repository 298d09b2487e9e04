package controlplanetest

import (
	"fmt"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// CiliumNetworkPolicyCRD is the name of Cilium's CiliumNetworkPolicy CRD, which
// the control plane has unless Options.WithoutCilium.
const CiliumNetworkPolicyCRD = "ciliumnetworkpolicies.cilium.io"

// ciliumModule ships Cilium's CRDs beside the agent's code; the version that
// go.mod selects is the one of the agent that the real-node suite runs.
const ciliumModule = "github.com/cilium/cilium"

// ciliumCRDsDir holds Cilium's cilium.io/v2 CRDs, one file each, named by
// their plural.
const ciliumCRDsDir = "pkg/k8s/apis/cilium.io/client/crds/v2"

// CiliumCRD returns the cilium.io/v2 CRD of resource (a plural, such as
// ciliumnetworkpolicies), at the version of Cilium that the go.mod of root
// selects.
func CiliumCRD(root, resource string) (*apiextensionsv1.CustomResourceDefinition, error) {
	dir, err := ModuleDir(root, ciliumModule)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ciliumCRDsDir, resource+".yaml")
	objs, err := ReadManifest(path)
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 || objs[0].GetKind() != "CustomResourceDefinition" {
		return nil, fmt.Errorf("%s: want one CustomResourceDefinition, have %d objects", path, len(objs))
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return crd, nil
}
