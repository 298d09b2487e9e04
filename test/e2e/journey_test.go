package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/flow"
	"github.com/kubewarden/network-enforcer/internal/violationevent"
)

// journeyConfig runs one data plane's receiver through learning to the writer,
// and the violations to a real OTLP receiver and the Prometheus counter. The
// collector's own telemetry (%[9]s:%[10]s) is where a test sees it lead
// (startJourneyBinary).
const journeyConfig = `
extensions:
  leader_elector:
    auth_type: kubeConfig
    lease_name: %[8]s
    lease_namespace: %[7]s
    lease_duration: 4s
    renew_deadline: 3s
    retry_period: 500ms
  enforcer:
    auth_type: kubeConfig
  policy_controller:
receivers:%[2]s
processors:
  learning:
  violation:
    status_sync_interval: %[3]s
connectors:
  forward/violations:
  policy_denies:
exporters:
  k8swriter:
  otlp_grpc:
    endpoint: %[4]s
    tls:
      insecure: true
  prometheus:
    endpoint: %[5]s
    translation_strategy: UnderscoreEscapingWithoutSuffixes
service:
  extensions: [leader_elector, enforcer, policy_controller]
  telemetry:
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: %[9]s
                port: %[10]s
  pipelines:
    logs/flows:
      receivers: [%[6]s]
      processors: [learning]
      exporters: [k8swriter, forward/violations]
    logs/events:
      receivers: [forward/violations]
      processors: [violation]
      exporters: [otlp_grpc, policy_denies]
    metrics/denies:
      receivers: [policy_denies]
      exporters: [prometheus]
`

// syncInterval is the journeys' status sync interval.
const syncInterval = 2 * time.Second

// TestJourney follows one policy through its life on each data plane, with the
// built binary: learned, promoted to monitor, rendered, violated (the event at
// once, the status on the sync), switched to protect in place, violated again,
// left in place while the collector is down, acknowledged, and deleted with its
// native object, after which the next flow is learned again.
func TestJourney(t *testing.T) {
	controlplanetest.Require(t)
	for _, tc := range []struct {
		name     string
		newPlane func(*testing.T) plane
		receiver string
	}{
		{"cilium", newCilium, "hubble"},
		{"calico", newCalico, "goldmane"},
		{"istio", newIstio, "ztunnel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resetGuarded(t)
			t.Cleanup(func() { resetGuarded(t) })
			journey(t, tc.newPlane(t), journeyRun{name: tc.name, receiver: tc.receiver, kubeconfig: kubeconfig,
				leaseNamespace: "default", leaseName: "journey-" + tc.name})
		})
	}
}

// journeyRun says how a journey runs the binary: its receiver, the kubeconfig
// it reaches the API server with, and its Lease.
type journeyRun struct {
	name, receiver, kubeconfig, leaseNamespace, leaseName string
}

