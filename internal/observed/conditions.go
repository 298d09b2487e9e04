package observed

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubewarden/network-enforcer/api/v1alpha1"
)

// classOrder is the order in which a WouldBlock message names peer classes.
var classOrder = []v1alpha1.PeerClass{
	v1alpha1.PeerClassWorkload, v1alpha1.PeerClassExternal, v1alpha1.PeerClassHost, v1alpha1.PeerClassRemoteNode, v1alpha1.PeerClassNode,
	v1alpha1.PeerClassAPIServer, v1alpha1.PeerClassBarePod, v1alpha1.PeerClassUnidentified,
}

// WouldBlockCondition is the WouldBlock condition of an update, for an object
// of generation: "protect would block 3 observed edges: 2 External, 1 Host",
// or, past the tracking limit, "protect would block about 200,000 observed
// edges: about 199,000 External, 3 Host; 1,022 of them tracked; tracking
// limit 1,024 reached". why, when not nil, says for each blocked class why
// ("... 1 APIServer (Cilium does not select ...)").
func (u *Update) WouldBlockCondition(generation int64, why func(v1alpha1.PeerClass) string) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionWouldBlock, ObservedGeneration: generation}
	n := int(u.Traffic.WouldBlockEdges)
	if n == 0 {
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonObservedAllowed
		c.Message = fmt.Sprintf("the spec allows all %s observed %s", u.count(int(u.Traffic.ObservedEdges), u.Traffic.Estimated), edges(int(u.Traffic.ObservedEdges)))
		return c
	}
	var parts []string
	for _, class := range classOrder {
		if m := u.WouldBlock[class]; m > 0 {
			part := u.count(m, u.estimated[class]) + " " + string(class)
			if why != nil {
				part += " (" + why(class) + ")"
			}
			parts = append(parts, part)
		}
	}
	c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonObservedWouldBlock
	c.Message = fmt.Sprintf("protect would block %s observed %s: %s", u.count(n, u.Traffic.Estimated), edges(n), strings.Join(parts, ", "))
	if u.Traffic.Estimated {
		c.Message += fmt.Sprintf("; %s of them tracked", thousands(u.tracked))
	}
	if u.limit > 0 {
		c.Message += fmt.Sprintf("; tracking limit %s reached", thousands(u.limit))
	}
	return c
}

// EvidenceCompleteCondition is the EvidenceComplete condition of an update,
// for an object of generation: whether its counts are exact.
func (u *Update) EvidenceCompleteCondition(generation int64) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionEvidenceComplete, ObservedGeneration: generation}
	switch {
	case !u.Traffic.Estimated:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonAllTracked
		c.Message = "every observed edge is tracked: the counts are exact"
	case u.limit > 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonTrackingLimit
		c.Message = fmt.Sprintf("tracking limit %s reached: about %s observed edges are counted by estimate only (within about %.3g %%)",
			thousands(u.limit), round(u.notTracked), 100*StandardError)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonNotTracked
		c.Message = fmt.Sprintf("about %s observed edges, counted by an earlier writer and not listed, are counted by estimate only until they are seen again",
			round(u.notTracked))
	}
	return c
}

// count says n, "about n" rounded to three figures when it is an estimate.
func (u *Update) count(n int, estimated bool) string {
	if estimated {
		return "about " + round(n)
	}
	return thousands(n)
}

// round is n to three significant figures, as an estimate within a few
// percent deserves: 199,873 is "200,000".
func round(n int) string {
	p := 1
	for n/p >= 1000 {
		p *= 10
	}
	return thousands((n + p/2) / p * p)
}

// thousands writes n with its thousands separated: 1,024.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func edges(n int) string {
	if n == 1 {
		return "edge"
	}
	return "edges"
}

// MergeRuleUse adds the update's rule use to cur, the status's, for the
// rules the spec has now (names lists them in order); the use of a rule that
// the spec no longer has goes.
func (u *Update) MergeRuleUse(cur []v1alpha1.RuleUse, names []string) []v1alpha1.RuleUse {
	out := make([]v1alpha1.RuleUse, 0, len(names))
	for _, name := range names {
		r := v1alpha1.RuleUse{Rule: name}
		if i := slices.IndexFunc(cur, func(c v1alpha1.RuleUse) bool { return c.Rule == name }); i >= 0 {
			r = *cur[i].DeepCopy()
		}
		if use, ok := u.Rules[name]; ok {
			r.Flows += use.Flows
			if r.LastUsed == nil || use.Last.After(r.LastUsed.Time) {
				t := seconds(use.Last)
				r.LastUsed = &t
			}
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// UnusedRulesCondition is the UnusedRules condition of rules, the rule use of
// a policy created at created, at now: a rule is unused when it was last used
// (or, never used, the policy was created) more than age ago. It marks each
// such rule Unused (and the others not), so that the condition and the
// policy's amendment, which removes them, say the same. next is when the
// next rule turns unused, zero when none will without a change.
func UnusedRulesCondition(rules []v1alpha1.RuleUse, created, now time.Time, age time.Duration, generation int64) (c metav1.Condition, next time.Time) {
	c = metav1.Condition{Type: v1alpha1.ConditionUnusedRules, ObservedGeneration: generation}
	var unused []string
	for i := range rules {
		r := &rules[i]
		since := created
		if r.LastUsed != nil {
			since = r.LastUsed.Time
		}
		turns := since.Add(age)
		r.Unused = !turns.After(now)
		if r.Unused {
			if r.LastUsed == nil {
				unused = append(unused, r.Rule+" (never used)")
			} else {
				unused = append(unused, fmt.Sprintf("%s (last used %s)", r.Rule, r.LastUsed.UTC().Format(time.RFC3339)))
			}
		} else if next.IsZero() || turns.Before(next) {
			next = turns
		}
	}
	if len(unused) == 0 {
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonRulesUsed
		c.Message = "every rule was used in the last " + ageText(age)
		return c, next
	}
	c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonRulesUnused
	c.Message = fmt.Sprintf("%d %s not used in the last %s: %s", len(unused), plural(len(unused), "rule", "rules"), ageText(age), strings.Join(unused, ", "))
	return c, next
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ageText says an age as a person would: 7 days, 12h0m0s.
func ageText(age time.Duration) string {
	const day = 24 * time.Hour
	if age >= day && age%day == 0 {
		return fmt.Sprintf("%d %s", age/day, plural(int(age/day), "day", "days"))
	}
	return age.String()
}
