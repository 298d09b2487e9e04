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
		Destination:    Endpoint{Address: "203.0.113.9", Port: 443, External: ExternalNetwork},
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
	if _, ok := lr.Attributes().Get("destination.k8s.pod.name"); ok {
		t.Fatal("an unknown value was written as an attribute")
	}
}

func TestCountDefaultsToOne(t *testing.T) {
	lr := plog.NewLogRecord()
	(&Record{Outcome: OutcomeAllowed}).WriteTo(lr)
	if v, _ := lr.Attributes().Get(AttrCount); v.Int() != 1 {
		t.Fatalf("flow.count = %v, want 1", v.AsRaw())
	}
}

// ReadSkippingLabels reads all of a record but its labels.
func TestReadSkippingLabels(t *testing.T) {
	in := benchRecord()
	lr := plog.NewLogRecord()
	in.WriteTo(lr)
	var out Record
	out.ReadSkippingLabels(lr)
	in.Source.Labels, in.Destination.Labels = nil, nil
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("got %+v\nwant %+v", out, in)
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