func journey(t *testing.T, dp plane, run journeyRun) {
	ctx := context.Background()
	name := run.name
	sink := startOTLPSink(t)
	metrics, telemetry := freeAddr(t), freeAddr(t)
	host, port, _ := strings.Cut(telemetry, ":")
	config := writeConfig(t, "journey.yaml", fmt.Sprintf(journeyConfig, name, dp.receiver(), syncInterval, sink.Addr, metrics,
		run.receiver, run.leaseNamespace, run.leaseName, host, port))
	start := func() *process { return startLeading(t, config, telemetry, "KUBECONFIG="+run.kubeconfig) }
	proc := start()

	// 1. Learn: the client's connections make the api's ingress proposal.
	dp.allowed(t, caller, api, 8080)
	proposal := &v1alpha1.WorkloadNetworkPolicyProposal{}
	waitFor(t, "the proposal", time.Minute, func() bool {
		return env.Client.Get(ctx, apiPolicy, proposal) == nil
	})
	checkLearned(t, dp.backend(), &proposal.Spec)

	// 2. Promote to monitor.
	patchLabels(t, proposal, map[string]string{v1alpha1.PromoteLabel: string(v1alpha1.PolicyModeMonitor)})
	policy := &v1alpha1.WorkloadNetworkPolicy{}
	waitFor(t, "the policy", 30*time.Second, func() bool {
		return env.Client.Get(ctx, apiPolicy, policy) == nil
	})
	if policy.Spec.Mode != v1alpha1.PolicyModeMonitor || policy.Labels[v1alpha1.PromotedFromLabel] != policyName ||
		!apiequality.Semantic.DeepEqual(policy.Spec.PolicySpec, proposal.Spec) {
		t.Fatalf("promoted policy %+v from %+v", policy, proposal.Spec)
	}
	waitFor(t, "the promoted proposal to go", 30*time.Second, func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, apiPolicy, &v1alpha1.WorkloadNetworkPolicyProposal{}))
	})

	// 3. The native object of monitor mode.
	native := checkNative(t, policy, v1alpha1.PolicyModeMonitor, "")

	// 4. A violation: its event arrives at once, its record on the sync.
	sent := time.Now()
	dp.violation(t, intruder, api, 8080, v1alpha1.PolicyModeMonitor)
	event := waitEvent(t, sink, violationevent.Observed, "monitor")
	t.Logf("%s: the monitor event arrived %s after the flow was sent", name, time.Since(sent).Round(time.Millisecond))
	checkEvent(t, event, dp.provider(), "monitor", 8080)
	policy = waitRecords(t, 1)
	checkRecord(t, &policy.Status.Violations[0], "1", v1alpha1.PolicyModeMonitor, 8080)
	if policy.Status.ViolationCount != 1 || policy.Status.ActiveViolationCount != 1 {
		t.Errorf("counts %d/%d, want 1/1", policy.Status.ViolationCount, policy.Status.ActiveViolationCount)
	}

	// 5. Protect: the native object changes in place.
	patch := client.MergeFrom(policy.DeepCopy())
	policy.Spec.Mode = v1alpha1.PolicyModeProtect
	must(t, env.Client.Patch(ctx, policy, patch))
	native = checkNative(t, policy, v1alpha1.PolicyModeProtect, native)
	// What kubectl describe shows of it: the promotion and the mode change,
	// recorded as Events on this policy (with the chart's RBAC too).
	for _, reason := range []string{v1alpha1.EventReasonPromoted, v1alpha1.EventReasonModeChanged} {
		waitKubeEvent(t, policy, reason)
	}
	// Its revisions: the promotion, and the mode change by hand.
	waitRevisions(t, map[int64]string{1: "promoted from proposal " + policyName, 2: "edited"})

	// 6. A protect violation.
	dp.violation(t, intruder, api, 8080, v1alpha1.PolicyModeProtect)
	checkEvent(t, waitEvent(t, sink, violationevent.Observed, "protect"), dp.provider(), "protect", 8080)
	policy = waitRecords(t, 2)
	checkRecord(t, &policy.Status.Violations[0], "2", v1alpha1.PolicyModeProtect, 8080)
	if policy.Status.ViolationCount != 2 || policy.Status.ActiveViolationCount != 2 {
		t.Errorf("counts %d/%d, want 2/2", policy.Status.ViolationCount, policy.Status.ActiveViolationCount)
	}
	for _, action := range []string{"monitor", "protect"} {
		labels := map[string]string{"action": action, "enforcement_provider": string(dp.provider()), "network_transport": "tcp",
			"source_workload_namespace": "guarded", "source_workload_name": "intruder", "destination_workload_namespace": "guarded",
			"destination_workload_name": "api", "destination_port": "8080", "policy_ref_namespace": "guarded", "policy_ref_name": policyName}
		if n := scrape(t, metrics, "network_enforcer_policy_denies", labels); n != 1 {
			t.Errorf("network_enforcer_policy_denies{action=%q}: %d, want 1", action, n)
		}
	}

	// 7. The collector stops: the data plane keeps enforcing what it rendered.
	// Whatever the collector does to it on its way out is done once it has
	// exited, and nothing else removes it: look at once.
	must(t, proc.cmd.Process.Signal(syscall.SIGTERM))
	<-proc.exited
	checkNative(t, policy, v1alpha1.PolicyModeProtect, native)
	dp.forget()
	start()

	// 8. Acknowledge the protect violation.
	policy = waitRecords(t, 2)
	patch = client.MergeFrom(policy.DeepCopy())
	metav1.SetMetaDataAnnotation(&policy.ObjectMeta, v1alpha1.AcknowledgeAnnotation("2"), "the intruder is a scanner we run")
	must(t, env.Client.Patch(ctx, policy, patch))
	waitFor(t, "the acknowledgement", 30*time.Second, func() bool {
		must(t, env.Client.Get(ctx, apiPolicy, policy))
		_, annotated := policy.Annotations[v1alpha1.AcknowledgeAnnotation("2")]
		return !annotated && len(policy.Status.AcknowledgedViolations) == 1
	})
	ack := policy.Status.AcknowledgedViolations[0]
	if ack.Violation.ID != "2" || ack.Reason != "the intruder is a scanner we run" || ack.AcknowledgedAt.IsZero() ||
		policy.Status.ActiveViolationCount != 1 || policy.Status.Violations[0].ID != "1" {
		t.Errorf("after the acknowledgement: %+v", policy.Status)
	}
	ackEvent := waitEvent(t, sink, violationevent.Acknowledged, "protect")
	if id, _ := ackEvent.Get(violationevent.AttrViolationID); id != "2" {
		t.Errorf("acknowledgement event for %q", id)
	}

	// More distinct violations than the status keeps: the newest 100 stay.
	if name == "cilium" {
		for port := uint32(20000); port < 20105; port++ {
			dp.violation(t, intruder, api, port, v1alpha1.PolicyModeProtect)
		}
		policy = waitRecords(t, v1alpha1.MaxViolationRecords)
		waitFor(t, "all 107 observations", 30*time.Second, func() bool {
			must(t, env.Client.Get(ctx, apiPolicy, policy))
			return policy.Status.ViolationCount == 107
		})
		st := policy.Status
		if st.ActiveViolationCount != 100 || st.Violations[0].ID != "107" || st.Violations[99].ID != "8" ||
			st.Violations[0].DstPort != 20104 || len(st.AcknowledgedViolations) != 1 {
			t.Errorf("after 105 more: active %d, ids %s..%s, newest port %d, %d acknowledged",
				st.ActiveViolationCount, st.Violations[0].ID, st.Violations[99].ID, st.Violations[0].DstPort, len(st.AcknowledgedViolations))
		}
	}

	// 9. Delete the policy: its native object goes with it, and the next flow
	// makes a proposal again.
	must(t, env.Client.Delete(ctx, policy))
	waitFor(t, "the native object to be collected", time.Minute, func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, apiPolicy, nativeObject(dp.backend())))
	})
	waitRevisions(t, map[int64]string{})
	// The native object's collection does not say that the enforcer's cache
	// saw the policy go: a flow judged against the policy still in it is a
	// violation candidate of a policy that is gone, which teaches nothing. So
	// the flow comes again every two seconds until a proposal is made.
	var resent time.Time
	waitFor(t, "a new proposal", time.Minute, func() bool {
		if time.Since(resent) > 2*time.Second {
			dp.allowed(t, caller, api, 8080)
			resent = time.Now()
		}
		return env.Client.Get(ctx, apiPolicy, &v1alpha1.WorkloadNetworkPolicyProposal{}) == nil
	})
}

