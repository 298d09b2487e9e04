package enforcerextension

import (
	"context"
	"encoding/json"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	return updatePolicyStatus(ctx, w.reader, w.client, key, mutate)
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

// updatePolicyStatus is the one way the enforcer writes a policy's status,
// whoever writes it: each writer changes only its own fields in mutate, on the
// newest copy, and the write carries that copy's resourceVersion. A conflict
// (another writer was first, or the cache was behind) reads the policy again
// from the API server and applies mutate to that, so no writer's fields are
// lost to another's stale copy.
func updatePolicyStatus(ctx context.Context, cached client.Reader, c client.Client, key types.NamespacedName,
	mutate func(*v1alpha1.WorkloadNetworkPolicy) bool) (*v1alpha1.WorkloadNetworkPolicy, error) {
	var written *v1alpha1.WorkloadNetworkPolicy
	reader := cached
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		p := &v1alpha1.WorkloadNetworkPolicy{}
		if err := reader.Get(ctx, key, p); err != nil {
			return err
		}
		reader = c // after a conflict, the API server's copy
		if !mutate(p) {
			written = p
			return nil
		}
		if err := c.Status().Update(ctx, p); err != nil {
			return err
		}
		written = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	return written, nil
}

// IsRefused reports whether the API server refused a write for what it holds
// (too large, invalid, malformed), so that the same write will fail again
// until the object or what is written changes. A Forbidden answer is not one:
// it is about who writes (RBAC), which an operator may fix, so it is retried.
func IsRefused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsBadRequest(err)
}
