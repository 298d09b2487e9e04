package k8swriterexporter

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

func TestProposalName(t *testing.T) {
	ref := func(kind v1alpha1.WorkloadKind, name string) workload.Ref {
		return workload.Ref{Namespace: "shop", Kind: kind, Name: name}
	}
	if got := ProposalName(ref("Deployment", "web"), "Ingress"); got != "deployment-web-ingress" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("checkout-service-", 4) // 68 characters
	a := ProposalName(ref("StatefulSet", long+"a"), "Egress")
	b := ProposalName(ref("StatefulSet", long+"b"), "Egress")
	for _, n := range []string{a, b} {
		if len(n) > 63 || !strings.HasPrefix(n, "statefulset-checkout-service-") || !strings.HasSuffix(n, "-egress") {
			t.Errorf("long name %q (%d characters)", n, len(n))
		}
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			t.Errorf("%q: %v", n, errs)
		}
	}
	if a == b {
		t.Errorf("two long names that share a beginning got one proposal name %q", a)
	}
	if ProposalName(ref("StatefulSet", long+"a"), "Egress") != a {
		t.Error("the name of a long workload changes between calls")
	}
}
