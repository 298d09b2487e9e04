package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/confmap"
	"sigs.k8s.io/yaml"
)

// run runs the root command with args and returns what it printed.
func run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := newCommand(settings())
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// TestHelpListsRender: the root command lists render beside the collector's
// own subcommands, and render's help prints its flags.
func TestHelpListsRender(t *testing.T) {
	cmd := newCommand(settings())
	var names []string
	for _, c := range cmd.Commands() {
		names = append(names, c.Name())
	}
	for _, want := range []string{"render", "components", "validate"} {
		if !slices.Contains(names, want) {
			t.Errorf("subcommands %v, without %s", names, want)
		}
	}

	help := run(t, "--help")
	if !strings.Contains(help, "\n  render ") {
		t.Errorf("--help does not list render:\n%s", help)
	}

	help = run(t, "render", "--help")
	if !strings.Contains(help, "Usage: network-enforcer render [--mode monitor|protect]") {
		t.Errorf("render --help has no usage line:\n%s", help)
	}
	for _, flag := range []string{"--mode", "--diff", "-f, --file", "--kubeconfig", "--context"} {
		if !strings.Contains(help, flag) {
			t.Errorf("render --help without %s:\n%s", flag, help)
		}
	}
}

// TestRenderRuns: render, as the root command runs it, reads its flags and
// prints a native object.
func TestRenderRuns(t *testing.T) {
	out := run(t, "render", "--mode", "protect", "-f", "../../internal/rendercmd/testdata/proposal.yaml")
	want, err := os.ReadFile("../../internal/rendercmd/testdata/proposal.protect.golden.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("render printed\n%s\nwant\n%s", out, want)
	}
}

// TestComponents: the components that ocb generated from builder-config.yaml
// build, and the collector's components subcommand lists them.
func TestComponents(t *testing.T) {
	factories, err := components()
	if err != nil {
		t.Fatal(err)
	}
	if len(factories.Receivers) == 0 || len(factories.Processors) == 0 || len(factories.Exporters) == 0 ||
		len(factories.Extensions) == 0 || len(factories.Connectors) == 0 {
		t.Errorf("factories missing a kind: %+v", factories)
	}
	out := run(t, "components")
	for _, name := range []string{"hubble", "learning", "k8swriter", "enforcer", "policy_denies", "secret"} {
		if !strings.Contains(out, name) {
			t.Errorf("components does not list %s:\n%s", name, out)
		}
	}
}

// builderConfig is what the main takes from builder-config.yaml by hand.
type builderConfig struct {
	Dist struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Version     string `json:"version"`
	} `json:"dist"`
	Providers []struct {
		GoMod string `json:"gomod"`
	} `json:"providers"`
}

// TestBuilderConfig: the build's identity and the confmap providers, which
// ocb's generated main would take from builder-config.yaml, are those of
// builder-config.yaml.
func TestBuilderConfig(t *testing.T) {
	b, err := os.ReadFile("../../builder-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg builderConfig
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if buildInfo.Command != cfg.Dist.Name || buildInfo.Description != cfg.Dist.Description || buildInfo.Version != cfg.Dist.Version {
		t.Errorf("buildInfo %+v, builder-config.yaml's dist %+v", buildInfo, cfg.Dist)
	}
	var got, want []string
	for _, p := range providers {
		got = append(got, p.gomod)
		if s := p.factory.Create(confmap.ProviderSettings{}).Scheme(); s == "" {
			t.Errorf("provider %s without a scheme", p.gomod)
		}
	}
	for _, p := range cfg.Providers {
		want = append(want, p.GoMod)
	}
	if !slices.Equal(got, want) {
		t.Errorf("providers %q, builder-config.yaml's %q", got, want)
	}
}
