package metadatatest

import (
	"bytes"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// file is the part of mdatagen's metadata.yaml schema that the components use.
type file struct {
	Type   string `yaml:"type"`
	Status struct {
		Class string `yaml:"class"`
		// Stability lists the signals at each level.
		Stability  map[string][]string `yaml:"stability"`
		Codeowners struct {
			Active []string `yaml:"active"`
		} `yaml:"codeowners"`
	} `yaml:"status"`
	Telemetry struct {
		Metrics map[string]metricSpec `yaml:"metrics"`
	} `yaml:"telemetry"`
}

// metricSpec is one of telemetry.metrics, as mdatagen writes it.
type metricSpec struct {
	Enabled     bool      `yaml:"enabled"`
	Description string    `yaml:"description"`
	Unit        string    `yaml:"unit"`
	Sum         *dataSpec `yaml:"sum"`
	Gauge       *dataSpec `yaml:"gauge"`
}

// dataSpec is a metric's sum or gauge settings.
type dataSpec struct {
	ValueType string `yaml:"value_type"`
	Monotonic bool   `yaml:"monotonic"`
	Async     bool   `yaml:"async"`
}

// kind is how the README names the metric's instrument.
func (m metricSpec) kind() string {
	switch {
	case m.Sum != nil && m.Sum.Monotonic:
		return "counter"
	case m.Sum != nil:
		return "up-down counter"
	case m.Gauge != nil:
		return "gauge"
	}
	return "?"
}

// data is the metric's sum or gauge settings.
func (m metricSpec) data() *dataSpec {
	if m.Sum != nil {
		return m.Sum
	}
	return m.Gauge
}

// readFile reads a metadata.yaml; a key outside the schema above is an error,
// so that a misspelt key does not pass unchecked.
func readFile(path string) (*file, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}