// checkLearned checks the proposal that the client's connections to the api on
// 8080 teach.
func checkLearned(t *testing.T, backend v1alpha1.Backend, spec *v1alpha1.PolicySpec) {
	t.Helper()
	if spec.Backend != backend || spec.Direction != v1alpha1.DirectionIngress ||
		spec.TargetRef != (v1alpha1.TargetRef{Kind: v1alpha1.WorkloadKindDeployment, Name: "api"}) {
		t.Fatalf("proposal %+v", spec)
	}
	if backend == v1alpha1.BackendIstio {
		want := &v1alpha1.IstioPolicySpec{
			Selector: v1alpha1.IstioSelector{MatchLabels: map[string]string{"app": "api"}},
			Rules: []v1alpha1.IstioRule{{
				From: []v1alpha1.IstioFrom{{Source: v1alpha1.IstioSource{Principals: []string{principal(caller)}}}},
				To:   []v1alpha1.IstioTo{{Operation: v1alpha1.IstioOperation{Ports: []string{"8080"}}}},
			}},
		}
		if !apiequality.Semantic.DeepEqual(spec.Istio, want) {
			t.Fatalf("istio spec %+v, want %+v", spec.Istio, want)
		}
		return
	}
	k := spec.Kubernetes
	if k == nil || len(k.Ingress) != 1 || len(k.Ingress[0].From) != 1 || len(k.Ingress[0].Ports) != 1 ||
		k.PodSelector.MatchLabels["app"] != "api" ||
		k.Ingress[0].From[0].PodSelector.MatchLabels["app"] != "client" ||
		k.Ingress[0].From[0].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != "guarded" ||
		k.Ingress[0].Ports[0].Port.IntValue() != 8080 || *k.Ingress[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatalf("kubernetes spec %+v", k)
	}
}

// nativeObject is an empty object of the backend's native kind.
func nativeObject(backend v1alpha1.Backend) client.Object {
	if backend == v1alpha1.BackendIstio {
		return &securityv1.AuthorizationPolicy{}
	}
	return &networkingv1.NetworkPolicy{}
}

