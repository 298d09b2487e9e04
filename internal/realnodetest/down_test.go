package realnodetest

import (
	"slices"
	"strings"
	"testing"
)

func TestShellWordsSplitsARuleAsIptablesPrintsIt(t *testing.T) {
	for _, tc := range []struct {
		rule string
		want []string
	}{
		{
			`-A FORWARD -m comment --comment "kube-router netpol - TEMCG2JMHZYE7H7T" -j KUBE-ROUTER-FORWARD`,
			[]string{"-A", "FORWARD", "-m", "comment", "--comment", "kube-router netpol - TEMCG2JMHZYE7H7T", "-j", "KUBE-ROUTER-FORWARD"},
		},
		{
			`-A INPUT -m comment --comment "a \"quoted\" word" -j CILIUM_INPUT`,
			[]string{"-A", "INPUT", "-m", "comment", "--comment", `a "quoted" word`, "-j", "CILIUM_INPUT"},
		},
		{`-A OUTPUT  -j CNI-HOSTPORT-DNAT`, []string{"-A", "OUTPUT", "-j", "CNI-HOSTPORT-DNAT"}},
		{`-A POSTROUTING -m comment --comment "" -j KUBE-POSTROUTING`, []string{"-A", "POSTROUTING", "-m", "comment", "--comment", "", "-j", "KUBE-POSTROUTING"}},
	} {
		if got := shellWords(tc.rule); !slices.Equal(got, tc.want) {
			t.Errorf("shellWords(%q) = %q, want %q", tc.rule, got, tc.want)
		}
	}
}

// FuzzShellWords: any line of iptables -S output splits without a panic, and
// one without quotes or backslashes splits at its spaces.
func FuzzShellWords(f *testing.F) {
	f.Add(`-A FORWARD -m comment --comment "kube-router netpol" -j KUBE-ROUTER-FORWARD`)
	f.Add(`-A INPUT -j CILIUM_INPUT`)
	f.Add(`"unterminated \`)
	f.Fuzz(func(t *testing.T, rule string) {
		got := shellWords(rule)
		if strings.ContainsAny(rule, `"\`) {
			return
		}
		want := slices.DeleteFunc(strings.Split(rule, " "), func(w string) bool { return w == "" })
		if !slices.Equal(got, want) {
			t.Errorf("shellWords(%q) = %q, want %q", rule, got, want)
		}
	})
}
