package flow

import (
	"net/netip"
	"time"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// ResolveEndpoint finds the workload of a flow's end as the cluster stood at
// the flow's time at. The reason says why an end has no workload; it is empty
// when it has one. The learning and violation processors resolve ends alike
// through it.
//
// An end that the data plane names is attributed by that name only: its pod
// (an ended one within the cache's grace period included), else the
// workload that the data plane names for it (Hubble's workloads), else
// nothing. It is never resolved through its address, which another pod may
// hold by now. Only an end known by its address alone is resolved by
// address, to the pod that held it at the flow's time.
func ResolveEndpoint(r workload.Resolver, end *Endpoint, at time.Time) (workload.Ref, workload.Unresolved) {
	switch end.External {
	case "":
	case ExternalHost:
		return workload.Ref{}, workload.UnresolvedHost
	case ExternalRemoteNode:
		return workload.Ref{}, workload.UnresolvedRemoteNode
	case ExternalAPIServer:
		return workload.Ref{}, workload.UnresolvedAPIServer
	default:
		return workload.Ref{}, workload.UnresolvedExternal
	}
	if end.Pod != "" && end.Namespace != "" {
		w, reason := r.ResolvePod(end.Namespace, end.Pod)
		if reason == workload.UnresolvedNoPod {
			if named := NamedWorkload(end); named.Name != "" {
				if owner, ok := r.ResolveWorkload(named); ok {
					return owner, ""
				}
			}
		}
		return w, reason
	}
	if _, err := netip.ParseAddr(end.Address); err == nil {
		return r.ResolveIP(end.Address, at)
	}
	return workload.Ref{}, workload.UnresolvedNoPod
}

// NamedWorkload is the workload that the data plane names for end, when the
// end is a pod (Hubble's workloads, from the pod's owner references): zero
// when it names none, or a kind that no proposal can target.
func NamedWorkload(end *Endpoint) workload.Ref {
	if end.External != "" || end.Namespace == "" || end.Pod == "" || end.WorkloadName == "" {
		return workload.Ref{}
	}
	switch k := v1alpha1.WorkloadKind(end.WorkloadKind); k {
	case v1alpha1.WorkloadKindDeployment, v1alpha1.WorkloadKindStatefulSet, v1alpha1.WorkloadKindDaemonSet,
		v1alpha1.WorkloadKindJob, v1alpha1.WorkloadKindCronJob:
		return workload.Ref{Namespace: end.Namespace, Kind: k, Name: end.WorkloadName}
	}
	return workload.Ref{}
}
