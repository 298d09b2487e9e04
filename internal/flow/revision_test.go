package flow

import (
	"slices"
	"testing"
	"time"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// revisions is a workload.Revisions of fixed answers, which records what it
// was asked.
type revisions struct {
	pods  map[string]workload.Revision // by "<namespace>/<pod>"
	ips   map[string]workload.Revision // by address; at must be ipAt
	ipAt  time.Time
	asked []string
}

func (r *revisions) PodRevision(namespace, pod string) (workload.Revision, bool) {
	r.asked = append(r.asked, "pod "+namespace+"/"+pod)
	rev, ok := r.pods[namespace+"/"+pod]
	return rev, ok
}

func (r *revisions) IPRevision(ip string, at time.Time) (workload.Revision, bool) {
	r.asked = append(r.asked, "ip "+ip)
	if !at.Equal(r.ipAt) {
		return workload.Revision{}, false
	}
	rev, ok := r.ips[ip]
	return rev, ok
}

func (r *revisions) Revision(string, string) (workload.Revision, bool) {
	r.asked = append(r.asked, "name")
	return workload.Revision{}, false
}

// TestEndpointRevision: an end that the data plane names by its pod is that
// pod's revision and is never looked up by its address, which another pod may
// hold by now; an end known by its address alone is the revision of the pod
// that held it at the flow's time; an end outside the cluster, or with
// neither, has none.
func TestEndpointRevision(t *testing.T) {
	at := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	web := workload.Revision{Workload: workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "web"},
		Name: "web-5d8f9c7b6", Hash: "5d8f9c7b6", Created: at.Add(-time.Hour), Images: []string{"web:2"}}
	db := workload.Revision{Workload: workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindStatefulSet, Name: "db"},
		Name: "db-6b7c8d9f4", Hash: "db-6b7c8d9f4", Images: []string{"postgres:17"}}
	r := &revisions{
		pods: map[string]workload.Revision{"shop/web-5d8f9c7b6-x2k4p": web},
		ips:  map[string]workload.Revision{"10.0.0.7": db},
		ipAt: at,
	}
	for _, tc := range []struct {
		name  string
		end   Endpoint
		at    time.Time
		want  workload.Revision
		ok    bool
		asked string
	}{
		{name: "a named pod", end: Endpoint{Address: "10.0.0.7", Namespace: "shop", Pod: "web-5d8f9c7b6-x2k4p"}, at: at,
			want: web, ok: true, asked: "pod shop/web-5d8f9c7b6-x2k4p"},
		{name: "a named pod that the cache does not know, whose address another pod holds",
			end: Endpoint{Address: "10.0.0.7", Namespace: "shop", Pod: "web-5d8f9c7b6-gone1"}, at: at,
			asked: "pod shop/web-5d8f9c7b6-gone1"},
		{name: "an address alone, at the flow's time", end: Endpoint{Address: "10.0.0.7"}, at: at,
			want: db, ok: true, asked: "ip 10.0.0.7"},
		{name: "an address alone, at another time", end: Endpoint{Address: "10.0.0.7"}, at: at.Add(time.Hour),
			asked: "ip 10.0.0.7"},
		{name: "a pod name without its namespace is known by its address", end: Endpoint{Address: "10.0.0.7", Pod: "web-5d8f9c7b6-x2k4p"},
			at: at, want: db, ok: true, asked: "ip 10.0.0.7"},
		{name: "outside the cluster", end: Endpoint{Address: "203.0.113.9", External: ExternalWorld}, at: at},
		{name: "the node", end: Endpoint{Address: "10.0.0.7", Namespace: "shop", Pod: "web-5d8f9c7b6-x2k4p", External: ExternalHost}, at: at},
		{name: "no pod and no address", end: Endpoint{Address: "not-an-address"}, at: at},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.asked = nil
			got, ok := EndpointRevision(r, &tc.end, tc.at)
			if ok != tc.ok || got.Name != tc.want.Name || got.Workload != tc.want.Workload || got.Hash != tc.want.Hash ||
				!got.Created.Equal(tc.want.Created) || !slices.Equal(got.Images, tc.want.Images) {
				t.Errorf("EndpointRevision = %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
			var asked string
			if len(r.asked) > 1 {
				t.Errorf("asked %q, want one question at most", r.asked)
			} else if len(r.asked) == 1 {
				asked = r.asked[0]
			}
			if asked != tc.asked {
				t.Errorf("asked %q, want %q", asked, tc.asked)
			}
		})
	}
}
