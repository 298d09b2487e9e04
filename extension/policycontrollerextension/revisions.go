package policycontrollerextension

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/apiwrite"
)

// ChangeCauseGenerationAnnotation is the annotation of a
// WorkloadNetworkPolicy that holds the metadata.generation that its
// change-cause annotation (v1alpha1.ChangeCauseAnnotation) speaks for. The enforcer sets both in the
// same write as the spec that it changes (a promotion, an amendment, a
// rollback), with the generation that the write makes; the revision recorder
// takes the cause for that generation alone. A spec changed by hand makes a
// newer generation, which the pair does not speak for: it is recorded as
// "edited", whatever the change-cause annotation still says.
const ChangeCauseGenerationAnnotation = "networkenforcer.kubewarden.io/change-cause-generation"

// The causes of a policy's revisions, as its revisions' and its own
// change-cause annotations say them.
const causeEdited = "edited"

func causePromoted(proposal string) string   { return "promoted from proposal " + proposal }
func causeAmendment(amendment string) string { return "amendment " + amendment }
func causeRollback(revision int64) string    { return fmt.Sprintf("rollback to revision %d", revision) }

// Kubernetes' limits on what the revisions are named and labelled with.
const (
	maxObjectName = 253
	maxLabelValue = 63
)

// revisionLabel is the value of a policy's revisions' PolicyRevisionLabel:
// the policy's name, hash-cut to a label value's 63 characters.
func revisionLabel(policy string) string { return v1alpha1.HashCut(policy, maxLabelValue) }

// revisionName is the name of the policy's revision n: <policy>-<n>, the
// policy's name hash-cut to leave room for the number within 253
// characters.
func revisionName(policy string, n int64) string {
	suffix := "-" + strconv.FormatInt(n, 10)
	return v1alpha1.HashCut(policy, maxObjectName-len(suffix)) + suffix
}

// revisions keeps the history of each WorkloadNetworkPolicy's spec, as
// apps/v1 ControllerRevisions in the policy's namespace, each owned by the
// policy (a controller owner reference, so that the garbage collector
// deletes them with it), labelled with PolicyRevisionLabel, numbered from 1
// in .revision, with the policy's whole spec as JSON in .data and the cause
// in the change-cause annotation. The newest limit are kept.
//
// Revisions are read from the API server, listed by their label in the
// policy's namespace, when a policy's spec or annotations change: the
// enforcer's store of ControllerRevisions (the workloads' revisions) keeps
// no data, and a copy that lagged behind a write would number a revision
// twice.
type revisions struct {
	logger *zap.Logger
	client client.Client
	limit  int
}

// revision is one of a policy's ControllerRevisions, with its spec decoded.
type revision struct {
	obj  *appsv1.ControllerRevision
	spec v1alpha1.WorkloadNetworkPolicySpec
}

func (r revision) cause() string { return r.obj.Annotations[v1alpha1.ChangeCauseAnnotation] }

// list returns the policy's revisions, oldest first, and the revisions that
// carry its label but another owner: those of an earlier policy of the same
// name, which the garbage collector has yet to delete.
func (s *revisions) list(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy) (own []revision, stale []*appsv1.ControllerRevision, err error) {
	var l appsv1.ControllerRevisionList
	if err := s.client.List(ctx, &l, client.InNamespace(p.Namespace),
		client.MatchingLabels{v1alpha1.PolicyRevisionLabel: revisionLabel(p.Name)}); err != nil {
		return nil, nil, err
	}
	for i := range l.Items {
		cr := &l.Items[i]
		owner := metav1.GetControllerOf(cr)
		if owner == nil || owner.Kind != "WorkloadNetworkPolicy" || owner.Name != p.Name {
			continue // not a policy's revision, or another policy's whose name cuts alike
		}
		if owner.UID != p.UID {
			stale = append(stale, cr)
			continue
		}
		var spec v1alpha1.WorkloadNetworkPolicySpec
		if err := json.Unmarshal(cr.Data.Raw, &spec); err != nil {
			s.logger.Warn("A policy's revision does not hold a spec; it is left out",
				zap.String("namespace", cr.Namespace), zap.String("name", cr.Name), zap.Error(err))
			continue
		}
		own = append(own, revision{obj: cr, spec: spec})
	}
	slices.SortFunc(own, func(a, b revision) int { return cmp.Compare(a.obj.Revision, b.obj.Revision) })
	return own, stale, nil
}

