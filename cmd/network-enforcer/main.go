// Command network-enforcer is the Network Enforcer collector distribution: the
// OpenTelemetry Collector with the components that builder-config.yaml lists,
// and the distribution's own subcommands beside the collector's.
//
// This is the collector's pattern for a distribution with commands of its own:
// ocb generates components.go from builder-config.yaml (make generate), and
// this main, kept by hand, builds the collector's settings from it, takes the
// collector's root command (otelcol.NewCommand: run, components, validate, ...)
// and adds render to it. What ocb would write in its main, the build's
// identity and the confmap providers, is here; main_test.go holds it to
// builder-config.yaml.
package main

import (
	"os"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/otelcol"

	"github.com/kubewarden/network-enforcer/confmap/provider/secretprovider"
	"github.com/kubewarden/network-enforcer/internal/rendercmd"
)

// buildInfo is the distribution's dist section of builder-config.yaml.
var buildInfo = component.BuildInfo{
	Command:     "network-enforcer",
	Description: "Network Enforcer learns and enforces Kubernetes network policy from the data plane's flow records.",
	Version:     "0.4.0-dev",
}

// providers are builder-config.yaml's providers, each with its gomod.
var providers = []struct {
	factory confmap.ProviderFactory
	gomod   string
}{
	{envprovider.NewFactory(), "go.opentelemetry.io/collector/confmap/provider/envprovider v1.71.0"},
	{fileprovider.NewFactory(), "go.opentelemetry.io/collector/confmap/provider/fileprovider v1.71.0"},
	{yamlprovider.NewFactory(), "go.opentelemetry.io/collector/confmap/provider/yamlprovider v1.71.0"},
	// ${secret:<namespace>/<name>/<key>}
	{secretprovider.NewFactory(), "github.com/kubewarden/network-enforcer v0.0.0"},
}

// settings are the collector's settings, as ocb's main builds them.
func settings() otelcol.CollectorSettings {
	set := otelcol.CollectorSettings{
		BuildInfo:       buildInfo,
		Factories:       components,
		ProviderModules: map[string]string{},
	}
	for _, p := range providers {
		set.ConfigProviderSettings.ResolverSettings.ProviderFactories = append(
			set.ConfigProviderSettings.ResolverSettings.ProviderFactories, p.factory)
		set.ProviderModules[p.factory.Create(confmap.ProviderSettings{}).Scheme()] = p.gomod
	}
	return set
}

// newCommand is the collector's root command with the distribution's
// subcommands added.
func newCommand(set otelcol.CollectorSettings) *cobra.Command {
	cmd := otelcol.NewCommand(set)
	cmd.AddCommand(rendercmd.NewCommand())
	return cmd
}

func main() {
	if err := newCommand(settings()).Execute(); err != nil {
		// cobra (or the subcommand) has printed the error.
		os.Exit(1)
	}
}
