package clustertest_test

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fixture paths, relative to this package.
var (
	hubbleFixture   = filepath.Join("..", "..", "testdata", "hubble", "flows.jsonl")
	goldmaneFixture = filepath.Join("..", "..", "testdata", "goldmane", "flows.jsonl")
	ztunnelFixture  = filepath.Join("..", "..", "testdata", "ztunnel", "ztunnel.jsonl")
)

// localTrustDomain is the trust domain of the fixtures' cluster; ztunnel ends of
// another one are pods of another cluster.
const localTrustDomain = "cluster.local"

// end is a pod end of a fixture flow: what a resolver is given, and what the
// fixture says it should find.
type end struct {
	fixture   string
	namespace string
	// name is a pod name, or for Goldmane's aggregated ends the generateName
	// before the "*".
	name   string
	prefix bool
	// ip, kind, workload and serviceAccount are empty where the fixture does not
	// give them.
	ip             string
	kind, workload string
	serviceAccount string
	labels         map[string]string
}

func (e end) String() string {
	name := e.name
	if e.prefix {
		name += "*"
	}
	return fmt.Sprintf("%s/%s/%s", e.fixture, e.namespace, name)
}

// fixtureEnds holds what the three fixtures say about the cluster.
type fixtureEnds struct {
	// ends are the pod ends, each distinct one once.
	ends []end
	// nonPodIPs are the addresses of ends that are no pod of the cluster: the
	// world, a node, a peer without identity, a pod of another trust domain.
	nonPodIPs map[string]string
}

func (f *fixtureEnds) add(e end) {
	for _, seen := range f.ends {
		if seen.String() == e.String() && seen.ip == e.ip && seen.kind == e.kind &&
			seen.workload == e.workload && seen.serviceAccount == e.serviceAccount &&
			fmt.Sprint(seen.labels) == fmt.Sprint(e.labels) {
			return
		}
	}
	f.ends = append(f.ends, e)
}

// loadFixtureEnds reads the pod ends of all three fixtures. It fails the test if
// a fixture gives none, so that a parser that no longer fits the fixtures cannot
// pass by checking nothing.
func loadFixtureEnds(t *testing.T) *fixtureEnds {
	t.Helper()
	f := &fixtureEnds{nonPodIPs: map[string]string{}}
	for _, load := range []struct {
		name string
		fn   func(*testing.T, *fixtureEnds)
	}{{"hubble", loadHubble}, {"goldmane", loadGoldmane}, {"ztunnel", loadZtunnel}} {
		before := len(f.ends)
		load.fn(t, f)
		if len(f.ends) == before {
			t.Fatalf("the %s fixture gave no pod end", load.name)
		}
	}
	return f
}

