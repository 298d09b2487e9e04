package learning

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/workload"
)

// TestEdgeRoundTrip: every kind of peer that learning hands the writer comes
// back as it was written, on a learned edge's record and on an observation's.
func TestEdgeRoundTrip(t *testing.T) {
	web := workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindDeployment, Name: "web"}
	base := Edge{Backend: v1alpha1.BackendCilium, Workload: web, Direction: v1alpha1.DirectionEgress, Protocol: "tcp", Port: 443}
	for name, peer := range map[string]func(*Edge){
		"workload": func(e *Edge) {
			e.Peer = workload.Ref{Namespace: "shop", Kind: v1alpha1.WorkloadKindStatefulSet, Name: "db"}
		},
		"principal": func(e *Edge) { e.Principal = "cluster.local/ns/shop/sa/web" },
		"cidr":      func(e *Edge) { e.PeerCIDR = "203.0.113.7/32" },
		"entity":    func(e *Edge) { e.PeerEntity = v1alpha1.EntityAPIServer },
		"name":      func(e *Edge) { e.PeerName = "api.example.com" },
	} {
		t.Run(name, func(t *testing.T) {
			want := base
			peer(&want)
			sl := plog.NewScopeLogs()
			want.AppendTo(sl)
			var got Edge
			if !got.ReadFrom(sl.LogRecords().At(0)) || got != want {
				t.Fatalf("edge read back as %+v, want %+v", got, want)
			}
			SetObserved(sl.LogRecords().At(0), v1alpha1.PeerClassExternal, 3, time.Unix(10, 0))
			var o Observation
			if learned, ok := o.ReadFrom(sl.LogRecords().At(0)); !learned || !ok || o.Edge != want || o.Flows != 3 {
				t.Fatalf("observation read back as %+v (learned %v, observed %v), want edge %+v with 3 flows", o, learned, ok, want)
			}
		})
	}
}
