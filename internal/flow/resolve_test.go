package flow

import (
	"slices"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// resolver is a workload.Resolver of fixed answers, which records what it
// was asked: a test holds both the answer and the way to it.
type resolver struct {
	pods      map[string]workload.Ref        // by "<namespace>/<pod>"
	podReason map[string]workload.Unresolved // by "<namespace>/<pod>"
	ips       map[string]workload.Ref        // by address; at must be ipAt
	ipReason  map[string]workload.Unresolved
	ipAt      time.Time
	workloads map[workload.Ref]workload.Ref // named workload -> the one it is attributed to
	asked     []string
}

func (r *resolver) ResolvePod(namespace, name string) (workload.Ref, workload.Unresolved) {
	r.asked = append(r.asked, "pod "+namespace+"/"+name)
	if w, ok := r.pods[namespace+"/"+name]; ok {
		return w, ""
	}
	if reason, ok := r.podReason[namespace+"/"+name]; ok {
		return workload.Ref{}, reason
	}
	return workload.Ref{}, workload.UnresolvedNoPod
}

func (r *resolver) ResolveIP(ip string, at time.Time) (workload.Ref, workload.Unresolved) {
	r.asked = append(r.asked, "ip "+ip)
	if !at.Equal(r.ipAt) {
		return workload.Ref{}, workload.UnresolvedTooOld
	}
	if w, ok := r.ips[ip]; ok {
		return w, ""
	}
	if reason, ok := r.ipReason[ip]; ok {
		return workload.Ref{}, reason
	}
	return workload.Ref{}, workload.UnresolvedNoPod
}

func (r *resolver) ResolveWorkload(w workload.Ref) (workload.Ref, bool) {
	r.asked = append(r.asked, "workload "+w.String())
	owner, ok := r.workloads[w]
	return owner, ok
}

// TestResolveEndpoint: which workload a flow's end teaches, and how it is
// found. An end that the data plane names is attributed by that name only:
// its pod, else (the pod gone) the workload that the data plane names, else
// nothing; it is never looked up by its address, which another pod may hold
// by now. An end known by its address alone is the pod that held it at the
// flow's time. An end outside the cluster is what the data plane says.
func TestResolveEndpoint(t *testing.T) {
	at := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	ref := func(ns string, kind v1alpha1.WorkloadKind, name string) workload.Ref {
		return workload.Ref{Namespace: ns, Kind: kind, Name: name}
	}
	client := ref("a", v1alpha1.WorkloadKindDeployment, "client")
	other := ref("c", v1alpha1.WorkloadKindDeployment, "other")
	batch := ref("store", v1alpha1.WorkloadKindCronJob, "batch")
	r := &resolver{
		pods:      map[string]workload.Ref{"a/client-abc123-xyz": client},
		podReason: map[string]workload.Unresolved{"a/debug": workload.UnresolvedBarePod},
		ips:       map[string]workload.Ref{"10.42.0.50": other},
		ipReason:  map[string]workload.Unresolved{"10.42.0.60": workload.UnresolvedAmbiguousAddress},
		ipAt:      at,
		workloads: map[workload.Ref]workload.Ref{
			client: client,
			ref("store", v1alpha1.WorkloadKindJob, "batch-28391760"): batch,
		},
	}
	for _, tc := range []struct {
		name   string
		end    Endpoint
		at     time.Time
		want   workload.Ref
		reason workload.Unresolved
		asked  []string
	}{
		{name: "a known pod, by its name", end: Endpoint{Address: "10.42.0.50", Namespace: "a", Pod: "client-abc123-xyz"},
			at: at, want: client, asked: []string{"pod a/client-abc123-xyz"}},
		{name: "a gone pod whose workload the data plane names (Hubble's local shape), never its address's holder",
			end: Endpoint{Address: "10.42.0.50", Namespace: "a", Pod: "client-gone-xyz", WorkloadKind: "Deployment", WorkloadName: "client"},
			at:  at, want: client, asked: []string{"pod a/client-gone-xyz", "workload a/Deployment/client"}},
		{name: "a gone Job's pod, to its CronJob",
			end: Endpoint{Namespace: "store", Pod: "batch-28391760-k8x2q", WorkloadKind: "Job", WorkloadName: "batch-28391760"},
			at:  at, want: batch, asked: []string{"pod store/batch-28391760-k8x2q", "workload store/Job/batch-28391760"}},
		{name: "a gone pod named alone (Hubble's remote shape): no pod, not the address's holder",
			end: Endpoint{Address: "10.42.0.50", Namespace: "a", Pod: "client-gone-xyz"},
			at:  at, reason: workload.UnresolvedNoPod, asked: []string{"pod a/client-gone-xyz"}},
		{name: "a gone pod whose named workload the cache does not know",
			end: Endpoint{Address: "10.42.0.50", Namespace: "a", Pod: "x-1", WorkloadKind: "Deployment", WorkloadName: "x"},
			at:  at, reason: workload.UnresolvedNoPod, asked: []string{"pod a/x-1", "workload a/Deployment/x"}},
		{name: "a named workload of a kind no proposal targets is not asked for",
			end: Endpoint{Namespace: "a", Pod: "x-1", WorkloadKind: "ReplicaSet", WorkloadName: "x"},
			at:  at, reason: workload.UnresolvedNoPod, asked: []string{"pod a/x-1"}},
		{name: "a bare pod keeps its reason", end: Endpoint{Namespace: "a", Pod: "debug", WorkloadKind: "Deployment", WorkloadName: "client"},
			at: at, reason: workload.UnresolvedBarePod, asked: []string{"pod a/debug"}},
		{name: "an address alone (a ztunnel source), by its holder at the flow's time",
			end: Endpoint{Address: "10.42.0.50"}, at: at, want: other, asked: []string{"ip 10.42.0.50"}},
		{name: "an address that two pods held then", end: Endpoint{Address: "10.42.0.60"},
			at: at, reason: workload.UnresolvedAmbiguousAddress, asked: []string{"ip 10.42.0.60"}},
		{name: "an address older than the cache remembers", end: Endpoint{Address: "10.42.0.50"},
			at: at.Add(-time.Hour), reason: workload.UnresolvedTooOld, asked: []string{"ip 10.42.0.50"}},
		{name: "a name that is no address (a Goldmane network set) and no pod", end: Endpoint{Address: "pub"},
			at: at, reason: workload.UnresolvedNoPod},
		{name: "a namespace without a pod name is looked up by its address",
			end: Endpoint{Address: "10.42.0.50", Namespace: "a"}, at: at, want: other, asked: []string{"ip 10.42.0.50"}},
		{name: "the world", end: Endpoint{Address: "203.0.113.7", External: ExternalWorld}, at: at, reason: workload.UnresolvedExternal},
		{name: "a node", end: Endpoint{Address: "172.18.0.3", External: ExternalHost}, at: at, reason: workload.UnresolvedHost},
		{name: "another node", end: Endpoint{Address: "172.18.0.4", External: ExternalRemoteNode}, at: at, reason: workload.UnresolvedRemoteNode},
		{name: "the API server", end: Endpoint{Address: "172.18.0.2", External: ExternalAPIServer}, at: at, reason: workload.UnresolvedAPIServer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.asked = nil
			w, reason := ResolveEndpoint(r, &tc.end, tc.at)
			if w != tc.want || reason != tc.reason {
				t.Errorf("ResolveEndpoint = %v, %q; want %v, %q", w, reason, tc.want, tc.reason)
			}
			if !slices.Equal(r.asked, tc.asked) {
				t.Errorf("asked %q, want %q", r.asked, tc.asked)
			}
		})
	}
}
