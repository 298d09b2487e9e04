package componentcheck

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, LeakOptions()...)
}

type fakeConfig struct {
	Endpoint string `mapstructure:"endpoint"`
}

// fakeComponent is a component that needs the extension fakeNeeded to start,
// when needs is set.
type fakeComponent struct{ needs bool }

var fakeNeeded = component.MustNewID("needed")

func (c fakeComponent) Start(_ context.Context, host component.Host) error {
	if _, ok := host.GetExtensions()[fakeNeeded]; c.needs && !ok {
		return errors.New("extension needed is not configured")
	}
	return nil
}

func (fakeComponent) Shutdown(context.Context) error { return nil }

func fakeReceiverFactory(needs bool) receiver.Factory {
	return receiver.NewFactory(component.MustNewType("fake"), func() component.Config { return &fakeConfig{} },
		receiver.WithLogs(func(context.Context, receiver.Settings, component.Config, consumer.Logs) (receiver.Logs, error) {
			return fakeComponent{needs: needs}, nil
		}, component.StabilityLevelDevelopment))
}

type fakeHost map[component.ID]component.Component

func (h fakeHost) GetExtensions() map[component.ID]component.Component { return h }

func TestAWellBehavedComponentPasses(t *testing.T) {
	Check(t, Component{Factory: fakeReceiverFactory(false)})
	Check(t, Component{Factory: extension.NewFactory(component.MustNewType("fakeext"), func() component.Config { return &fakeConfig{} },
		func(context.Context, extension.Settings, component.Config) (extension.Extension, error) {
			return fakeComponent{}, nil
		},
		component.StabilityLevelDevelopment)})
}

// TestAComponentThatNeedsAnExtensionStartsOnItsHost: it starts on the host
// that holds the extension, and fails to start, cleanly, without it.
func TestAComponentThatNeedsAnExtensionStartsOnItsHost(t *testing.T) {
	Check(t, Component{Factory: fakeReceiverFactory(true), Config: &fakeConfig{Endpoint: "localhost:0"},
		Host: fakeHost{fakeNeeded: fakeComponent{}}})
}

func TestAProviderPasses(t *testing.T) {
	CheckProvider(t, confmap.NewProviderFactory(func(confmap.ProviderSettings) confmap.Provider { return fakeProvider{} }))
}

type fakeProvider struct{}

func (fakeProvider) Retrieve(context.Context, string, confmap.WatcherFunc) (*confmap.Retrieved, error) {
	return confmap.NewRetrieved(map[string]any{})
}
func (fakeProvider) Scheme() string                 { return "fake" }
func (fakeProvider) Shutdown(context.Context) error { return nil }
