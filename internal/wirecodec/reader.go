package wirecodec

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Reader walks the fields of one protobuf message. Each Next reads a field:
// its number and wire type, and its value (Varint for varint and fixed
// fields, Bytes for length-delimited ones). A field of a wire type that its
// reader does not expect is one it skips, as the generated code keeps such a
// field as unknown.
type Reader struct {
	b   []byte
	err error

	// Num and Type are the field's number and wire type.
	Num  protowire.Number
	Type protowire.Type
	// Varint is a varint, fixed32 or fixed64 field's value.
	Varint uint64
	// Bytes is a length-delimited field's value; it shares the message's memory.
	Bytes []byte
}

// NewReader returns a Reader of the message b.
func NewReader(b []byte) Reader { return Reader{b: b} }

// Next reads the next field; it returns false at the end of the message or
// on malformed input (see Err).
func (r *Reader) Next() bool {
	if len(r.b) == 0 || r.err != nil {
		return false
	}
	num, typ, n := protowire.ConsumeTag(r.b)
	if n < 0 {
		return r.fail(n)
	}
	r.b = r.b[n:]
	r.Num, r.Type, r.Bytes = num, typ, nil
	switch typ {
	case protowire.VarintType:
		r.Varint, n = protowire.ConsumeVarint(r.b)
	case protowire.Fixed32Type:
		var v uint32
		v, n = protowire.ConsumeFixed32(r.b)
		r.Varint = uint64(v)
	case protowire.Fixed64Type:
		r.Varint, n = protowire.ConsumeFixed64(r.b)
	case protowire.BytesType:
		r.Bytes, n = protowire.ConsumeBytes(r.b)
	default: // groups: skipped whole
		n = protowire.ConsumeFieldValue(num, typ, r.b)
	}
	if n < 0 {
		return r.fail(n)
	}
	r.b = r.b[n:]
	return true
}

func (r *Reader) fail(n int) bool {
	r.err = fmt.Errorf("field %d: %w", r.Num, protowire.ParseError(n))
	return false
}

// Err is what made Next stop early, or nil at the end of the message.
func (r *Reader) Err() error { return r.err }

// Message reports whether the field is length-delimited: a message, a string,
// bytes or a packed repeated field.
func (r *Reader) Message() bool { return r.Type == protowire.BytesType }

// IsVarint reports whether the field is a varint: an integer, a bool or an enum.
func (r *Reader) IsVarint() bool { return r.Type == protowire.VarintType }

// ErrInvalidUTF8 is a string field that is not valid UTF-8, which protobuf's
// proto3 strings must be.
var ErrInvalidUTF8 = errors.New("string field is not valid UTF-8")
