package hubblereceiver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	flowpb "github.com/cilium/cilium/api/v1/flow"
	"go.opentelemetry.io/collector/pdata/plog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/extension/enforcerextension/enforcerextensiontest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/learning"
	"github.com/kubewarden/network-enforcer/internal/workload"
	"github.com/kubewarden/network-enforcer/processor/learningprocessor"
)

// journeyRecording is what the real Cilium agent emitted during the real-node
// suite's journey (TestRealCilium, `make capture-cilium`): day 1 of the store
// application, then protect, then monitor.
const journeyRecording = "journey.jsonl.gz"

// TestRealAgentJourneyRecords holds the journey's distinct records of the
// store application to what the journey did: day 1's connections, the
// refusals under protect (each end's policy), and what monitor let through.
func TestRealAgentJourneyRecords(t *testing.T) {
	var got []string
	for _, d := range describeAll(convertAll(loadRealAgent(t, journeyRecording))) {
		if strings.Contains(d, "store/") {
			got = append(got, d)
		}
	}
	const (
		api = "store/api-589f6cfd48-cr5j7(Deployment/api)"
		web = "store/web-88d48695d-ngkrq(Deployment/web)"
		db  = "store/db-0(StatefulSet/db)"
		dns = "kube-system/coredns-fc678d7d-vbt8q(Deployment/coredns):53"
	)
	want := []string{
		"allowed   tcp host:10.217.0.251 -> " + api + ":8080 policy=", // the host-network DaemonSet, and the kubelet's probes
		"allowed   tcp host:10.217.0.251 -> " + api + ":8081 policy=", // the test's requests to the pods' client
		"allowed   tcp host:10.217.0.251 -> " + db + ":8080 policy=",
		"allowed   tcp host:10.217.0.251 -> store/debug(/):8081 policy=",
		"allowed   tcp host:10.217.0.251 -> " + web + ":8080 policy=",
		"allowed   tcp host:10.217.0.251 -> " + web + ":8081 policy=",
		"allowed   tcp " + api + " -> " + db + ":8080 policy=",
		"allowed   tcp store/debug(/) -> " + api + ":8080 policy=",
		"allowed   tcp store/report-29936200-2r9d5(CronJob/report) -> " + api + ":8080 policy=",
		"allowed   tcp " + web + " -> apiserver:10.217.1.1:16443 policy=",
		"allowed   tcp " + web + " -> " + api + ":8080 policy=",
		"allowed   tcp " + web + " -> " + api + ":8081 policy=", // monitor lets it through
		"allowed   tcp " + web + " -> world:10.217.32.2:8080 policy=",
		"allowed   udp " + api + " -> " + dns + " policy=",
		"allowed   udp store/debug(/) -> " + dns + " policy=",
		"allowed   udp store/report-29936200-2r9d5(CronJob/report) -> " + dns + " policy=",
		"allowed   udp " + web + " -> " + dns + " policy=",
		"allowed egress source tcp " + api + " -> " + db + ":8080 policy=NetworkPolicy/store/deployment-api-egress",
		"allowed egress source tcp " + web + " -> " + api + ":8080 policy=NetworkPolicy/store/deployment-web-egress",
		"allowed egress source udp " + api + " -> " + dns + " policy=NetworkPolicy/store/deployment-api-egress",
		"allowed egress source udp " + web + " -> " + dns + " policy=NetworkPolicy/store/deployment-web-egress",
		"allowed ingress destination tcp host:10.217.0.251 -> " + api + ":8080 policy=",
		"allowed ingress destination tcp host:10.217.0.251 -> " + db + ":8080 policy=",
		"allowed ingress destination tcp " + api + " -> " + db + ":8080 policy=NetworkPolicy/store/statefulset-db-ingress",
		"allowed ingress destination tcp " + web + " -> " + api + ":8080 policy=NetworkPolicy/store/deployment-api-ingress",
		"denied egress source tcp " + api + " -> " + web + ":8080 policy=",           // the reverse direction
		"denied egress source tcp " + web + " -> apiserver:10.217.1.1:16443 policy=", // protect blocks what day 1 only observed
		"denied egress source tcp " + web + " -> " + api + ":8081 policy=",           // a new port
		"denied egress source tcp " + web + " -> world:10.217.32.2:8080 policy=",
		"denied ingress destination tcp store/debug(/) -> " + api + ":8080 policy=",
	}
	if !slices.Equal(got, want) {
		t.Errorf("distinct records of the store application:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRealAgentJourneyLearning runs day 1 of the journey (its flows until the
// first policy verdict of the store application) through the learning
// processor, with the workloads that the flows name: what it learns and what
// it observes without learning are the proposals that the real-node suite
// expects, edge for edge.
func TestRealAgentJourneyLearning(t *testing.T) {
	flows := dayOne(loadRealAgent(t, journeyRecording))
	fake := enforcerextensiontest.New()
	for _, f := range flows {
		known(fake, f.GetSource(), f.GetIP().GetSource())
		known(fake, f.GetDestination(), f.GetIP().GetDestination())
	}
	p, sink := fake.StartLogsProcessor(t, learningprocessor.NewFactory())
	recs := convertAll(flows)
	for batch := range slices.Chunk(recs, 100) {
		ld := plog.NewLogs()
		sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
		for i := range batch {
			batch[i].AppendTo(sl)
		}
		if err := p.ConsumeLogs(context.Background(), ld); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string][]string{}
	for _, ld := range sink.AllLogs() {
		flow.EachLogRecord(ld, func(lr plog.LogRecord) {
			var o learning.Observation
			learned, ok := o.ReadFrom(lr)
			if !ok || o.Workload.Namespace != "store" {
				return
			}
			name := strings.ToLower(string(o.Workload.Kind)) + "-" + o.Workload.Name + "-" + strings.ToLower(string(o.Direction))
			e := fmt.Sprintf("%s %s/%d", o.Class, strings.ToUpper(o.Protocol), o.Port)
			if learned {
				e = fmt.Sprintf("learned %s %s/%d", o.Peer, strings.ToUpper(o.Protocol), o.Port)
			}
			if !slices.Contains(got[name], e) {
				got[name] = append(got[name], e)
			}
		})
	}
	// The real-node suite's oracle (TestRealCilium): each proposal's rules,
	// and the edges that protect would block.
	want := map[string][]string{
		"deployment-web-egress": {"APIServer TCP/16443", "External TCP/8080",
			"learned kube-system/Deployment/coredns UDP/53", "learned store/Deployment/api TCP/8080"},
		"deployment-api-ingress": {"BarePod TCP/8080", "Host TCP/8080", "Host TCP/8081",
			"learned store/CronJob/report TCP/8080", "learned store/Deployment/web TCP/8080"},
		"deployment-api-egress":  {"learned kube-system/Deployment/coredns UDP/53", "learned store/StatefulSet/db TCP/8080"},
		"statefulset-db-ingress": {"Host TCP/8080", "learned store/Deployment/api TCP/8080"},
		"cronjob-report-egress":  {"learned kube-system/Deployment/coredns UDP/53", "learned store/Deployment/api TCP/8080"},
	}
	for name, edges := range got {
		if !slices.ContainsFunc(edges, func(e string) bool { return strings.HasPrefix(e, "learned ") }) {
			// Nothing learned: no proposal, whose status would list them (web
			// is called only from the node).
			continue
		}
		slices.Sort(edges)
		if !slices.Equal(edges, want[name]) {
			t.Errorf("%s: learned and observed\n  %s\nwant\n  %s", name, strings.Join(edges, "\n  "), strings.Join(want[name], "\n  "))
		}
	}
	for name := range want {
		if got[name] == nil {
			t.Errorf("no %s learned", name)
		}
	}
}

// dayOne is the journey's flows before the first policy verdict or drop of
// the store application: what learning saw before anything was promoted.
func dayOne(flows []*flowpb.Flow) []*flowpb.Flow {
	for i, f := range flows {
		store := f.GetSource().GetNamespace() == "store" || f.GetDestination().GetNamespace() == "store"
		judged := len(f.GetEgressAllowedBy())+len(f.GetIngressAllowedBy()) > 0 || f.GetVerdict() == flowpb.Verdict_DROPPED
		if store && judged {
			return flows[:i]
		}
	}
	return flows
}

// known tells the fake enforcer of the pod at ip as the flow names it: its
// workload (Cilium's workloads field), a bare pod, or a host-network pod.
func known(fake *enforcerextensiontest.Enforcer, ep *flowpb.Endpoint, ip string) {
	switch {
	case ep.GetPodName() == "":
		return
	case len(ep.GetWorkloads()) == 0:
		fake.Unresolved(ip, workload.UnresolvedBarePod)
		fake.UnresolvedPod(ep.GetNamespace(), ep.GetPodName(), workload.UnresolvedBarePod)
	default:
		w := ep.GetWorkloads()[0]
		ref := workload.Ref{Namespace: ep.GetNamespace(), Kind: v1alpha1.WorkloadKind(w.GetKind()), Name: w.GetName()}
		fake.AddWorkload(ref, enforcerextensiontest.WorkloadInfo{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.GetName()}}}, ip)
		fake.AddPod(ref, ep.GetPodName())
	}
}
