// Package wirecodectest builds, from a protobuf message, the other valid
// encodings of it that a decoder of the wire format must read alike: fields
// in another order, repeated scalars packed or not, fields it does not know,
// and a message sent in parts that the receiver merges. A differential test
// decodes each with the generated code and with the decoder under test.
package wirecodectest

import (
	"math"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Variant is one encoding of a message.
type Variant struct {
	Name string
	Wire []byte
}

// Variants returns encodings of m that protobuf decodes to m (or, for
// "merged with itself", to m merged into itself: repeated fields twice).
func Variants(tb testing.TB, m proto.Message) []Variant {
	tb.Helper()
	asSent, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	r := m.ProtoReflect()
	return []Variant{
		{"as sent", asSent},
		{"fields reversed, repeated scalars unpacked", encode(nil, r, true, false)},
		{"fields in order, repeated scalars packed", encode(nil, r, false, true)},
		{"unknown fields at every level", encodeUnknown(nil, r)},
		{"merged with itself", slices.Concat(asSent, asSent)},
		{"sent in two parts", splitInTwo(tb, m)},
	}
}

// unknownField numbers are far above any field of the data planes' messages.
const unknownField protowire.Number = 536870000

// encode writes the fields of m: in reverse order when reversed, and
// repeated scalars packed when packed, recursively.
func encode(b []byte, m protoreflect.Message, reversed, packed bool) []byte {
	var fields []protoreflect.FieldDescriptor
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		fields = append(fields, fd)
		return true
	})
	slices.SortFunc(fields, func(a, b protoreflect.FieldDescriptor) int { return int(a.Number() - b.Number()) })
	if reversed {
		slices.Reverse(fields)
	}
	for _, fd := range fields {
		b = encodeField(b, fd, m.Get(fd), reversed, packed)
	}
	return b
}

func encodeField(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value, reversed, packed bool) []byte {
	switch {
	case fd.IsMap():
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			var entry []byte
			entry = encodeValue(entry, fd.MapKey(), k.Value(), reversed, packed)
			entry = encodeValue(entry, fd.MapValue(), mv, reversed, packed)
			b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
			b = protowire.AppendBytes(b, entry)
			return true
		})
	case fd.IsList() && packed && isScalar(fd.Kind()):
		var payload []byte
		l := v.List()
		for i := range l.Len() {
			payload = appendScalar(payload, fd.Kind(), l.Get(i))
		}
		b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
		b = protowire.AppendBytes(b, payload)
	case fd.IsList():
		l := v.List()
		for i := range l.Len() {
			b = encodeValue(b, fd, l.Get(i), reversed, packed)
		}
	default:
		b = encodeValue(b, fd, v, reversed, packed)
	}
	return b
}

// encodeValue writes one value of fd with its tag.
func encodeValue(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value, reversed, packed bool) []byte {
	switch fd.Kind() {
	case protoreflect.MessageKind:
		b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
		return protowire.AppendBytes(b, encode(nil, v.Message(), reversed, packed))
	case protoreflect.GroupKind:
		b = protowire.AppendTag(b, fd.Number(), protowire.StartGroupType)
		b = encode(b, v.Message(), reversed, packed)
		return protowire.AppendTag(b, fd.Number(), protowire.EndGroupType)
	case protoreflect.StringKind:
		b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
		return protowire.AppendString(b, v.String())
	case protoreflect.BytesKind:
		b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
		return protowire.AppendBytes(b, v.Bytes())
	default:
		b = protowire.AppendTag(b, fd.Number(), wireType(fd.Kind()))
		return appendScalar(b, fd.Kind(), v)
	}
}

func isScalar(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.MessageKind, protoreflect.GroupKind, protoreflect.StringKind, protoreflect.BytesKind:
		return false
	default:
		return true
	}
}

func wireType(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	default:
		return protowire.VarintType
	}
}

// appendScalar writes a scalar's value without its tag.
func appendScalar(b []byte, k protoreflect.Kind, v protoreflect.Value) []byte {
	switch k {
	case protoreflect.BoolKind:
		return protowire.AppendVarint(b, protowire.EncodeBool(v.Bool()))
	case protoreflect.EnumKind:
		return protowire.AppendVarint(b, uint64(v.Enum()))
	case protoreflect.Int32Kind, protoreflect.Int64Kind:
		return protowire.AppendVarint(b, uint64(v.Int()))
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return protowire.AppendVarint(b, protowire.EncodeZigZag(v.Int()))
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind:
		return protowire.AppendVarint(b, v.Uint())
	case protoreflect.Fixed32Kind:
		return protowire.AppendFixed32(b, uint32(v.Uint()))
	case protoreflect.Sfixed32Kind:
		return protowire.AppendFixed32(b, uint32(v.Int()))
	case protoreflect.FloatKind:
		return protowire.AppendFixed32(b, math.Float32bits(float32(v.Float())))
	case protoreflect.Fixed64Kind:
		return protowire.AppendFixed64(b, v.Uint())
	case protoreflect.Sfixed64Kind:
		return protowire.AppendFixed64(b, uint64(v.Int()))
	case protoreflect.DoubleKind:
		return protowire.AppendFixed64(b, math.Float64bits(v.Float()))
	default:
		panic("not a scalar kind: " + k.String())
	}
}

// encodeUnknown writes m with fields of every wire type that its schema does
// not have, before its own fields and inside every message it holds.
func encodeUnknown(b []byte, m protoreflect.Message) []byte {
	b = protowire.AppendTag(b, unknownField, protowire.VarintType)
	b = protowire.AppendVarint(b, 1<<40)
	b = protowire.AppendTag(b, unknownField+1, protowire.BytesType)
	b = protowire.AppendString(b, "unknown")
	b = protowire.AppendTag(b, unknownField+2, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, 7)
	b = protowire.AppendTag(b, unknownField+3, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, 7)
	b = protowire.AppendTag(b, unknownField+4, protowire.StartGroupType)
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 3)
	b = protowire.AppendTag(b, unknownField+4, protowire.EndGroupType)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Kind() != protoreflect.MessageKind || fd.IsMap():
			b = encodeField(b, fd, v, false, false)
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
				b = protowire.AppendBytes(b, encodeUnknown(nil, l.Get(i).Message()))
			}
		default:
			b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
			b = protowire.AppendBytes(b, encodeUnknown(nil, v.Message()))
		}
		return true
	})
	return b
}

// splitInTwo sends m as two messages that merge into it: the first holds
// every other field of m, and the second the rest, each singular message field
// itself split the same way between the two.
func splitInTwo(tb testing.TB, m proto.Message) []byte {
	tb.Helper()
	first, second := m.ProtoReflect().New(), m.ProtoReflect().New()
	split(m.ProtoReflect(), first, second)
	a, err1 := proto.Marshal(first.Interface())
	b, err2 := proto.Marshal(second.Interface())
	if err1 != nil || err2 != nil {
		tb.Fatal(err1, err2)
	}
	return slices.Concat(a, b)
}

func split(m, first, second protoreflect.Message) {
	i := 0
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap() && fd.ContainingOneof() == nil {
			split(v.Message(), first.Mutable(fd).Message(), second.Mutable(fd).Message())
			return true
		}
		if i%2 == 0 {
			first.Set(fd, v)
		} else {
			second.Set(fd, v)
		}
		i++
		return true
	})
}
