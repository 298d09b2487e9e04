package enforcerextension

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/render"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// The enforcer extension offers the other components small interfaces, one per
// need, and each component asks Find for the union of those it uses: the flow
// path resolves (workload.Resolver, workload.Labeler), finds the revision
// that a pod ran (workload.Revisions) and reads policies (PolicyReader), the
// flow sources follow leadership (Leadership), and the writers run their
// controllers on each term (ProposalWriting, PolicyStatusSyncing). A
// component's test fakes only what it asks for.

// PolicyReader reads proposals, policies and workloads from the shared cache,
// on every replica, without a request to the API server.
type PolicyReader interface {
	// HasPolicy reports whether a WorkloadNetworkPolicy targets the workload in
	// that direction.
	HasPolicy(w workload.Ref, direction v1alpha1.Direction) bool
	// Policies returns the WorkloadNetworkPolicies that target the workload in
	// that direction, straight from the cache: callers must not change them.
	Policies(w workload.Ref, direction v1alpha1.Direction) []v1alpha1.WorkloadNetworkPolicy
	// Policy returns the WorkloadNetworkPolicy key from the shared cache (a
	// copy), or false when there is none.
	Policy(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicy, bool)
	// Proposal returns the WorkloadNetworkPolicyProposal key from the shared
	// cache (a copy), or false when there is none: a promoted policy's status
	// carries on from its proposal's observed edges.
	Proposal(key types.NamespacedName) (*v1alpha1.WorkloadNetworkPolicyProposal, bool)
}

// Placement says where workloads run: a gap that the data plane reports for a
// node concerns the learning of the workloads with pods there.
type Placement interface {
	// WorkloadsOn returns the workloads with a running pod on node (on any
	// node for ""), each once.
	WorkloadsOn(node string) []workload.Ref
}

// Lister lists proposals and policies from the shared cache, as copies, on
// every replica: the review page's source.
type Lister interface {
	// ListProposals returns the proposals in namespace ("" for all).
	ListProposals(namespace string) ([]v1alpha1.WorkloadNetworkPolicyProposal, error)
	// ListPolicies returns the policies in namespace ("" for all).
	ListPolicies(namespace string) ([]v1alpha1.WorkloadNetworkPolicy, error)
}

// Cluster is the shared cache and the API client, for the controllers that
// run beside the enforcer's writers (promotion and render, in the policy
// controller extension): they read and watch through the cache, write with
// the client, record Events, and count their reconciles in the enforcer's
// metric.
type Cluster interface {
	// Cache is the shared controller-runtime cache: proposals, policies,
	// the native objects and the API server's and nodes' addresses.
	Cache() cache.Cache
	// Client writes to the API server.
	Client() client.Client
	// Recorder records Kubernetes Events.
	Recorder() record.EventRecorder
	// Served says which optional native kinds the cluster served at start.
	Served() render.ServedKinds
	// Reconciled counts a reconcile of a controller, by result
	// (network_enforcer_controller_reconciles).
	Reconciled(ctx context.Context, controller string, err error)
}

// Selectors gives a workload's pod selector, which a proposal's spec names.
type Selectors interface {
	// Selector returns the workload's current pod selector, or false when the
	// workload is gone or selects nothing that a policy could name.
	Selector(ctx context.Context, w workload.Ref) (*metav1.LabelSelector, types.UID, bool)
}

// Membership shares keys (the Cilium nodes that the hubble receiver reads
// directly) among the replicas that hold a membership Lease of their own: each
// key has one owner among the live members, chosen by rendezvous hashing, so a
// member that comes or goes moves only its own share. Membership starts with
// the first OnMembersChanged.
type Membership interface {
	// Owns reports whether this replica reads key now.
	Owns(key string) bool
	// OnMembersChanged registers fn, called in its own goroutine after the
	// set of live members changes (a member's Lease appears, expires or is
	// deleted): the caller asks Owns again for each of its keys.
	OnMembersChanged(fn func())
	// Checkpoint records that this replica handed every flow of key up to t
	// on; its membership Lease publishes the newest at its next renewal.
	Checkpoint(key string, t time.Time)
	// Take makes this replica key's reader before its first read, as the
	// flow sources' checkpoint store (flowsource.Checkpoints) does. It
	// waits until key's newest checkpoint is final: its writer released key
	// or is no longer a live member; or it is this replica's or a deleted
	// member's, or there is none, and every other live member has renewed
	// since this replica joined (one may hold a claim on its way). It then
	// claims key where every flow of it is counted (that checkpoint when its
	// writer handed everything up to it on; for a writer that was killed,
	// how far a leader took key's records, as Counted published; else
	// start), and returns that time once this replica's Lease holds the
	// claim (or ctx ends), so that a replica that joins meanwhile finds the
	// claim before the first read.
	Take(ctx context.Context, key string, start time.Time) (countedUpTo time.Time, ok bool, err error)
	// Release publishes at once that this replica no longer reads key, with
	// its checkpoint: the key's new owner need not wait for the next renewal.
	Release(key string)
	// Forget drops what this replica published of key, whose source is gone
	// (the Peer service removed the node): checkpoints do not outlive their
	// sources, and every renewal rewrites them.
	Forget(key string)
}

// Counting is what the leader's receiver of the members' records tells the
// membership: how far it took each key's records, so that the next owner of a
// key whose reader was killed does not count again what that reader sent.
type Counting interface {
	// Counted records that this replica, leading, took every record of key's
	// flows up to t; its membership Lease publishes the newest.
	Counted(key string, t time.Time)
}

// WrittenMarks is what the leader's writers (of the proposals, and of the
// policies' status) tell the membership: for each sender (a reader's
// process), the last of its batches up to which every record is written. The
// leader's membership Lease publishes the lowest of them, and each reader
// keeps the later batches for a next leader.
type WrittenMarks interface {
	// PublishWritten sets where writer's marks are read (nil: nowhere).
	PublishWritten(writer string, marks func() map[string]int64)
}

// LeaderLocator finds the leading replica, for the readers that send it what
// they learned: from the leader Lease's holder and the cached pods, without a
// Service or a write to a Pod.
type LeaderLocator interface {
	// LeaderAddress returns the leading replica's pod IP and its identity in
	// the leader Lease (new with each start of its process), or false when no
	// leader is known or its pod has no IP yet.
	LeaderAddress() (addr, identity string, ok bool)
	// WrittenThrough returns the leader's identity and the last batch of
	// sender up to which it wrote every record (WrittenMarks), as it last
	// published it; false when it published nothing of sender.
	WrittenThrough(sender string) (leader string, seq int64, ok bool)
}
