package violationprocessor

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

func key(src string, port int32, action v1alpha1.PolicyMode) recordKey { //nolint:unparam // port: a record's key has one, though these tests need only port 80.
	return recordKey{
		Source:      v1alpha1.ViolationEndpoint{Namespace: "shop", Kind: "Deployment", Name: src},
		Destination: v1alpha1.ViolationEndpoint{Namespace: "shop", Kind: "Deployment", Name: "web"},
		Protocol:    corev1.ProtocolTCP, DstPort: port, Action: action,
		Policy: v1alpha1.PolicyReference{Namespace: "shop", Name: "deployment-web-ingress"},
	}
}

func at(d time.Duration, count int64) *pending {
	return &pending{first: t0.Add(d), last: t0.Add(d), count: count}
}

func TestMergeGivesIDsAndCounts(t *testing.T) {
	var st v1alpha1.WorkloadNetworkPolicyStatus
	merge(&st, map[recordKey]*pending{
		key("a", 80, v1alpha1.PolicyModeMonitor): at(2*time.Second, 3),
		key("b", 80, v1alpha1.PolicyModeMonitor): at(time.Second, 1),
	})
	// b was seen first, so it gets id 1; newest first puts a on top.
	if got := ids(&st); got != "2 1" {
		t.Fatalf("ids %q, want \"2 1\"", got)
	}
	if st.Violations[0].Source.Name != "a" || st.ViolationCount != 4 || st.ActiveViolationCount != 2 || st.LastViolationID != 2 {
		t.Fatalf("status %+v", st)
	}

	// A repeat refreshes a's timestamp only; a new action is a new record.
	merge(&st, map[recordKey]*pending{
		key("b", 80, v1alpha1.PolicyModeMonitor): at(10*time.Second, 2),
		key("b", 80, v1alpha1.PolicyModeProtect): at(5*time.Second, 1),
	})
	if got := ids(&st); got != "1 3 2" {
		t.Fatalf("ids %q, want \"1 3 2\"", got)
	}
	if !st.Violations[0].Timestamp.Time.Equal(t0.Add(10*time.Second)) || st.ViolationCount != 7 || st.ActiveViolationCount != 3 {
		t.Fatalf("status %+v", st)
	}
}

func TestMergeKeepsTheNewest100(t *testing.T) {
	var st v1alpha1.WorkloadNetworkPolicyStatus
	records := map[recordKey]*pending{}
	for i := range 130 {
		records[key(fmt.Sprint("src-", i), 80, v1alpha1.PolicyModeProtect)] = at(time.Duration(i)*time.Second, 1)
	}
	merge(&st, records)
	if len(st.Violations) != v1alpha1.MaxViolationRecords || st.ActiveViolationCount != 100 || st.ViolationCount != 130 {
		t.Fatalf("%d records, active %d, count %d", len(st.Violations), st.ActiveViolationCount, st.ViolationCount)
	}
	if st.Violations[0].ID != "130" || st.Violations[99].ID != "31" || st.Violations[0].Source.Name != "src-129" {
		t.Fatalf("kept %s..%s (%s)", st.Violations[0].ID, st.Violations[99].ID, st.Violations[0].Source.Name)
	}
	// An id is never given twice, even once its record has dropped out.
	merge(&st, map[recordKey]*pending{key("late", 80, v1alpha1.PolicyModeProtect): at(time.Hour, 1)})
	if st.Violations[0].ID != "131" {
		t.Fatalf("new id %s, want 131", st.Violations[0].ID)
	}
}

