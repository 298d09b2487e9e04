package dataplanetest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// ztunnelSpans numbers the fake policy decisions' span ids.
var ztunnelSpans atomic.Uint64

// NewZtunnelConnection is what the destination's ztunnel logs (LOG_FORMAT=json,
// AUTHZ_POLICY_INFO_LOGGING=true) for one inbound HBONE connection from src's
// srcPort to dst's dstPort, in order: the decision of the policy that selects
// dst (dst's ingress policy, as the enforcer names it), made when the
// connection opens, then the access line, logged when it closes. A connection
// that no policy selects has the access line only.
func NewZtunnelConnection(src, dst End, srcPort, dstPort uint32, c Connection) []string {
	now := time.Now().UTC()
	var lines []string
	decision := map[Connection]string{
		ConnectionAllowed:      "allow policy match",
		ConnectionDenied:       "no allow policies matched",
		ConnectionDryRunDenied: "dry-run: no allow policies match",
	}[c]
	if decision != "" {
		lines = append(lines, ztunnelLine(map[string]any{
			"level": "info", "time": now.Format(time.RFC3339Nano), "scope": "ztunnel::state", "message": decision,
			"policy":  dst.Namespace + "/" + ingressPolicy(dst),
			"inbound": map[string]string{"id": fmt.Sprintf("%032x", ztunnelSpans.Add(1)), "peer": hostPort(src.IP, srcPort)},
		}))
	}
	access := map[string]any{
		"level": "info", "time": now.Add(time.Millisecond).Format(time.RFC3339Nano), "scope": "access", "message": "connection complete",
		"src.addr": hostPort(src.IP, srcPort), "src.workload": src.Pod, "src.namespace": src.Namespace, "src.identity": spiffeID(src),
		"dst.addr": hostPort(dst.IP, 15008), "dst.hbone_addr": hostPort(dst.IP, dstPort), "dst.workload": dst.Pod,
		"dst.namespace": dst.Namespace, "dst.identity": spiffeID(dst),
		"direction": "inbound", "bytes_sent": 10, "bytes_recv": 10, "duration": "1ms",
	}
	if c == ConnectionDenied {
		access["level"] = "error"
		access["error"] = "connection closed due to policy rejection: allow policies exist, but none allowed"
	}
	return append(lines, ztunnelLine(access))
}

// spiffeID is the pod's Istio identity: its service account's in the
// default trust domain.
func spiffeID(e End) string {
	sa := e.ServiceAccount
	if sa == "" {
		sa = e.Workload
	}
	return "spiffe://cluster.local/ns/" + e.Namespace + "/sa/" + sa
}

func hostPort(ip string, port uint32) string { return ip + ":" + strconv.FormatUint(uint64(port), 10) }

// ztunnelLine writes one flat JSON line, keys sorted as encoding/json does.
func ztunnelLine(m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // strings, numbers and maps of strings only
	}
	return string(b)
}
