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
// <policy>-amendment, cut and hashed as ProposalName cuts a name to 63
// characters, so that the amendment's name fits a label value too.
func AmendmentName(policy string) string {
	if len(policy)+len(amendmentSuffix) <= maxNameLength {
		return policy + amendmentSuffix
	}
	sum := sha256.Sum256([]byte(policy))
	hash := hex.EncodeToString(sum[:4])
	cut := strings.TrimRight(policy[:maxNameLength-len(amendmentSuffix)-len(hash)-1], "-.")
	return cut + "-" + hash + amendmentSuffix
}

// amendsValue is the AmendsLabel value of an amendment of policy: its name,
// or when that does not fit a label value, the name cut and hashed.
func amendsValue(policy string) string {
	if len(policy) <= maxNameLength {
		return policy
	}
	sum := sha256.Sum256([]byte(policy))
	hash := hex.EncodeToString(sum[:4])
	return strings.TrimRight(policy[:maxNameLength-len(hash)-1], "-.") + "-" + hash
}
