package membership

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// rendezvousKeys are node names as a cluster has them.
func rendezvousKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", i/250, i%250)
	}
	return keys
}

func rendezvousMembers(n int) []string {
	members := make([]string, n)
	for i := range members {
		members[i] = fmt.Sprintf("network-enforcer-7d9f8c6b5-%c%c%c%c%c_%08x-1c2d-4e5f-8a9b-0c1d2e3f4a5b", 'a'+i, 'k'+i, 'q'+i, 'w'+i, 'z'-i, i)
	}
	return members
}

// TestRendezvousSpreadsKeysEvenly: with 1 to 5 members every member owns
// close to its fair share of 10,000 keys (within 10%, five standard
// deviations of a fair draw).
func TestRendezvousSpreadsKeysEvenly(t *testing.T) {
	keys := rendezvousKeys(10000)
	for n := 1; n <= 5; n++ {
		members := rendezvousMembers(n)
		count := map[string]int{}
		for _, k := range keys {
			count[rendezvousOwner(members, k)]++
		}
		fair := float64(len(keys)) / float64(n)
		for _, m := range members {
			if got := float64(count[m]); got < 0.9*fair || got > 1.1*fair {
				t.Errorf("%d members: %s owns %d keys, fair is %.0f", n, m, count[m], fair)
			}
		}
		if len(count) != n {
			t.Errorf("%d members: owners %v", n, count)
		}
	}
}

// TestRendezvousRemovingMovesOnlyItsKeys: when a member goes, only its keys
// change owner, and when it comes back, only those come back to it.
func TestRendezvousRemovingMovesOnlyItsKeys(t *testing.T) {
	keys := rendezvousKeys(5000)
	all := rendezvousMembers(5)
	for gone := range all {
		rest := append(append([]string{}, all[:gone]...), all[gone+1:]...)
		moved := 0
		for _, k := range keys {
			before, after := rendezvousOwner(all, k), rendezvousOwner(rest, k)
			if before != all[gone] && before != after {
				t.Fatalf("key %s moved from %s to %s when %s left", k, before, after, all[gone])
			}
			if before == all[gone] {
				moved++
				if after == all[gone] {
					t.Fatalf("key %s still owned by the member that left", k)
				}
			}
		}
		if moved == 0 {
			t.Fatalf("member %d owned no key", gone)
		}
	}
}

// TestRendezvousIsDeterministic: the owner depends on the members, not on
// their order, and the weight is the same in every process (a fixed value).
func TestRendezvousIsDeterministic(t *testing.T) {
	members := rendezvousMembers(4)
	reversed := []string{members[3], members[2], members[1], members[0]}
	for _, k := range rendezvousKeys(500) {
		if a, b := rendezvousOwner(members, k), rendezvousOwner(reversed, k); a != b {
			t.Fatalf("key %s: %s in one order, %s in another", k, a, b)
		}
	}
	if rendezvousOwner(nil, "node") != "" {
		t.Fatal("an owner without members")
	}
	// FNV-1a 64 of "a\x00b" with splitmix64's finish, computed once: a
	// change here moves every key of a running cluster during an upgrade.
	if got, want := rendezvousWeight("a", "b"), uint64(rendezvousGolden); got != want {
		t.Fatalf("rendezvousWeight(a, b) = %#x, want %#x", got, want)
	}
}

// TestMemberLeaseName: names of any length give a valid name of at most 63
// characters, and long names that share their beginning stay distinct.
func TestMemberLeaseName(t *testing.T) {
	if got := memberLeaseName("network-enforcer", "network-enforcer-7d9f8c6b5-abcde"); got != "network-enforcer-member-network-enforcer-7d9f8c6b5-abcde" {
		t.Fatalf("short name changed: %s", got)
	}
	long := strings.Repeat("enforcer.", 20) + "x"
	a, b := memberLeaseName(long, "pod-a"), memberLeaseName(long, "pod-b")
	for _, n := range []string{a, b, shortName(long)} {
		if len(n) > maxNameLength {
			t.Errorf("%s: %d characters", n, len(n))
		}
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			t.Errorf("%s: %v", n, errs)
		}
		if errs := validation.IsValidLabelValue(n); len(errs) > 0 {
			t.Errorf("%s as a label value: %v", n, errs)
		}
	}
	if a == b {
		t.Fatalf("two replicas share the Lease %s", a)
	}
}

// rendezvousGolden is rendezvousWeight("a", "b"), computed apart from the code.
const rendezvousGolden = 0xeb38c838c62d597e
