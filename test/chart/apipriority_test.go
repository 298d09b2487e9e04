package chart

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubewarden/network-enforcer/internal/charttest"
	"github.com/kubewarden/network-enforcer/internal/controlplanetest"
	"github.com/kubewarden/network-enforcer/internal/testwait"
)

// apiPriority returns the rendered PriorityLevelConfiguration and FlowSchema,
// typed; nil when the chart renders neither.
func apiPriority(t *testing.T, r *rendered) (*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.FlowSchema) {
	t.Helper()
	plo, fso := r.get("PriorityLevelConfiguration", "", fullname), r.get("FlowSchema", "", fullname)
	if (plo == nil) != (fso == nil) {
		t.Fatalf("PriorityLevelConfiguration rendered %v, FlowSchema %v: one without the other", plo != nil, fso != nil)
	}
	if plo == nil {
		return nil, nil
	}
	var pl flowcontrolv1.PriorityLevelConfiguration
	var fs flowcontrolv1.FlowSchema
	for _, c := range []struct {
		from *unstructured.Unstructured
		into any
	}{{plo, &pl}, {fso, &fs}} {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(c.from.Object, c.into, true); err != nil {
			t.Fatalf("%s: %v", c.from.GetKind(), err)
		}
	}
	return &pl, &fs
}

// TestAPIPriority: the chart gives the enforcer a priority level of its own,
// Limited with a modest share and queuing, and a FlowSchema that sends it
// exactly the enforcer's ServiceAccount (the one its Deployment runs as),
// ahead of the built-in service-accounts schema; the values tune it or turn
// it off, and the writer's rate limit comes from controller.writer. The API
// server takes both objects.
func TestAPIPriority(t *testing.T) {
	for _, tc := range []struct {
		name       string
		values     map[string]any
		shares     int32 // 0: none rendered
		lendable   int32
		precedence int32
		qps        float64
		burst      int
	}{
		{"defaults", nil, 10, 50, 850, 20, 40},
		{"tuned", vals("controller.apiPriority.nominalConcurrencyShares", 30, "controller.apiPriority.lendablePercent", 0,
			"controller.apiPriority.matchingPrecedence", 500, "controller.writer.qps", 135, "controller.writer.burst", 270), 30, 0, 500, 135, 270},
		{"off", vals("controller.apiPriority.enabled", false), 0, 0, 0, 20, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, tc.values)
			cfg := config(t, r.must(t, "ConfigMap", namespace, fullname+"-config"))
			qps, burst := at(cfg, "exporters", "k8swriter", "write_qps"), at(cfg, "exporters", "k8swriter", "write_burst")
			if fmt.Sprint(qps) != fmt.Sprint(tc.qps) || fmt.Sprint(burst) != strconv.Itoa(tc.burst) {
				t.Errorf("k8swriter write_qps %v, write_burst %v; want %v, %v", qps, burst, tc.qps, tc.burst)
			}
			pl, fs := apiPriority(t, r)
			if tc.shares == 0 {
				if pl != nil {
					t.Fatal("rendered with apiPriority.enabled false")
				}
				return
			}
			if pl == nil {
				t.Fatal("no PriorityLevelConfiguration or FlowSchema rendered")
			}
			l := pl.Spec.Limited
			if pl.Spec.Type != flowcontrolv1.PriorityLevelEnablementLimited || l == nil || l.NominalConcurrencyShares == nil ||
				*l.NominalConcurrencyShares != tc.shares || l.LendablePercent == nil || *l.LendablePercent != tc.lendable ||
				l.BorrowingLimitPercent == nil {
				t.Fatalf("priority level %+v, want Limited with %d shares, %d%% lendable", pl.Spec, tc.shares, tc.lendable)
			}
			if q := l.LimitResponse.Queuing; l.LimitResponse.Type != flowcontrolv1.LimitResponseTypeQueue || q == nil ||
				q.Queues < 1 || q.HandSize < 1 || q.HandSize > q.Queues || q.QueueLengthLimit < 1 {
				t.Fatalf("limit response %+v, want queuing", l.LimitResponse)
			}
			if fs.Spec.PriorityLevelConfiguration.Name != pl.Name {
				t.Errorf("FlowSchema sends to %q, not the chart's level %q", fs.Spec.PriorityLevelConfiguration.Name, pl.Name)
			}
			if fs.Spec.MatchingPrecedence != tc.precedence || fs.Spec.MatchingPrecedence >= 9000 {
				t.Errorf("matchingPrecedence %d, want %d (before service-accounts' 9000)", fs.Spec.MatchingPrecedence, tc.precedence)
			}
			deploy := r.must(t, "Deployment", namespace, fullname)
			sa, _, _ := unstructured.NestedString(deploy.Object, "spec", "template", "spec", "serviceAccountName")
			r.must(t, "ServiceAccount", namespace, sa)
			if len(fs.Spec.Rules) != 1 {
				t.Fatalf("FlowSchema rules %+v, want one", fs.Spec.Rules)
			}
			rule := fs.Spec.Rules[0]
			if len(rule.Subjects) != 1 || rule.Subjects[0].Kind != flowcontrolv1.SubjectKindServiceAccount ||
				rule.Subjects[0].ServiceAccount == nil || *rule.Subjects[0].ServiceAccount != (flowcontrolv1.ServiceAccountSubject{Namespace: namespace, Name: sa}) {
				t.Errorf("FlowSchema subjects %+v, want exactly the enforcer's ServiceAccount %s/%s", rule.Subjects, namespace, sa)
			}
			if len(rule.ResourceRules) != 1 || !rule.ResourceRules[0].ClusterScope || len(rule.NonResourceRules) != 1 {
				t.Errorf("FlowSchema rules %+v, want every request of the ServiceAccount", rule)
			}
			dryRun(t, []*unstructured.Unstructured{r.must(t, "PriorityLevelConfiguration", "", fullname), r.must(t, "FlowSchema", "", fullname)})
		})
	}
	t.Run("handSize over queues", func(t *testing.T) {
		_, err := charttest.Render(context.Background(), release, namespace,
			vals("controller.apiPriority.queuing.handSize", 8, "controller.apiPriority.queuing.queues", 4))
		if err == nil || !strings.Contains(err.Error(), "handSize must be at most") {
			t.Fatalf("a handSize over queues, which the API server refuses: %v", err)
		}
	})
}

