// Package instruments builds a component's metrics from its table: each
// component's internal/metadata lists its metrics once (name, description,
// unit, kind), as its metadata.yaml does, in a struct whose fields name them
// by tag, and Build creates them all. It also keeps the callbacks of the
// observable ones, which Shutdown removes. mdatagen, which generates such
// builders in contrib, is not one of the project's tools; this is the one
// hand-written builder instead of one per component.
package instruments

import (
	"errors"
	"fmt"
	"reflect"

	"go.opentelemetry.io/otel/metric"
)

// Kind is the kind of an instrument.
type Kind int

// The kinds, all of int64 values.
const (
	Counter Kind = iota
	Gauge
	ObservableCounter
	ObservableGauge
)

// Metric is one row of a component's table.
type Metric struct {
	Name, Description, Unit string
	Kind                    Kind
}

// Set is what a component's builder embeds: the meter its instruments are of,
// and the callbacks registered on them.
type Set struct {
	meter metric.Meter
	Registrations
}

func (s *Set) set() *Set { return s }

// Builder is a component's builder: a struct that embeds Set, with a field
// for each row of its table, tagged `metric:"<name>"`, of the instrument's
// type (metric.Int64Counter, metric.Int64Gauge, metric.Int64ObservableCounter,
// metric.Int64ObservableGauge).
type Builder interface{ set() *Set }

// Build creates each metric of table on meter into the field of b that its
// tag names. A row without a field, a field without a row, and a field of
// another type than the row's kind are errors: the table and the struct say
// the same.
func Build(meter metric.Meter, table []Metric, b Builder) error {
	b.set().meter = meter
	fields := map[string]reflect.Value{}
	collectFields(reflect.ValueOf(b).Elem(), fields)
	var errs []error
	for _, m := range table {
		f, ok := fields[m.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("metric %s: no field tagged with it", m.Name))
			continue
		}
		delete(fields, m.Name)
		// The field's declared type, not the instrument's: one SDK type may
		// implement every kind.
		if want := fieldTypes[m.Kind]; f.Type() != want {
			errs = append(errs, fmt.Errorf("metric %s: its field is a %s, not a %v", m.Name, f.Type(), want))
			continue
		}
		inst, err := create(meter, m)
		if err != nil {
			errs = append(errs, fmt.Errorf("metric %s: %w", m.Name, err))
			continue
		}
		f.Set(reflect.ValueOf(inst))
	}
	for name := range fields {
		errs = append(errs, fmt.Errorf("field tagged %s: no such metric in the table", name))
	}
	return errors.Join(errs...)
}

// collectFields finds the tagged fields of struct v, and of the structs it
// embeds (a part's fields that several builders share, as the observed
// store's).
func collectFields(v reflect.Value, into map[string]reflect.Value) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if name, ok := f.Tag.Lookup("metric"); ok {
			into[name] = v.Field(i)
			continue
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[Set]() {
			collectFields(v.Field(i), into)
		}
	}
}

// fieldTypes are the field types of the kinds.
var fieldTypes = map[Kind]reflect.Type{
	Counter:           reflect.TypeFor[metric.Int64Counter](),
	Gauge:             reflect.TypeFor[metric.Int64Gauge](),
	ObservableCounter: reflect.TypeFor[metric.Int64ObservableCounter](),
	ObservableGauge:   reflect.TypeFor[metric.Int64ObservableGauge](),
}

// create makes the instrument of one row.
func create(meter metric.Meter, m Metric) (any, error) {
	desc, unit := metric.WithDescription(m.Description), metric.WithUnit(m.Unit)
	switch m.Kind {
	case Counter:
		return meter.Int64Counter(m.Name, desc, unit)
	case Gauge:
		return meter.Int64Gauge(m.Name, desc, unit)
	case ObservableCounter:
		return meter.Int64ObservableCounter(m.Name, desc, unit)
	case ObservableGauge:
		return meter.Int64ObservableGauge(m.Name, desc, unit)
	}
	return nil, fmt.Errorf("unknown kind %d", m.Kind)
}

// Observe makes cb observe inst, one of the set's instruments, until
// Shutdown.
func (s *Set) Observe(inst metric.Int64Observable, cb metric.Int64Callback) error {
	return s.RegisterInt64(s.meter, inst, cb)
}

// Observer is Observe for inst, as a function that takes the callback: for a
// part that registers its own callbacks on instruments it is given.
func (s *Set) Observer(inst metric.Int64Observable) func(metric.Int64Callback) error {
	return func(cb metric.Int64Callback) error { return s.Observe(inst, cb) }
}
