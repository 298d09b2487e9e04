package charttest

import (
	"reflect"
	"testing"
)

func TestQuickstartInstalls(t *testing.T) {
	readme := "# X\n\n```sh\nhelm install early ./chart\n```\n\n## Quickstart on a cluster\n\nText.\n\n```sh\n" +
		"# a comment\nhelm install a ./chart -n ns \\\n  --set controller.provider.name=calico\n\nkubectl get wnpp -A\n" +
		"helm install b ./chart\n```\n\n### Later\n\n```sh\nhelm install late ./chart\n```\n"
	got, err := QuickstartInstalls(readme)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"helm", "install", "a", "./chart", "-n", "ns", "--set", "controller.provider.name=calico"},
		{"helm", "install", "b", "./chart"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("QuickstartInstalls: %q, want %q", got, want)
	}
	if p := ProviderOf(got[0]); p != "calico" {
		t.Errorf("ProviderOf %q: %s", got[0], p)
	}
	if p := ProviderOf(got[1]); p != "istio" {
		t.Errorf("ProviderOf %q: %s", got[1], p)
	}
	if _, err := QuickstartInstalls("# X\n## Install\n"); err == nil {
		t.Error("a README without the section: no error")
	}
}
