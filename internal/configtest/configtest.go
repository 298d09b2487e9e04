// Package configtest loads component configurations from testdata/config.yaml the
// way the collector does (unmarshal onto the defaults, then validate), so that each
// component's config test is a table of IDs and expectations.
package configtest

import (
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// Case is the expectation for one component ID of the file: either the config it
// yields (Want) or the messages its validation error must contain (WantErr).
type Case struct {
	ID      component.ID
	Want    component.Config
	WantErr []string
}

// Run loads each case's ID from path onto factory's default config and checks it.
func Run(t *testing.T, factory component.Factory, path string, cases []Case) {
	t.Helper()
	cm, err := confmaptest.LoadConf(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.ID.String(), func(t *testing.T) {
			sub, err := cm.Sub(tc.ID.String())
			if err != nil {
				t.Fatal(err)
			}
			cfg := factory.CreateDefaultConfig()
			if err := sub.Unmarshal(cfg); err != nil {
				t.Fatal(err)
			}
			err = confmap.Validate(cfg)
			if len(tc.WantErr) > 0 {
				if err == nil {
					t.Fatal("invalid config accepted")
				}
				for _, want := range tc.WantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("valid config rejected: %v", err)
			}
			if !reflect.DeepEqual(cfg, tc.Want) {
				t.Fatalf("config =\n%+v\nwant\n%+v", cfg, tc.Want)
			}
		})
	}
}
