// Package apiwrite is how the collector writes to the API server: which
// refusals a retry cannot mend, and the one way each writer of a policy's
// status applies its own fields.
package apiwrite

import (
	"context"
	"encoding/json"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// StatusManager is one writer of a policy's status: the field manager it
// applies under, and which of the status's fields are its own. A writer
// applies its own fields alone (server-side apply), so the API server keeps
// each field with its one owner, and a field that its owner no longer sets
// is removed.
type StatusManager struct {
	// Manager is the field manager's name.
	Manager string
	fields  func(st *v1alpha1.WorkloadNetworkPolicyStatus) (map[string]any, error)
}

var (
	// RenderManager is the render controller: the Rendered condition.
	RenderManager = StatusManager{Manager: "network-enforcer-render", fields: func(st *v1alpha1.WorkloadNetworkPolicyStatus) (map[string]any, error) {
		conds, err := conditions(st.Conditions, func(t string) bool { return t == v1alpha1.ConditionRendered })
		return map[string]any{"conditions": conds}, err
	}}
	// PromotionManager is the promotion controller: the proposal's observed
	// edges, handed on once before the status owner judges the policy. The
	// status owner's writes then take each of these fields over.
	PromotionManager = StatusManager{Manager: "network-enforcer-promotion", fields: func(st *v1alpha1.WorkloadNetworkPolicyStatus) (map[string]any, error) {
		return observedFields(&st.ObservedTraffic)
	}}
	// StatusOwnerManager is the status owner (the violation processor):
	// every field but the Rendered condition.
	StatusOwnerManager = StatusManager{Manager: "network-enforcer-status", fields: func(st *v1alpha1.WorkloadNetworkPolicyStatus) (map[string]any, error) {
		all := st.DeepCopy()
		all.ObservedTraffic = v1alpha1.ObservedTraffic{}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(all)
		if err != nil {
			return nil, err
		}
		if m["conditions"], err = conditions(st.Conditions, func(t string) bool { return t != v1alpha1.ConditionRendered }); err != nil {
			return nil, err
		}
		observed, err := observedFields(&st.ObservedTraffic)
		for k, v := range observed {
			m[k] = v
		}
		return m, err
	}}
)

// conditions are the conditions of the types that keep says, as apply
// writes them; an empty list owns none.
func conditions(all []metav1.Condition, keep func(string) bool) ([]any, error) {
	out := []any{}
	for _, c := range all {
		if !keep(c.Type) {
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// observedFields are the observed traffic's fields with each one set, an
// empty list or a zero count too: the promoter hands them on and the status
// owner then takes them over, and a field that the status owner left out
// would stay the promoter's, at the value handed on.
func observedFields(o *v1alpha1.ObservedTraffic) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"observed", "countedBatches"} {
		if _, ok := m[k]; !ok {
			m[k] = []any{}
		}
	}
	for _, k := range []string{"observedEdges", "omittedEdges"} {
		if _, ok := m[k]; !ok {
			m[k] = int64(0)
		}
	}
	return m, nil
}

// LegacyStatusManager is the field manager that wrote the policy status
// before each writer applied its own fields: a status update by this
// collector, named after its user agent.
const LegacyStatusManager = "network-enforcer"

// UpdatePolicyStatus is the one way the enforcer writes a policy's status,
// whoever writes it: mutate changes the writer's own fields on the newest
// copy, and the writer applies them (its own fields alone) with that copy's
// resourceVersion. A conflict (another writer was first, or the cache was
// behind) reads the policy again from the API server and applies mutate to
// that, so a writer that counts on what it wrote before never counts twice
// or loses a count.
func UpdatePolicyStatus(ctx context.Context, cached client.Reader, c client.Client, key types.NamespacedName,
	owner StatusManager, mutate func(*v1alpha1.WorkloadNetworkPolicy) bool) (*v1alpha1.WorkloadNetworkPolicy, error) {
	var written *v1alpha1.WorkloadNetworkPolicy
	reader := cached
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		p := &v1alpha1.WorkloadNetworkPolicy{}
		if err := reader.Get(ctx, key, p); err != nil {
			return err
		}
		reader = c // after a conflict, the API server's copy
		if err := dropLegacyStatusManager(ctx, c, p); err != nil {
			return err
		}
		if !mutate(p) {
			written = p
			return nil
		}
		fields, err := owner.fields(&p.Status)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: map[string]any{"status": fields}}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("WorkloadNetworkPolicy"))
		u.SetNamespace(p.Namespace)
		u.SetName(p.Name)
		u.SetResourceVersion(p.ResourceVersion)
		if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner(owner.Manager), client.ForceOwnership); err != nil {
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

// isLegacyStatusManager reports whether e is an earlier version's status
// update.
func isLegacyStatusManager(e metav1.ManagedFieldsEntry) bool {
	return e.Manager == LegacyStatusManager && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "status"
}

// StripManagedFieldsButLegacy is the shared cache's transform of policies: it
// drops their managed fields, as the cache does for every object, but an
// earlier version's status update entry, without its field set, so that a
// writer reading the cache knows that the policy is still to be taken over.
func StripManagedFieldsButLegacy(obj any) (any, error) {
	p, ok := obj.(*v1alpha1.WorkloadNetworkPolicy)
	if !ok {
		return cache.TransformStripManagedFields()(obj) // a deletion tombstone
	}
	var kept []metav1.ManagedFieldsEntry
	for _, e := range p.ManagedFields {
		if isLegacyStatusManager(e) {
			e.FieldsV1 = nil
			kept = append(kept, e)
		}
	}
	p.ManagedFields = kept
	return p, nil
}

// dropLegacyStatusManager removes the ownership that an earlier version's
// status updates left on p, once: those fields would otherwise stay owned
// after their writer stops setting them (cleared violations would stay).
// Each writer then owns what it applies next. p may be the cache's copy,
// which keeps only that entry of its managed fields: the patch is made from
// the API server's copy, which p then becomes.
func dropLegacyStatusManager(ctx context.Context, c client.Client, p *v1alpha1.WorkloadNetworkPolicy) error {
	if !slices.ContainsFunc(p.ManagedFields, isLegacyStatusManager) {
		return nil
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		return err
	}
	if !slices.ContainsFunc(p.ManagedFields, isLegacyStatusManager) {
		return nil // another writer took it over meanwhile
	}
	kept := slices.DeleteFunc(slices.Clone(p.ManagedFields), isLegacyStatusManager)
	// The resourceVersion makes the patch conditional: a write in between
	// is a conflict, and the caller reads the policy again.
	body, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/metadata/resourceVersion", "value": p.ResourceVersion},
		{"op": "replace", "path": "/metadata/managedFields", "value": kept},
	})
	if err != nil {
		return err
	}
	return c.Patch(ctx, p, client.RawPatch(types.JSONPatchType, body))
}

// IsRefused reports whether the API server refused a write for what it holds
// (too large, invalid, malformed), so that the same write will fail again
// until the object or what is written changes. A Forbidden answer is not one:
// it is about who writes (RBAC), which an operator may fix, so it is retried.
func IsRefused(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsBadRequest(err)
}
