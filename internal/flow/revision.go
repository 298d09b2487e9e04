package flow

import (
	"net/netip"
	"time"

	"github.com/kubewarden/network-enforcer/internal/workload"
)

// EndpointRevision finds the revision of the pod at a flow's end, under the
// rules of ResolveEndpoint: an end that the data plane names by its pod
// name, an end known by its address alone by the pod that held it at the
// flow's time. False for an end that is no pod of a workload with
// revisions.
func EndpointRevision(r workload.Revisions, end *Endpoint, at time.Time) (workload.Revision, bool) {
	if end.External != "" {
		return workload.Revision{}, false
	}
	if end.Pod != "" && end.Namespace != "" {
		return r.PodRevision(end.Namespace, end.Pod)
	}
	if _, err := netip.ParseAddr(end.Address); err == nil {
		return r.IPRevision(end.Address, at)
	}
	return workload.Revision{}, false
}
