package flow

import (
	"reflect"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
)

func TestRecordRoundTrip(t *testing.T) {
	in := Record{
		Time:      time.Date(2026, 3, 2, 10, 15, 7, 512347190, time.UTC),
		Provider:  ProviderCalico,
		Outcome:   OutcomeDenied,
		Reporter:  ReporterSource,
		Direction: DirectionEgress,
		Transport: TransportTCP,
		Source: Endpoint{Address: "10.0.1.23", Port: 43718, Namespace: "shop", Pod: "web-7c9d8b6f5-*",
			WorkloadKind: "Deployment", WorkloadName: "web", Labels: []string{"app=web", "tier=frontend"}},
		Destination: Endpoint{Address: "203.0.113.9", Port: 443, Names: []string{"api.example.com", "cdn.example.com"},
			External: ExternalNetwork},
		Policy:         PolicyRef{Kind: "NetworkPolicy", Namespace: "shop", Name: "deny-egress"},
		PendingOutcome: OutcomeAllowed,
		PendingPolicy:  PolicyRef{Kind: "StagedNetworkPolicy", Namespace: "shop", Name: "allow"},
		Count:          3,
	}
	lr := plog.NewLogRecord()
	in.WriteTo(lr)
	if lr.EventName() != EventName {
		t.Fatalf("event name %q", lr.EventName())
	}
	var out Record
	out.ReadFrom(lr)
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", out, in)
	}
	if v, _ := lr.Attributes().Get("destination.port"); v.Int() != 443 {
		t.Fatalf("destination.port = %v", v.AsRaw())
	}
	if v, _ := lr.Attributes().Get("source.k8s.pod.labels"); v.Str() != "app=web,tier=frontend" {
		t.Fatalf("source.k8s.pod.labels = %v", v.AsRaw())
	}
	if v, _ := lr.Attributes().Get("destination.dns.names"); v.Str() != "api.example.com,cdn.example.com" {
		t.Fatalf("destination.dns.names = %v", v.AsRaw())
	}
	for _, k := range []string{"destination.k8s.pod.name", "source.dns.names"} {
		if _, ok := lr.Attributes().Get(k); ok {
			t.Fatalf("an unknown value was written as an attribute: %s", k)
		}
	}
}

func TestCountDefaultsToOne(t *testing.T) {
	lr := plog.NewLogRecord()
	(&Record{Outcome: OutcomeAllowed}).WriteTo(lr)
	if v, _ := lr.Attributes().Get(AttrCount); v.Int() != 1 {
		t.Fatalf("flow.count = %v, want 1", v.AsRaw())
	}
}

// ReadSkippingLabels reads all of a record but its labels: the ends' DNS
// names too, which learning needs.
func TestReadSkippingLabels(t *testing.T) {
	in := benchRecord()
	in.Destination = Endpoint{Address: "203.0.113.9", Port: 443, Identity: "2",
		Names: []string{"api.example.com", "cdn.example.com"}, External: ExternalWorld}
	lr := plog.NewLogRecord()
	in.WriteTo(lr)
	var out Record
	out.ReadSkippingLabels(lr)
	in.Source.Labels = nil
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("got %+v\nwant %+v", out, in)
	}
	// A record without names read into the same Record leaves none of the
	// previous record's.
	noNames := benchRecord()
	noNames.WriteTo(lr)
	out.ReadSkippingLabels(lr)
	if out.Source.Names != nil || out.Destination.Names != nil {
		t.Fatalf("names %q, %q left from the previous record", out.Source.Names, out.Destination.Names)
	}
}

// Records of earlier versions have the labels as a slice.
func TestReadsLabelsAsASlice(t *testing.T) {
	lr := plog.NewLogRecord()
	s := lr.Attributes().PutEmptySlice("source.k8s.pod.labels")
	s.AppendEmpty().SetStr("app=web")
	s.AppendEmpty().SetStr("tier=frontend")
	var r Record
	r.ReadFrom(lr)
	if !reflect.DeepEqual(r.Source.Labels, []string{"app=web", "tier=frontend"}) {
		t.Fatalf("labels %q", r.Source.Labels)
	}
}
