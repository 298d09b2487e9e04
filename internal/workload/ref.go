// Package workload names a workload, the unit that proposals and policies are
// written for. It is shared by the enforcer extension, which resolves flows to
// workloads, and by what the components hand each other in log records.
package workload

import (
	"strings"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// Ref names a workload.
type Ref struct {
	Namespace string
	Kind      v1alpha1.WorkloadKind
	Name      string
}

// String writes the reference as <namespace>/<Kind>/<name>.
func (w Ref) String() string { return w.Namespace + "/" + string(w.Kind) + "/" + w.Name }

// ParseRef reads what String writes; anything else is the zero Ref.
func ParseRef(s string) Ref {
	ns, rest, ok := strings.Cut(s, "/")
	if !ok {
		return Ref{}
	}
	kind, name, ok := strings.Cut(rest, "/")
	if !ok {
		return Ref{}
	}
	return Ref{Namespace: ns, Kind: v1alpha1.WorkloadKind(kind), Name: name}
}

// Target is the workload that a proposal or policy in namespace targets.
func Target(namespace string, t v1alpha1.TargetRef) Ref {
	return Ref{Namespace: namespace, Kind: t.Kind, Name: t.Name}
}