// TestAPIPriorityClassifiesTheEnforcer: installed on the test API server, the
// chart's FlowSchema takes the requests of the enforcer's ServiceAccount to
// the chart's priority level, as the API server's answer says (its
// X-Kubernetes-PF-* headers); another ServiceAccount of the namespace stays
// with the built-in schemas.
func TestAPIPriorityClassifiesTheEnforcer(t *testing.T) {
	controlplanetest.Require(t)
	ctx := context.Background()
	r := render(t, nil)
	var uids []string
	for _, kind := range []string{"PriorityLevelConfiguration", "FlowSchema"} {
		o := r.must(t, kind, "", fullname).DeepCopy()
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(ctx, o) })
		uids = append(uids, string(o.GetUID()))
	}
	plUID, fsUID := uids[0], uids[1]
	// classified is the level and schema that the API server put a request
	// of ServiceAccount sa of the release namespace in.
	classified := func(sa string) (pl, fs string) {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + sa,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/api/v1/namespaces/"+namespace+"/configmaps", http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID),
			resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID)
	}
	testwait.For(t, "the API server to classify the enforcer's requests by the chart's FlowSchema", 30*time.Second, func() bool {
		pl, fs := classified(fullname)
		return pl == plUID && fs == fsUID
	})
	if pl, fs := classified("someone-else"); pl == plUID || fs == fsUID {
		t.Errorf("another ServiceAccount's request went to the chart's level (%s, %s)", pl, fs)
	}
	// The level is in use as the chart made it.
	var got flowcontrolv1.PriorityLevelConfiguration
	if err := env.Client.Get(ctx, client.ObjectKey{Name: fullname}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Limited == nil || got.Spec.Limited.NominalConcurrencyShares == nil || *got.Spec.Limited.NominalConcurrencyShares != 10 {
		t.Errorf("the API server holds the level as %+v", got.Spec)
	}
}
