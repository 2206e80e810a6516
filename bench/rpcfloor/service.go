package main

import (
	"encoding/binary"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The service has one bidirectional stream, Requests: the relay sends a
// message per request and the peer answers each with a message carrying
// the same id. A message is a BytesValue whose first 8 bytes are the id
// (big-endian) and whose rest is the payload.
const (
	serviceName = "rpcfloor.Floor"
	methodName  = "Requests"
	fullMethod  = "/" + serviceName + "/" + methodName
)

// floorServer is what the peer implements.
type floorServer interface {
	Requests(grpc.ServerStream) error
}

// serviceDesc is written by hand, in place of generated code.
var serviceDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*floorServer)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    methodName,
		Handler:       func(srv any, s grpc.ServerStream) error { return srv.(floorServer).Requests(s) },
		ServerStreams: true,
		ClientStreams: true,
	}},
}

// streamDesc is the client's description of Requests.
var streamDesc = &serviceDesc.Streams[0]

// message returns a message of id carrying payload.
func message(id uint64, payload []byte) *wrapperspb.BytesValue {
	b := make([]byte, 8+len(payload))
	binary.BigEndian.PutUint64(b, id)
	copy(b[8:], payload)
	return &wrapperspb.BytesValue{Value: b}
}

// errShort is a message without its id.
var errShort = errors.New("message shorter than its id")

// parse returns a message's id and payload.
func parse(m *wrapperspb.BytesValue) (uint64, []byte, error) {
	if len(m.Value) < 8 {
		return 0, nil, errShort
	}
	return binary.BigEndian.Uint64(m.Value), m.Value[8:], nil
}
