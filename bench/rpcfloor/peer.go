package main

import (
	"fmt"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// peer serves Requests on the Unix socket at path, prints "ready" on
// stdout once it listens, and returns only on an error.
func peer(path string) error {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	s := grpc.NewServer()
	s.RegisterService(&serviceDesc, answerer{})
	fmt.Fprintln(os.Stdout, "ready")
	return s.Serve(ln)
}

// answerer answers every message at once with body, under the message's id.
type answerer struct{}

// Requests receives messages and answers each before the next one.
func (answerer) Requests(s grpc.ServerStream) error {
	for {
		var m wrapperspb.BytesValue
		if err := s.RecvMsg(&m); err != nil {
			return err
		}
		id, _, err := parse(&m)
		if err != nil {
			return err
		}
		if err := s.SendMsg(message(id, body)); err != nil {
			return err
		}
	}
}