func TestAcknowledge(t *testing.T) {
	var st v1alpha1.WorkloadNetworkPolicyStatus
	merge(&st, map[recordKey]*pending{
		key("a", 80, v1alpha1.PolicyModeMonitor): at(time.Second, 1),
		key("b", 80, v1alpha1.PolicyModeMonitor): at(2*time.Second, 1),
	})
	now := t0.Add(time.Minute)
	acks := acknowledge(&st, map[string]string{
		v1alpha1.AcknowledgeAnnotation("1"): "expected: batch job",
		v1alpha1.AcknowledgeAnnotation("9"): "typo",
		"unrelated":                         "x",
	}, now)
	if len(acks.moved) != 1 || acks.moved[0].Violation.ID != "1" || acks.moved[0].Reason != "expected: batch job" {
		t.Fatalf("moved %+v", acks.moved)
	}
	if fmt.Sprint(acks.done) != "[networkenforcer.kubewarden.io/acknowledge-1]" || fmt.Sprint(acks.unknown) != "[9]" {
		t.Fatalf("done %v unknown %v", acks.done, acks.unknown)
	}
	if ids(&st) != "2" || st.ActiveViolationCount != 1 || len(st.AcknowledgedViolations) != 1 ||
		!st.AcknowledgedViolations[0].AcknowledgedAt.Time.Equal(now) {
		t.Fatalf("status %+v", st)
	}
	// The annotation outlived the sync that applied it: it is removed, and
	// nothing moves twice.
	acks = acknowledge(&st, map[string]string{v1alpha1.AcknowledgeAnnotation("1"): "expected: batch job"}, now)
	if len(acks.moved) != 0 || len(acks.done) != 1 || len(acks.unknown) != 0 || len(st.AcknowledgedViolations) != 1 {
		t.Fatalf("second pass %+v, status %+v", acks, st)
	}
	// A repeat of an acknowledged violation is active again, with a new id.
	merge(&st, map[recordKey]*pending{key("a", 80, v1alpha1.PolicyModeMonitor): at(time.Hour, 1)})
	if ids(&st) != "3 2" {
		t.Fatalf("ids %q, want \"3 2\"", ids(&st))
	}
}

func TestAcknowledgedKeepsTheNewest100(t *testing.T) {
	var st v1alpha1.WorkloadNetworkPolicyStatus
	for round := range 3 {
		records := map[recordKey]*pending{}
		annotations := map[string]string{}
		for i := range 50 {
			records[key(fmt.Sprint(round, "-", i), 80, v1alpha1.PolicyModeProtect)] = at(time.Duration(round*50+i)*time.Second, 1)
			annotations[v1alpha1.AcknowledgeAnnotation(strconv.Itoa(round*50+i+1))] = "ok"
		}
		merge(&st, records)
		acknowledge(&st, annotations, t0.Add(time.Duration(round)*time.Hour))
	}
	if len(st.AcknowledgedViolations) != 100 || len(st.Violations) != 0 || st.ActiveViolationCount != 0 {
		t.Fatalf("%d acknowledged, %d active", len(st.AcknowledgedViolations), len(st.Violations))
	}
	if !st.AcknowledgedViolations[0].AcknowledgedAt.Time.Equal(t0.Add(2*time.Hour)) ||
		!st.AcknowledgedViolations[99].AcknowledgedAt.Time.Equal(t0.Add(time.Hour)) {
		t.Fatal("the oldest acknowledgements were kept")
	}
}

func TestBufferIsBounded(t *testing.T) {
	b := newBuffer(2)
	o := func(src string) *observation {
		return &observation{key: key(src, 80, v1alpha1.PolicyModeProtect), time: t0, count: 1}
	}
	added := func(o *observation) bool { ok, _ := b.add(o); return ok }
	if ok, first := b.add(o("a")); !ok || !first {
		t.Fatal("the policy's first record was refused or not reported as its first")
	}
	if !added(o("b")) || !added(o("a")) {
		t.Fatal("the buffer refused what fits")
	}
	if added(o("c")) {
		t.Fatal("a third record fit in a buffer of two")
	}
	taken := b.take(o("a").policy)
	if n := countOf(taken); n != 3 {
		t.Fatalf("buffered %d observations, want 3", n)
	}
	if ok, first := b.add(o("c")); !ok || !first {
		t.Fatal("take did not empty the buffer, or the record after it was not the policy's first")
	}
	// Beside c, one of a (2 observations) and b (1) fits back; the other's
	// observations are dropped and counted.
	dropped := b.putBack(o("a").policy, taken)
	kept := countOf(b.take(o("a").policy))
	if dropped+kept != 4 || (dropped != 1 && dropped != 2) {
		t.Fatalf("putBack dropped %d and kept %d observations, want one of a and b dropped and 4 in all", dropped, kept)
	}
}

func ids(st *v1alpha1.WorkloadNetworkPolicyStatus) string {
	out := make([]string, 0, len(st.Violations))
	for _, r := range st.Violations {
		out = append(out, r.ID)
	}
	return strings.Join(out, " ")
}
