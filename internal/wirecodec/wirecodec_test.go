package wirecodec

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestInternerReturnsOneStringAndStaysBounded(t *testing.T) {
	in := NewInterner(2)
	a, _ := in.String([]byte("default"))
	b, _ := in.String([]byte("default"))
	if a != "default" || b != "default" || len(in.strings) != 1 {
		t.Fatalf("got %q %q, %d held", a, b, len(in.strings))
	}
	for _, s := range []string{"one", "two", "three"} {
		if got, err := in.String([]byte(s)); got != s || err != nil {
			t.Fatalf("%q: got %q, %v", s, got, err)
		}
	}
	if len(in.strings) > 2 {
		t.Fatalf("%d strings held, at most 2 allowed", len(in.strings))
	}
	if s, err := in.String(nil); s != "" || err != nil {
		t.Fatalf("empty: %q, %v", s, err)
	}
	if _, err := in.String([]byte{0xff, 'a'}); !errors.Is(err, ErrInvalidUTF8) {
		t.Fatalf("invalid UTF-8: %v", err)
	}
}

func TestReaderReadsEveryWireTypeAndStopsOnMalformedInput(t *testing.T) {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 300)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendString(b, "pod")
	b = protowire.AppendTag(b, 3, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, 7)
	b = protowire.AppendTag(b, 4, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, 8)
	b = protowire.AppendTag(b, 5, protowire.StartGroupType)
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	b = protowire.AppendTag(b, 5, protowire.EndGroupType)
	b = protowire.AppendTag(b, 6, protowire.VarintType)
	b = protowire.AppendVarint(b, 9)

	type field struct {
		num    protowire.Number
		varint uint64
		bytes  string
	}
	var got []field
	rd := NewReader(b)
	for rd.Next() {
		got = append(got, field{rd.Num, rd.Varint, string(rd.Bytes)})
	}
	want := []field{{1, 300, ""}, {2, 300, "pod"}, {3, 7, ""}, {4, 8, ""}, {5, 8, ""}, {6, 9, ""}}
	if rd.Err() != nil || len(got) != len(want) {
		t.Fatalf("got %v, %v", got, rd.Err())
	}
	for i := range want {
		if got[i].num != want[i].num || got[i].bytes != want[i].bytes || (got[i].bytes == "" && want[i].num != 5 && got[i].varint != want[i].varint) {
			t.Errorf("field %d: got %+v, want %+v", i, got[i], want[i])
		}
	}

	for name, bad := range map[string][]byte{
		"truncated string": b[:6],
		"field number 0":   {0x00, 0x01},
		"end group alone":  protowire.AppendTag(nil, 1, protowire.EndGroupType),
		"truncated varint": {0x08, 0xff},
	} {
		rd := NewReader(bad)
		for rd.Next() {
		}
		if rd.Err() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestListsReturnsOneSliceForEqualLists(t *testing.T) {
	l := NewLists(2)
	a := l.List([]string{"app=web", "tier=front"})
	b := l.List([]string{"app=web", "tier=front"})
	if &a[0] != &b[0] || len(b) != 2 {
		t.Fatalf("equal lists gave two slices: %v %v", a, b)
	}
	if c := l.List([]string{"app=webtier=front"}); len(c) != 1 || c[0] != "app=webtier=front" {
		t.Fatalf("a list of one got %v", c)
	}
	if l.List(nil) != nil {
		t.Fatal("an empty list is not nil")
	}
	for _, s := range []string{"a", "b", "c"} {
		l.List([]string{s})
	}
	if len(l.lists) > 2 {
		t.Fatalf("%d lists held, at most 2 allowed", len(l.lists))
	}
}