// sameSpec reports whether two specs are the same, as the API server would
// hold them: their JSON is, or they are semantically equal.
func sameSpec(a, b *v1alpha1.WorkloadNetworkPolicySpec) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA == nil && errB == nil && bytes.Equal(ja, jb) {
		return true
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

// causeOf is the cause of the policy's current generation: what the
// change-cause annotation says when its generation annotation names that
// generation; else the promotion of a policy that carries its proposal's
// name and was never changed (promoted before revisions were kept); else a
// change by hand.
func causeOf(p *v1alpha1.WorkloadNetworkPolicy) string {
	cause := p.Annotations[v1alpha1.ChangeCauseAnnotation]
	if cause != "" && p.Annotations[ChangeCauseGenerationAnnotation] == strconv.FormatInt(p.Generation, 10) {
		return cause
	}
	if from := p.Labels[v1alpha1.PromotedFromLabel]; from != "" && p.Generation == 1 {
		return causePromoted(from)
	}
	return causeEdited
}

// setCause sets on p, a policy to be created, the cause of its first
// generation.
func setCause(p *v1alpha1.WorkloadNetworkPolicy, cause string) {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	maps.Copy(p.Annotations, causeAnnotations(p, cause))
}

// causeAnnotations are the annotations that give cause to the generation
// that a write of p's changed spec makes: the one after p's (a custom
// resource's generation grows by one with each change of its spec). The
// write must be made on condition that p's generation is still the one
// read (patchPolicy), so that no other change comes between.
func causeAnnotations(p *v1alpha1.WorkloadNetworkPolicy, cause string) map[string]string {
	return map[string]string{
		v1alpha1.ChangeCauseAnnotation:  cause,
		ChangeCauseGenerationAnnotation: strconv.FormatInt(p.Generation+1, 10),
	}
}

// record makes the policy's spec its newest revision, when it is not yet,
// and has the policy's annotations name it: RevisionAnnotation its number,
// ChangeCauseAnnotation its cause (ChangeCauseGenerationAnnotation the
// generation). p is the API server's copy, and is updated with what it
// writes; record returns the current revision. Then the oldest revisions
// beyond the limit go.
//
// The annotations are written first, on condition that p's generation is
// still the one read: only then is its spec recorded, so that a copy read
// before another writer changed the spec never becomes the newest revision
// (record returns errPolicyChanged then: the change brings its own round).
// Two recorders that read the same generation record the same spec under
// the same name; the second finds it there.
func (s *revisions) record(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy) (revision, error) {
	own, stale, err := s.list(ctx, p)
	if err != nil {
		return revision{}, err
	}
	// An earlier policy's revisions would take the names of this one's.
	for _, cr := range stale {
		if err := s.client.Delete(ctx, cr, client.Preconditions{UID: ptr.To(cr.UID)}); err != nil && !apierrors.IsNotFound(err) {
			return revision{}, err
		}
	}
	var current revision
	// A change of p's spec since it was read fails annotate with
	// errPolicyChanged, and records nothing.
	if n := len(own); n > 0 && sameSpec(&own[n-1].spec, &p.Spec) {
		current = own[n-1]
		if err := s.annotate(ctx, p, current.obj.Revision, current.cause()); err != nil {
			return revision{}, err
		}
	} else {
		next := int64(1)
		if n > 0 {
			next = own[n-1].obj.Revision + 1
		}
		cause := causeOf(p)
		if err := s.annotate(ctx, p, next, cause); err != nil {
			return revision{}, err
		}
		if current, err = s.create(ctx, p, next, cause); err != nil {
			return revision{}, err
		}
		own = append(own, current)
		s.logger.Info("Recorded a policy's revision", zap.String("namespace", p.Namespace), zap.String("name", p.Name),
			zap.Int64("revision", next), zap.String("cause", cause))
	}
	return current, s.prune(ctx, own)
}

// annotate has the policy's annotations name its current revision n and its
// cause, on condition that p's spec has not changed since it was read
// (patchPolicy). The patch is sent when nothing changes too, for that check.
func (s *revisions) annotate(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy, n int64, cause string) error {
	return patchPolicy(ctx, s.client, p, nil, map[string]string{
		v1alpha1.RevisionAnnotation:     strconv.FormatInt(n, 10),
		v1alpha1.ChangeCauseAnnotation:  cause,
		ChangeCauseGenerationAnnotation: strconv.FormatInt(p.Generation, 10),
	})
}

// create writes revision n of policy p, with p's spec and cause.
func (s *revisions) create(ctx context.Context, p *v1alpha1.WorkloadNetworkPolicy, n int64, cause string) (revision, error) {
	data, err := json.Marshal(&p.Spec)
	if err != nil {
		return revision{}, err
	}
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   p.Namespace,
			Name:        revisionName(p.Name, n),
			Labels:      map[string]string{v1alpha1.PolicyRevisionLabel: revisionLabel(p.Name)},
			Annotations: map[string]string{v1alpha1.ChangeCauseAnnotation: cause},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "WorkloadNetworkPolicy", Name: p.Name, UID: p.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Revision: n,
		Data:     runtime.RawExtension{Raw: data},
	}
	if err := s.client.Create(ctx, cr); err != nil && !apierrors.IsAlreadyExists(err) {
		return revision{}, err
	}
	// Already there: another recorder read the same copy of p, and wrote the
	// same spec under this name.
	return revision{obj: cr, spec: *p.Spec.DeepCopy()}, nil
}