// checkNative waits until the policy's native object is as its mode asks, and
// returns its UID; before, when not empty, is the UID it must keep.
func checkNative(t *testing.T, policy *v1alpha1.WorkloadNetworkPolicy, mode v1alpha1.PolicyMode, before types.UID) types.UID {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKeyFromObject(policy)
	if policy.Spec.Backend == v1alpha1.BackendKubernetes && mode == v1alpha1.PolicyModeMonitor {
		// No object: wait for the renderer to have judged the policy, then look.
		waitFor(t, "the Rendered condition", 30*time.Second, func() bool {
			var p v1alpha1.WorkloadNetworkPolicy
			must(t, env.Client.Get(ctx, key, &p))
			for _, c := range p.Status.Conditions {
				if c.Type == "Rendered" && c.Reason == "Monitor" {
					return true
				}
			}
			return false
		})
		if err := env.Client.Get(ctx, key, &networkingv1.NetworkPolicy{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a NetworkPolicy in monitor mode: %v", err)
		}
		return ""
	}
	obj := nativeObject(policy.Spec.Backend)
	var problem string
	waitFor(t, "the native object of "+string(mode)+" mode", 30*time.Second, func() bool {
		if err := env.Client.Get(ctx, key, obj); err != nil {
			problem = err.Error()
			return false
		}
		problem = nativeProblem(policy, mode, obj)
		return problem == ""
	})
	if before != "" && obj.GetUID() != before {
		t.Fatalf("the native object was replaced, not changed in place")
	}
	if c := metav1.GetControllerOf(obj); c == nil || c.UID != policy.UID || c.Kind != "WorkloadNetworkPolicy" {
		t.Fatalf("owner %+v, want the policy %s", c, policy.UID)
	}
	return obj.GetUID()
}

// nativeProblem says how the native object differs from what the policy asks.
func nativeProblem(policy *v1alpha1.WorkloadNetworkPolicy, mode v1alpha1.PolicyMode, obj client.Object) string {
	switch o := obj.(type) {
	case *networkingv1.NetworkPolicy:
		if !apiequality.Semantic.DeepEqual(&o.Spec, policy.Spec.Kubernetes) {
			return fmt.Sprintf("spec %+v", o.Spec)
		}
	case *securityv1.AuthorizationPolicy:
		_, dryRun := o.Annotations["istio.io/dry-run"]
		if dryRun != (mode == v1alpha1.PolicyModeMonitor) {
			return fmt.Sprintf("annotations %v in %s mode", o.Annotations, mode)
		}
		s := &o.Spec
		if s.GetAction().String() != "ALLOW" || s.GetSelector().GetMatchLabels()["app"] != "api" || len(s.GetRules()) != 1 ||
			fmt.Sprint(s.GetRules()[0].GetFrom()[0].GetSource().GetPrincipals()) != "["+principal(caller)+"]" ||
			fmt.Sprint(s.GetRules()[0].GetTo()[0].GetOperation().GetPorts()) != "[8080]" {
			return fmt.Sprintf("spec %v", s)
		}
	}
	return ""
}

// waitEvent waits for the newest event of that name and action at the sink.
func waitEvent(t *testing.T, sink *otlpSink, name, action string) eventAttrs {
	t.Helper()
	var found eventAttrs
	waitFor(t, name+" ("+action+")", 30*time.Second, func() bool {
		for _, lr := range sink.Records() {
			if lr.EventName() != name {
				continue
			}
			a := eventAttrs(lr.Attributes().AsRaw())
			if v, _ := a.Get(violationevent.AttrAction); v == action {
				found = a
			}
		}
		return found != nil
	})
	return found
}

// eventAttrs are an event's attributes.
type eventAttrs map[string]any

// Get returns an attribute as a string.
func (a eventAttrs) Get(k string) (string, bool) {
	v, ok := a[k]
	return fmt.Sprint(v), ok
}

func checkEvent(t *testing.T, e eventAttrs, provider flow.Provider, action string, port int) {
	t.Helper()
	want := map[string]string{
		"enforcement.provider": string(provider), "action": action, "network.transport": "tcp", "destination.port": strconv.Itoa(port),
		"source.workload.namespace": "guarded", "source.workload.kind": "Deployment", "source.workload.name": "intruder",
		"destination.workload.namespace": "guarded", "destination.workload.kind": "Deployment", "destination.workload.name": "api",
		"policy.ref.namespace": "guarded", "policy.ref.name": "deployment-api-ingress",
	}
	if provider == flow.ProviderIstio {
		want["source.workload.identity"] = principal(intruder)
		want["destination.workload.identity"] = principal(api)
	}
	for k, v := range want {
		if got, _ := e.Get(k); got != v {
			t.Errorf("event %s = %q, want %q", k, got, v)
		}
	}
}

// policyName is the name of the journey's proposal, and then of its policy:
// the api's ingress.
const policyName = "deployment-api-ingress"

// waitRecords waits until the journey's policy's status holds n active records.
func waitRecords(t *testing.T, n int) *v1alpha1.WorkloadNetworkPolicy {
	t.Helper()
	var p v1alpha1.WorkloadNetworkPolicy
	waitFor(t, fmt.Sprintf("%d violation records", n), 30*time.Second, func() bool {
		must(t, env.Client.Get(context.Background(), apiPolicy, &p))
		return len(p.Status.Violations) == n
	})
	return &p
}

func checkRecord(t *testing.T, r *v1alpha1.ViolationRecord, id string, action v1alpha1.PolicyMode, port int32) {
	t.Helper()
	if r.ID != id || r.Action != action || r.DstPort != port || r.Protocol != corev1.ProtocolTCP || r.Timestamp.IsZero() ||
		r.Source.Namespace != "guarded" || r.Source.Kind != "Deployment" || r.Source.Name != "intruder" ||
		r.Destination.Namespace != "guarded" || r.Destination.Kind != "Deployment" || r.Destination.Name != "api" ||
		r.Policy != (v1alpha1.PolicyReference{Namespace: "guarded", Name: policyName}) {
		t.Errorf("record %+v, want id %s, %s, port %d", r, id, action, port)
	}
}

func patchLabels(t *testing.T, obj client.Object, labels map[string]string) {
	t.Helper()
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	for k, v := range labels {
		l[k] = v
	}
	obj.SetLabels(l)
	must(t, env.Client.Patch(context.Background(), obj, patch))
}

// resetGuarded deletes the guarded namespace's proposals and policies, and
// waits until they and their native objects are gone.
func resetGuarded(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{&v1alpha1.WorkloadNetworkPolicy{}, &v1alpha1.WorkloadNetworkPolicyProposal{},
		&networkingv1.NetworkPolicy{}, &securityv1.AuthorizationPolicy{}} {
		must(t, client.IgnoreNotFound(env.Client.DeleteAllOf(ctx, obj, client.InNamespace("guarded"))))
	}
	waitFor(t, "the guarded namespace to be empty", time.Minute, func() bool {
		var policies v1alpha1.WorkloadNetworkPolicyList
		var proposals v1alpha1.WorkloadNetworkPolicyProposalList
		must(t, env.Client.List(ctx, &policies, client.InNamespace("guarded")))
		must(t, env.Client.List(ctx, &proposals, client.InNamespace("guarded")))
		return len(policies.Items) == 0 && len(proposals.Items) == 0
	})
}

// apiPolicy names the journey's proposal and then its policy.
var apiPolicy = types.NamespacedName{Namespace: "guarded", Name: policyName}

// scrape sums the samples of a metric on a Prometheus endpoint whose labels
// include the ones given.
// startLeading starts the binary with config, whose collector telemetry is
// at telemetry, and waits until it leads: until it began a term
// (network_enforcer_leader_terms), as a user would see on its metrics.
func startLeading(t *testing.T, config, telemetry string, env ...string) *process {
	t.Helper()
	p := startBinary(t, config, env...)
	waitFor(t, "the collector to lead", time.Minute, func() bool {
		select {
		case <-p.exited:
			t.Fatalf("the collector exited: %v", p.err)
		default:
		}
		return terms(t, telemetry) > 0
	})
	return p
}

func scrape(t *testing.T, addr, name string, labels map[string]string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var n int64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && strings.Contains(line, fmt.Sprintf("%s=%q", k, v))
		}
		if !match {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			n += int64(v)
		}
	}
	return n
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitKubeEvent waits for a Kubernetes Event with reason on obj itself (its
// UID: an earlier object of the same name has Events of its own).
func waitKubeEvent(t *testing.T, obj client.Object, reason string) {
	t.Helper()
	waitFor(t, "the "+reason+" event on "+obj.GetName(), 30*time.Second, func() bool {
		var events corev1.EventList
		must(t, env.Client.List(context.Background(), &events, client.InNamespace(obj.GetNamespace())))
		for _, e := range events.Items {
			if e.InvolvedObject.UID == obj.GetUID() && e.Reason == reason {
				return true
			}
		}
		return false
	})
}
