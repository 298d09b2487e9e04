package flow

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// writeCases are records of every kind of shape: all optional fields set, none,
// a mix, and an end's labels and DNS names none, one and many.
func writeCases() map[string]Record {
	full := Endpoint{"10.0.1.23", 43718, "shop", "web-7c9d8b6f5-x2k9p", "Deployment", "web", "31245",
		[]string{"app=web", "tier=frontend", "version=v2"}, []string{"*.example.com", "api.example.com"}, ExternalWorld}
	return map[string]Record{
		"none": {},
		"all": {Time: time.Date(2026, 3, 2, 10, 15, 7, 512347190, time.UTC), Provider: ProviderCalico, Outcome: OutcomeDenied,
			PendingOutcome: OutcomeAllowed, Reporter: ReporterBoth, Direction: DirectionEgress, Transport: TransportSCTP,
			Policy: PolicyRef{"NetworkPolicy", "shop", "deny"}, PendingPolicy: PolicyRef{"StagedNetworkPolicy", "shop", "allow"},
			Source: full, Destination: full, Count: 7},
		"hubble": benchRecord(),
		"external destination": {Provider: ProviderCilium, Outcome: OutcomeAllowed, Transport: TransportUDP,
			Source:      Endpoint{Address: "10.0.0.1", Namespace: "shop", Pod: "web", Labels: []string{"app=web"}},
			Destination: Endpoint{Address: "203.0.113.9", Port: 443, Names: []string{"api.example.com"}, External: ExternalWorld}},
		"istio": {Provider: ProviderIstio, Outcome: OutcomeDenied, Reporter: ReporterDestination, Direction: DirectionIngress,
			Policy:      PolicyRef{Kind: "AuthorizationPolicy", Namespace: "shop", Name: "deny"},
			Source:      Endpoint{Identity: "cluster.local/ns/shop/sa/web"},
			Destination: Endpoint{Port: 8080, Labels: []string{}, Names: []string{}}, Count: -3},
		"policy name only": {Policy: PolicyRef{Name: "p"}, PendingPolicy: PolicyRef{Namespace: "n"},
			Source: Endpoint{Port: 1}, Destination: Endpoint{WorkloadName: "w", External: ExternalHost}},
	}
}

// attributeList is a map's attributes in order, as key=value with the value's type.
func attributeList(m pcommon.Map) []string {
	var out []string
	for k, v := range m.All() {
		out = append(out, fmt.Sprintf("%s=%s(%s)", k, v.Type(), v.AsString()))
	}
	return out
}

// TestWriteToPutsWhatPutWould: WriteTo's record is the one that putting each
// attribute in turn gives: the same keys, in the same order, with the same
// values, and the same log record fields.
func TestWriteToPutsWhatPutWould(t *testing.T) {
	for name, r := range writeCases() {
		t.Run(name, func(t *testing.T) {
			want := plog.NewLogRecord()
			r.writeByPut(want)
			// A record written over another keeps none of its attributes.
			got := plog.NewLogRecord()
			got.Attributes().PutStr("stale", "x")
			got.Attributes().PutInt(AttrProvider, 9)
			r.WriteTo(got)
			if g, w := attributeList(got.Attributes()), attributeList(want.Attributes()); fmt.Sprint(g) != fmt.Sprint(w) {
				t.Fatalf("attributes\n got %q\nwant %q", g, w)
			}
			if got.EventName() != want.EventName() || got.Timestamp() != want.Timestamp() || got.SeverityNumber() != want.SeverityNumber() {
				t.Fatalf("log record fields differ: %v %v %v", got.EventName(), got.Timestamp(), got.SeverityNumber())
			}
			// The template that the record was copied from is left as it was.
			var a attrValues
			a.collect(&r)
			for _, v := range templateOf(a.shape).All() {
				if v.AsString() != "" && v.AsString() != "0" {
					t.Fatalf("the template of %s changed: %v", name, attributeList(templateOf(a.shape)))
				}
			}
		})
	}
}

// TestWriteToPastTheTemplateBound: a shape that comes after the cache is full
// is written alike, without a stored template.
func TestWriteToPastTheTemplateBound(t *testing.T) {
	n := templates.n.Load()
	templates.n.Store(maxTemplates)
	t.Cleanup(func() { templates.n.Store(n) })
	r := Record{Outcome: OutcomeAudit, Source: Endpoint{Pod: "p", Identity: "i"}, PendingPolicy: PolicyRef{Kind: "k"}}
	var a attrValues
	a.collect(&r)
	if _, ok := templates.m.Load(a.shape); ok {
		t.Fatal("the shape has a template already: pick another")
	}
	want, got := plog.NewLogRecord(), plog.NewLogRecord()
	r.writeByPut(want)
	r.WriteTo(got)
	if g, w := attributeList(got.Attributes()), attributeList(want.Attributes()); fmt.Sprint(g) != fmt.Sprint(w) {
		t.Fatalf("attributes\n got %q\nwant %q", g, w)
	}
	if _, ok := templates.m.Load(a.shape); ok {
		t.Fatal("a template was stored past the bound")
	}
}

// TestWriteToConcurrently: receivers write records at once through the
// shared templates (run with -race), each getting its own record's attributes.
func TestWriteToConcurrently(t *testing.T) {
	cases := writeCases()
	want := map[string]string{}
	for name, r := range cases {
		lr := plog.NewLogRecord()
		r.writeByPut(lr)
		want[name] = fmt.Sprint(attributeList(lr.Attributes()))
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				for name, r := range cases {
					lr := plog.NewLogRecord()
					r.WriteTo(lr)
					if got := fmt.Sprint(attributeList(lr.Attributes())); got != want[name] {
						t.Errorf("%s: got %s, want %s", name, got, want[name])
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
