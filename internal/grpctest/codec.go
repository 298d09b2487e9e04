package grpctest

import (
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// truncatingCodec is gRPC's proto codec, except that it cuts in half every message
// that cut selects: the client then receives a whole gRPC frame that holds an
// undecodable message, as from a buggy or corrupted peer.
type truncatingCodec struct{ cut func(proto.Message) bool }

func (truncatingCodec) Name() string { return "proto" }

func (c truncatingCodec) Marshal(v any) ([]byte, error) {
	m := v.(proto.Message)
	b, err := proto.Marshal(m)
	if err == nil && c.cut(m) {
		b = b[:len(b)/2]
	}
	return b, err
}

func (truncatingCodec) Unmarshal(data []byte, v any) error {
	return proto.Unmarshal(data, v.(proto.Message))
}

// TruncateMessages is a server option that sends every message that cut selects
// cut in half.
func TruncateMessages(cut func(proto.Message) bool) grpc.ServerOption {
	// ForceServerCodec is deprecated in favour of the V2 codec API, but it is still
	// the simplest way to put a codec on one test server.
	return grpc.ForceServerCodec(truncatingCodec{cut: cut})
}
