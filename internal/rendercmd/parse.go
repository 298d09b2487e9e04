package rendercmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// Object is one object of the input: a proposal or a policy.
type Object struct {
	Proposal *v1alpha1.WorkloadNetworkPolicyProposal
	Policy   *v1alpha1.WorkloadNetworkPolicy
}

// maxInput bounds what Parse reads: kubectl's List of thousands of proposals
// with their observed edges is a few megabytes.
const maxInput = 64 << 20

// Parse reads the proposals and policies of r: YAML or JSON, one object, a
// List (kind List, as kubectl prints several, or the kinds' own lists) or
// several YAML documents. Anything else is an error that says where: an
// object of another kind, an unknown field (a version of the CRDs that this
// binary does not know; status aside, which rendering does not read), a
// proposal's status.amendment that is not one (--diff reads it), an object
// without a namespace or a name, and input with no object at all.
func Parse(r io.Reader) ([]Object, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxInput {
		return nil, fmt.Errorf("the input is larger than %d MiB", maxInput>>20)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []Object
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if isNull(raw) {
			continue // an empty document
		}
		objs, err := parseDocument(raw, true)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		out = append(out, objs...)
	}
	if len(out) == 0 {
		return nil, errors.New("the input holds no WorkloadNetworkPolicyProposal or WorkloadNetworkPolicy")
	}
	return out, nil
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// typeMeta is what says what a document is.
type typeMeta struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

// The lists that a document may be: kubectl's, and the kinds' own.
var listKinds = map[string]bool{"List": true, "WorkloadNetworkPolicyProposalList": true, "WorkloadNetworkPolicyList": true}

func parseDocument(raw json.RawMessage, listAllowed bool) ([]Object, error) {
	var tm typeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("not an object: %w", err)
	}
	if listKinds[tm.Kind] {
		if !listAllowed {
			return nil, fmt.Errorf("a %s within a list", tm.Kind)
		}
		var out []Object
		for i, item := range tm.Items {
			objs, err := parseDocument(item, false)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	if tm.APIVersion != v1alpha1.GroupVersion.String() ||
		(tm.Kind != "WorkloadNetworkPolicyProposal" && tm.Kind != "WorkloadNetworkPolicy") {
		return nil, fmt.Errorf("apiVersion %q kind %q: want a WorkloadNetworkPolicyProposal or a WorkloadNetworkPolicy of %s",
			tm.APIVersion, tm.Kind, v1alpha1.GroupVersion)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	status := fields["status"]
	delete(fields, "status")
	body, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	var o Object
	var target any
	if tm.Kind == "WorkloadNetworkPolicyProposal" {
		o.Proposal = &v1alpha1.WorkloadNetworkPolicyProposal{}
		target = o.Proposal
	} else {
		o.Policy = &v1alpha1.WorkloadNetworkPolicy{}
		target = o.Policy
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(target); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	var namespace, name string
	if o.Proposal != nil {
		a, err := amendmentStatus(status)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tm.Kind, err)
		}
		o.Proposal.Status.Amendment = a
		namespace, name = o.Proposal.Namespace, o.Proposal.Name
	} else {
		namespace, name = o.Policy.Namespace, o.Policy.Name
	}
	if namespace == "" || name == "" {
		return nil, fmt.Errorf("%s %q without metadata.namespace or metadata.name", tm.Kind, namespace+"/"+name)
	}
	return []Object{o}, nil
}

// amendmentStatus is a proposal's status.amendment, which --diff reads (what
// each added edge was made by, the rules removed); nil when there is none.
// The rest of the status is left unread, whatever its fields.
func amendmentStatus(status json.RawMessage) (*v1alpha1.AmendmentStatus, error) {
	var st struct {
		Amendment json.RawMessage `json:"amendment"`
	}
	// A status that is not an object is left unread, as the rest of it is.
	_ = json.Unmarshal(status, &st)
	if isNull(st.Amendment) {
		return nil, nil
	}
	var a v1alpha1.AmendmentStatus
	if err := json.Unmarshal(st.Amendment, &a); err != nil {
		return nil, fmt.Errorf("status.amendment: %w", err)
	}
	return &a, nil
}