// prune deletes the oldest of own (oldest first) beyond the limit; the
// newest, which the limit always keeps, may be one that another recorder
// created (its UID unknown here).
func (s *revisions) prune(ctx context.Context, own []revision) error {
	for _, old := range own[:max(0, len(own)-s.limit)] {
		if err := s.client.Delete(ctx, old.obj, client.Preconditions{UID: ptr.To(old.obj.UID)}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		s.logger.Debug("Deleted a policy's revision beyond the history limit",
			zap.String("namespace", old.obj.Namespace), zap.String("name", old.obj.Name), zap.Int64("revision", old.obj.Revision))
	}
	return nil
}

// errPolicyChanged: the policy's spec (or the annotation that a write
// counted on) changed since it was read; the write was not made. The change
// asks for a round of its own.
var errPolicyChanged = errors.New("the policy changed since it was read")

// jsonPatchOp is one operation of a JSON patch (RFC 6902).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// annotationPath is the JSON pointer of the annotation key.
func annotationPath(key string) string {
	return "/metadata/annotations/" + strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// patchPolicy writes ops, the annotations of set and the removal of those
// of remove to policy p with one JSON patch, on condition that p's
// generation (its spec) is still the one read and each annotation of
// remove still has the value read: writes of the status or of other
// metadata in the meantime do not stand in the way, as a resourceVersion
// would. p is updated with the result. A condition that does not hold
// makes it errPolicyChanged, and nothing is written.
func patchPolicy(ctx context.Context, c client.Client, p *v1alpha1.WorkloadNetworkPolicy, ops []jsonPatchOp,
	set map[string]string, remove ...string) error {
	read := p.DeepCopy()
	patch := []jsonPatchOp{{Op: "test", Path: "/metadata/generation", Value: p.Generation}}
	for _, key := range remove {
		if v, ok := p.Annotations[key]; ok {
			patch = append(patch, jsonPatchOp{Op: "test", Path: annotationPath(key), Value: v},
				jsonPatchOp{Op: "remove", Path: annotationPath(key)})
		}
	}
	patch = append(patch, ops...)
	if len(set) > 0 {
		if p.Annotations == nil {
			// The whole map, which no one may have added meanwhile.
			patch = append(patch, jsonPatchOp{Op: "test", Path: "/metadata/resourceVersion", Value: p.ResourceVersion},
				jsonPatchOp{Op: "add", Path: "/metadata/annotations", Value: set})
		} else {
			keys := slices.Sorted(maps.Keys(set))
			for _, key := range keys {
				patch = append(patch, jsonPatchOp{Op: "add", Path: annotationPath(key), Value: set[key]})
			}
		}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	err = c.Patch(ctx, p, client.RawPatch(types.JSONPatchType, body))
	if err == nil || !apiwrite.IsRefused(err) {
		return err
	}
	// A failed test is refused as invalid, as a change that the API server
	// does not take is: the policy as it is now tells them apart.
	var now v1alpha1.WorkloadNetworkPolicy
	if gerr := c.Get(ctx, client.ObjectKeyFromObject(read), &now); gerr != nil {
		return err
	}
	if now.Generation != read.Generation || (read.Annotations == nil && now.ResourceVersion != read.ResourceVersion) {
		return errPolicyChanged
	}
	for _, key := range remove {
		if now.Annotations[key] != read.Annotations[key] {
			return errPolicyChanged
		}
	}
	return err
}