// forLines calls fn with each non-empty line of path.
func forLines(t *testing.T, path string, fn func(line int, data []byte)) {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) != "" {
			fn(line, sc.Bytes())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

type hubbleEndpoint struct {
	Namespace string   `json:"namespace"`
	PodName   string   `json:"pod_name"`
	Labels    []string `json:"labels"`
	Workloads []struct {
		Name string `json:"name"`
		Kind string `json:"kind"`
	} `json:"workloads"`
}

func loadHubble(t *testing.T, f *fixtureEnds) {
	forLines(t, hubbleFixture, func(line int, data []byte) {
		var msg struct {
			Flow *struct {
				IP struct {
					Source      string `json:"source"`
					Destination string `json:"destination"`
				} `json:"IP"`
				Source      *hubbleEndpoint `json:"source"`
				Destination *hubbleEndpoint `json:"destination"`
			} `json:"flow"`
		}
		if err := json.Unmarshal(data, &msg); err != nil {
			t.Fatalf("hubble fixture line %d: %v", line, err)
		}
		if msg.Flow == nil {
			return // lost events and other messages without a flow
		}
		for _, side := range []struct {
			ep *hubbleEndpoint
			ip string
		}{{msg.Flow.Source, msg.Flow.IP.Source}, {msg.Flow.Destination, msg.Flow.IP.Destination}} {
			if side.ep == nil || side.ep.PodName == "" {
				if side.ip != "" {
					f.nonPodIPs[side.ip] = fmt.Sprintf("hubble fixture line %d", line)
				}
				continue
			}
			e := end{fixture: "hubble", namespace: side.ep.Namespace, name: side.ep.PodName, ip: side.ip,
				labels: map[string]string{}}
			if len(side.ep.Workloads) > 0 {
				e.kind, e.workload = side.ep.Workloads[0].Kind, side.ep.Workloads[0].Name
			}
			for _, l := range side.ep.Labels {
				// Cilium adds the namespace as a label; pods do not carry it.
				if k, v, ok := strings.Cut(strings.TrimPrefix(l, "k8s:"), "="); ok && strings.HasPrefix(l, "k8s:") &&
					!strings.HasPrefix(k, "io.kubernetes.pod.namespace") {
					e.labels[k] = v
				}
			}
			f.add(e)
		}
	})
}

func loadGoldmane(t *testing.T, f *fixtureEnds) {
	forLines(t, goldmaneFixture, func(line int, data []byte) {
		var msg struct {
			Flow struct {
				Key struct {
					SourceName      string `json:"source_name"`
					SourceNamespace string `json:"source_namespace"`
					SourceType      string `json:"source_type"`
					DestName        string `json:"dest_name"`
					DestNamespace   string `json:"dest_namespace"`
					DestType        string `json:"dest_type"`
				} `json:"Key"`
				SourceLabels []string `json:"source_labels"`
				DestLabels   []string `json:"dest_labels"`
			} `json:"flow"`
		}
		if err := json.Unmarshal(data, &msg); err != nil {
			t.Fatalf("goldmane fixture line %d: %v", line, err)
		}
		k := msg.Flow.Key
		for _, side := range []struct {
			namespace, name, typ string
			labels               []string
		}{
			{k.SourceNamespace, k.SourceName, k.SourceType, msg.Flow.SourceLabels},
			{k.DestNamespace, k.DestName, k.DestType, msg.Flow.DestLabels},
		} {
			// Host endpoints, network sets and networks are no pods.
			if side.typ != "WorkloadEndpoint" || side.name == "" {
				continue
			}
			e := end{fixture: "goldmane", namespace: side.namespace, labels: map[string]string{}}
			e.name, e.prefix = strings.CutSuffix(side.name, "*")
			for _, l := range side.labels {
				if k, v, ok := strings.Cut(l, "="); ok {
					e.labels[k] = v
				}
			}
			f.add(e)
		}
	})
}

func loadZtunnel(t *testing.T, f *fixtureEnds) {
	forLines(t, ztunnelFixture, func(line int, data []byte) {
		var msg map[string]any
		if err := json.Unmarshal(data, &msg); err != nil {
			// The fixture holds a truncated line on purpose.
			t.Logf("ztunnel fixture line %d skipped: %v", line, err)
			return
		}
		str := func(key string) string { s, _ := msg[key].(string); return s }
		for _, side := range []struct{ prefix, addr string }{
			{"src", str("src.addr")},
			{"dst", cmp.Or(str("dst.hbone_addr"), str("dst.addr"))},
		} {
			if side.addr == "" {
				continue
			}
			ip, _, err := net.SplitHostPort(side.addr)
			if err != nil {
				t.Fatalf("ztunnel fixture line %d: %s: %v", line, side.addr, err)
			}
			name, identity := str(side.prefix+".workload"), str(side.prefix+".identity")
			td, ns, sa := parseSPIFFE(identity)
			// A source with neither workload nor identity is outside the mesh; a
			// destination without them is a pod that other lines name.
			if (side.prefix == "src" && name == "" && identity == "") || (identity != "" && td != localTrustDomain) {
				f.nonPodIPs[ip] = fmt.Sprintf("ztunnel fixture line %d", line)
				continue
			}
			if name == "" {
				continue // an identity alone: the pod is named on other lines
			}
			namespace := str(side.prefix + ".namespace")
			if identity != "" && ns != namespace {
				t.Fatalf("ztunnel fixture line %d: identity %s outside namespace %s", line, identity, namespace)
			}
			f.add(end{fixture: "ztunnel", namespace: namespace, name: name, ip: ip, serviceAccount: sa})
		}
	})
}

// parseSPIFFE splits spiffe://<trust domain>/ns/<namespace>/sa/<service account>.
func parseSPIFFE(id string) (trustDomain, namespace, serviceAccount string) {
	rest, ok := strings.CutPrefix(id, "spiffe://")
	if !ok {
		return "", "", ""
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 5 || parts[1] != "ns" || parts[3] != "sa" {
		return "", "", ""
	}
	return parts[0], parts[2], parts[4]
}
