// Package wirecodec lets a gRPC client decode a stream's messages itself: a
// flow receiver reads a score of the hundred fields of a data plane's flow
// message, and decoding the rest with the generated code would be most of its
// cost per flow. The codec hands the message's bytes to the receiver's own
// decoder; requests, and any message that has no decoder of its own, go
// through gRPC's protobuf codec as before.
package wirecodec

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// Decoder is a message that decodes itself from its protobuf wire format.
// DecodeWire must not keep b, nor anything that shares its memory: gRPC
// reuses the buffer once it returns.
type Decoder interface {
	DecodeWire(b []byte) error
}

// codec is gRPC's protobuf codec, except for a Decoder.
type codec struct {
	base encoding.CodecV2
}

// CallOption is the call option that makes a call's Decoder messages decode
// themselves (pass them to the stream's RecvMsg).
func CallOption() grpc.CallOption {
	return grpc.ForceCodecV2(codec{base: encoding.GetCodecV2(proto.Name)})
}

func (c codec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	d, ok := v.(Decoder)
	if !ok {
		return c.base.Unmarshal(data, v)
	}
	// One buffer (the usual case) is read in place; a message split over
	// several is copied once into a pooled one.
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return d.DecodeWire(buf.ReadOnlyData())
}

// Name is protobuf's: the wire format is unchanged, and the server sees the
// content type it expects.
func (codec) Name() string { return proto.Name }
