//go:build cluster

package cluster

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
)

// certManagerImage is cert-manager's controller as hack/certmanager.sh builds
// it from cert-manager's module, in an image of its own.
const certManagerImage = "ne.local/cert-manager-controller:dev"

// certManagerManifests run cert-manager's controller as cert-manager's chart
// does: a Deployment in cert-manager with a ServiceAccount of its own and a
// ClusterRole for what it reads and writes. %[1]s is the image.
const certManagerManifests = `
apiVersion: v1
kind: Namespace
metadata:
  name: cert-manager
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: cert-manager
  namespace: cert-manager
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: cert-manager-controller
rules:
  - apiGroups: [cert-manager.io]
    resources: [certificates, certificates/status, certificates/finalizers, certificaterequests, certificaterequests/status, certificaterequests/finalizers, issuers, issuers/status, clusterissuers, clusterissuers/status]
    verbs: [get, list, watch, create, update, patch, delete]
  - apiGroups: [cert-manager.io]
    resources: [signers]
    resourceNames: [issuers.cert-manager.io/*, clusterissuers.cert-manager.io/*]
    verbs: [approve]
  - apiGroups: [acme.cert-manager.io]
    resources: [orders, challenges]
    verbs: [get, list, watch]
  - apiGroups: [""]
    resources: [secrets]
    verbs: [get, list, watch, create, update, patch, delete]
  - apiGroups: [""]
    resources: [events]
    verbs: [create, patch]
  - apiGroups: [""]
    resources: [pods, services, configmaps]
    verbs: [get, list, watch]
  - apiGroups: [networking.k8s.io]
    resources: [ingresses]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: cert-manager-controller
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cert-manager-controller}
subjects:
  - {kind: ServiceAccount, name: cert-manager, namespace: cert-manager}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: cert-manager
  namespace: cert-manager
spec:
  replicas: 1
  selector:
    matchLabels: {app: cert-manager}
  template:
    metadata:
      labels: {app: cert-manager}
    spec:
      serviceAccountName: cert-manager
      securityContext: {runAsNonRoot: true, runAsUser: 1000}
      containers:
        - name: cert-manager-controller
          image: %[1]s
          imagePullPolicy: Never
          args: [--cluster-resource-namespace=cert-manager]
          securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`

// installCertManager installs cert-manager on the running cluster, once per
// cluster: its CRDs from its module (the version that tools/certmanager builds)
// and its controller, which issues and renews the chart's Certificates.
// cert-manager's webhook and cainjector do not run: the controller needs
// neither to issue, and their commands' modules are not published.
func installCertManager(t *testing.T) {
	t.Helper()
	if running.certManager {
		return
	}
	importImages(t)
	dir, err := controlplanetest.ModuleDir(filepath.Join(env.root, "tools", "certmanager"), "github.com/cert-manager/cert-manager")
	if err != nil {
		t.Fatal(err)
	}
	crds := filepath.Join(dir, "deploy", "crds")
	out := kubectl(t, "apply", "--server-side", "-f", crds)
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, ok := strings.CutPrefix(strings.Fields(line)[0], "customresourcedefinition.apiextensions.k8s.io/"); ok {
			names = append(names, "crd/"+name)
		}
	}
	waitEstablished(t, names...)
	apply(t, fmt.Sprintf(certManagerManifests, certManagerImage))
	waitReady(t, "cert-manager", "app=cert-manager", 1, 2*time.Minute)
	running.certManager = true
}
