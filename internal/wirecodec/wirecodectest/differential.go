package wirecodectest

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
)

// Decode is one way of decoding a message and converting it to what a
// receiver makes of it (a record or a drop reason, say).
type Decode[T any] func(wire []byte) (T, error)

// Differential decodes every message of msgs, in every variant of it, with
// reference (the generated code) and with fast (the decoder under test), in
// turn, as a stream would: the results must be equal field by field. It
// returns fast's results, for a test to check that they outlive the
// messages after them.
func Differential[M proto.Message, T any](t *testing.T, msgs []M, reference, fast Decode[T]) []T {
	t.Helper()
	var all []T
	for i, m := range msgs {
		for _, v := range Variants(t, m) {
			want, err := reference(v.Wire)
			if err != nil {
				t.Fatalf("message %d, %s: the generated code refuses it: %v", i, v.Name, err)
			}
			got, err := fast(v.Wire)
			if err != nil {
				t.Fatalf("message %d, %s: %v", i, v.Name, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("message %d, %s:\n got %+v\nwant %+v", i, v.Name, got, want)
			}
			all = append(all, got)
		}
	}
	t.Logf("%d encodings of %d messages decoded alike", len(all), len(msgs))
	return all
}

// Fuzz fuzzes fast against reference from the seeds: fast never panics, and
// what reference decodes, fast decodes to an equal result. What reference
// refuses, fast may take when the fault is in a field it skips: it reads only
// what it uses.
func Fuzz[T any](f *testing.F, seeds [][]byte, reference, fast Decode[T]) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		got, gotErr := fast(wire)
		want, wantErr := reference(wire)
		if wantErr != nil {
			return
		}
		if gotErr != nil {
			t.Fatalf("the generated code decodes it, the decoder refuses it: %v", gotErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("\n got %+v\nwant %+v", got, want)
		}
	})
}

// Seeds are every variant of every message of msgs, for a fuzz target.
func Seeds[M proto.Message](tb testing.TB, msgs []M) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, m := range msgs {
		for _, v := range Variants(tb, m) {
			out = append(out, v.Wire)
		}
	}
	return out
}
