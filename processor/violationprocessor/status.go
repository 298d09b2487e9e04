package violationprocessor

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// merge merges buffered records into a policy status: a record already active
// only has its timestamp refreshed; a new one gets the next id. violations is
// newest first and keeps the newest MaxViolationRecords; violationCount grows by
// every observation.
func merge(st *v1alpha1.WorkloadNetworkPolicyStatus, records map[recordKey]*pending) {
	st.LastViolationID = max(st.LastViolationID, highestID(st))
	active := make(map[recordKey]int, len(st.Violations))
	for i := range st.Violations {
		active[keyOf(&st.Violations[i])] = i
	}
	// New records get their ids in the order they were first seen.
	keys := slices.SortedFunc(maps.Keys(records), func(a, b recordKey) int {
		return cmp.Or(records[a].first.Compare(records[b].first), strings.Compare(fmt.Sprint(a), fmt.Sprint(b)))
	})
	for _, k := range keys {
		p := records[k]
		st.ViolationCount += p.count
		if i, ok := active[k]; ok {
			if r := &st.Violations[i]; p.last.After(r.Timestamp.Time) {
				r.Timestamp.Time = p.last.UTC().Truncate(time.Second)
			}
			continue
		}
		st.LastViolationID++
		r := k.record(p.last)
		r.ID = strconv.FormatInt(st.LastViolationID, 10)
		st.Violations = append(st.Violations, r)
		active[k] = len(st.Violations) - 1
	}
	slices.SortStableFunc(st.Violations, newestFirst)
	st.Violations = st.Violations[:min(len(st.Violations), v1alpha1.MaxViolationRecords)]
	st.ActiveViolationCount = int32(len(st.Violations))
}

// newestFirst orders records by timestamp, then by id, newest first.
func newestFirst(a, b v1alpha1.ViolationRecord) int {
	return cmp.Or(b.Timestamp.Compare(a.Timestamp.Time), cmp.Compare(idNumber(b.ID), idNumber(a.ID)))
}

// highestID is the highest id in the status: a status written without
// lastViolationID still never has an id reused.
func highestID(st *v1alpha1.WorkloadNetworkPolicyStatus) int64 {
	var n int64
	for i := range st.Violations {
		n = max(n, idNumber(st.Violations[i].ID))
	}
	for i := range st.AcknowledgedViolations {
		n = max(n, idNumber(st.AcknowledgedViolations[i].Violation.ID))
	}
	return n
}

func idNumber(id string) int64 {
	n, _ := strconv.ParseInt(id, 10, 64)
	return n
}

// acknowledgements is the outcome of applying a policy's acknowledge
// annotations to its status.
type acknowledgements struct {
	// moved are the records moved to acknowledgedViolations.
	moved []v1alpha1.AcknowledgedViolation
	// done are the annotations to remove once the status is written: those
	// applied now, and those whose record an earlier sync moved already.
	done []string
	// unknown are the ids that name no record; their annotations stay.
	unknown []string
}

// acknowledge moves each record that an acknowledge annotation names to
// acknowledgedViolations, newest first, keeping MaxViolationRecords.
func acknowledge(st *v1alpha1.WorkloadNetworkPolicyStatus, annotations map[string]string, now time.Time) acknowledgements {
	var out acknowledgements
	for _, key := range slices.Sorted(maps.Keys(annotations)) {
		id, ok := strings.CutPrefix(key, v1alpha1.AcknowledgeAnnotationPrefix)
		if !ok {
			continue
		}
		i := slices.IndexFunc(st.Violations, func(r v1alpha1.ViolationRecord) bool { return r.ID == id })
		if i < 0 {
			if slices.ContainsFunc(st.AcknowledgedViolations, func(a v1alpha1.AcknowledgedViolation) bool { return a.Violation.ID == id }) {
				out.done = append(out.done, key)
			} else {
				out.unknown = append(out.unknown, id)
			}
			continue
		}
		a := v1alpha1.AcknowledgedViolation{Violation: st.Violations[i], Reason: annotations[key], AcknowledgedAt: metav1.NewTime(now.UTC().Truncate(time.Second))}
		st.Violations = slices.Delete(st.Violations, i, i+1)
		st.AcknowledgedViolations = append([]v1alpha1.AcknowledgedViolation{a}, st.AcknowledgedViolations...)
		out.moved = append(out.moved, a)
		out.done = append(out.done, key)
	}
	st.AcknowledgedViolations = st.AcknowledgedViolations[:min(len(st.AcknowledgedViolations), v1alpha1.MaxViolationRecords)]
	st.ActiveViolationCount = int32(len(st.Violations))
	return out
}
