package termwriter

import (
	"context"
	"encoding/json"
	"errors"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/internal/apiwrite"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// errTermEnded refuses a write of a term of leadership that is over: the next
// leader owns the writes now.
var errTermEnded = errors.New("this term of leadership has ended")

// termWriter is what every writer's client has: the API client, the event
// recorder and the term whose writes it makes.
type termWriter struct {
	term     context.Context
	client   client.Client
	reader   client.Reader
	recorder record.EventRecorder
}

func (w *termWriter) check() error {
	if w.term.Err() != nil {
		return errTermEnded
	}
	return nil
}

// proposalWriter implements ProposalWriter.
type proposalWriter struct{ termWriter }

func (w *proposalWriter) Get(ctx context.Context, key types.NamespacedName, p *v1alpha1.WorkloadNetworkPolicyProposal) error {
	return w.client.Get(ctx, key, p)
}

func (w *proposalWriter) Create(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicyProposal) error {
	if err := w.check(); err != nil {
		return err
	}
	return w.client.Create(ctx, p)
}

func (w *proposalWriter) Update(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicyProposal) error {
	if err := w.check(); err != nil {
		return err
	}
	return w.client.Update(ctx, p)
}

func (w *proposalWriter) UpdateStatus(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicyProposal) error {
	if err := w.check(); err != nil {
		return err
	}
	return w.client.Status().Update(ctx, p)
}

func (w *proposalWriter) Event(p *v1alpha1.WorkloadNetworkPolicyProposal, eventType, reason, message string) {
	w.recorder.Event(p, eventType, reason, message)
}

// policyStatusWriter implements PolicyStatusWriter.
type policyStatusWriter struct{ termWriter }

func (w *policyStatusWriter) UpdateStatus(ctx context.Context, key types.NamespacedName,
	mutate func(*v1alpha1.WorkloadNetworkPolicy) bool) (*v1alpha1.WorkloadNetworkPolicy, error) {
	if err := w.check(); err != nil {
		return nil, err
	}
	return apiwrite.UpdatePolicyStatus(ctx, w.reader, w.client, key, apiwrite.StatusOwnerManager, mutate)
}

func (w *policyStatusWriter) RemoveAnnotations(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy, keys []string) error {
	if err := w.check(); err != nil {
		return err
	}
	annotations := map[string]any{}
	for _, k := range keys {
		annotations[k] = nil
	}
	// A merge patch of the annotation map deletes exactly these keys.
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	return w.client.Patch(ctx, p, client.RawPatch(types.MergePatchType, body))
}

func (w *policyStatusWriter) Event(p *v1alpha1.WorkloadNetworkPolicy, eventType, reason, message string) {
	w.recorder.Event(p, eventType, reason, message)
}
