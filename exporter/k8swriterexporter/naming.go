package k8swriterexporter

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// maxNameLength keeps a proposal's name usable as a label value (at most 63
// characters): the promoted policy carries it in its promoted-from label.
const maxNameLength = 63

// ProposalName is the name of the proposal for a workload and direction:
// <kind>-<name>-<direction> in lower case, e.g. deployment-web-ingress. When that
// is longer than 63 characters, the workload name is cut and followed by the first
// 8 hex digits of the SHA-256 of "<kind>/<name>", so that two long names that
// share a beginning still get different proposals.
func ProposalName(w workload.Ref, d v1alpha1.Direction) string {
	kind, dir := strings.ToLower(string(w.Kind)), strings.ToLower(string(d))
	name := kind + "-" + w.Name + "-" + dir
	if len(name) <= maxNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(string(w.Kind) + "/" + w.Name))
	hash := hex.EncodeToString(sum[:4])
	keep := maxNameLength - len(kind) - len(dir) - len(hash) - 3
	cut := strings.TrimRight(w.Name[:keep], "-.")
	return kind + "-" + cut + "-" + hash + "-" + dir
}

// amendmentSuffix ends the name of a policy's amendment.
const amendmentSuffix = "-amendment"

// AmendmentName is the name of the amendment of the policy of that name:
// <policy>-amendment, the policy's name hash-cut (v1alpha1.HashCut) so that
// the whole fits 63 characters, a label value too.
func AmendmentName(policy string) string {
	return v1alpha1.HashCut(policy, maxNameLength-len(amendmentSuffix)) + amendmentSuffix
}

// amendsValue is the AmendsLabel value of an amendment of policy: its name,
// hash-cut to a label value's 63 characters.
func amendsValue(policy string) string { return v1alpha1.HashCut(policy, maxNameLength) }
