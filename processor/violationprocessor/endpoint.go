package violationprocessor

import (
	"time"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/netpolmatch"
	"github.com/kubewarden/network-enforcer/internal/observed"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// KindPod is the kind of a violation end that is a pod without a workload.
const KindPod = observed.KindPod

// target is the end that the policy targets, as a violation record names it.
func target(ref workload.Ref, end *flow.Endpoint) v1alpha1.ViolationEndpoint {
	return v1alpha1.ViolationEndpoint{Class: v1alpha1.PeerClassWorkload, Namespace: ref.Namespace, Kind: string(ref.Kind),
		Name: ref.Name, Identity: end.Identity}
}

// named is v, the violation record's end at the other side of the flow, with
// what the policy's observed edges name it by (k): its class and, for a peer
// that is not a workload, its address, DNS name and entity. The data plane's
// identity of an end that is neither a workload nor a pod (Cilium's reserved
// numbers) tells a reader nothing more, and goes.
func named(v v1alpha1.ViolationEndpoint, k *observed.Key) v1alpha1.ViolationEndpoint {
	v.Class = k.Class
	if k.Class == v1alpha1.PeerClassWorkload {
		return v
	}
	v.Address, v.DNSName, v.Entity = k.Address, k.DNSName, netpolmatch.EntityOf(k.Class)
	if v.Kind == "" {
		v.Identity = ""
	}
	return v
}

// other resolves the end at the other side of the flow: as a violation record
// names it (a workload, or a pod without one, by its name; named adds the
// rest), and as the policy's observed edges list it (the peer part of the
// key), which the spec judges it by (observed.MatchKey).
func other(e workload.Resolver, end *flow.Endpoint, at time.Time) (v1alpha1.ViolationEndpoint, observed.Key) {
	v := v1alpha1.ViolationEndpoint{Identity: end.Identity}
	w, reason := flow.ResolveEndpoint(e, end, at)
	k := observed.Key{Class: observed.ClassOf(reason), Principal: end.Identity}
	switch {
	case reason == "":
		v.Namespace, v.Kind, v.Name = w.Namespace, string(w.Kind), w.Name
		k.Namespace, k.Kind, k.Name = w.Namespace, string(w.Kind), w.Name
		return v, k
	case end.External == "" && end.Namespace != "" && end.Pod != "":
		v.Namespace, v.Kind, v.Name = end.Namespace, KindPod, end.Pod
		k.Namespace, k.Kind, k.Name = end.Namespace, KindPod, end.Pod
	default:
	}
	k.SetAddress(end.Address)
	if len(end.Names) > 0 {
		k.DNSName = end.Names[0] // as learning names it
	}
	return v, k
}
