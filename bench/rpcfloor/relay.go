package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// relay starts the peer, opens one Requests stream to it and serves addr,
// forwarding every request on that stream. It returns only on an error;
// on SIGINT or SIGTERM it ends the peer and exits.
func relay(addr string) error {
	dir, err := os.MkdirTemp("", "rpcfloor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "peer.sock")
	child, err := startPeer(socket)
	if err != nil {
		return err
	}
	defer child.stop()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		child.stop()
		os.RemoveAll(dir)
		os.Exit(0)
	}()

	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	stream, err := conn.NewStream(context.Background(), streamDesc, fullMethod)
	if err != nil {
		return err
	}
	m := &mux{stream: stream, waiting: map[uint64]chan []byte{}}
	errc := make(chan error, 2)
	go func() { errc <- fmt.Errorf("stream to the peer: %w", m.receive()) }()
	go func() { errc <- serve(addr, m.ServeHTTP, fmt.Sprintf(" peer=%d", child.cmd.Process.Pid)) }()
	return <-errc
}

// mux multiplexes requests on one stream: a request registers a channel
// under a fresh id and sends its message, and the one receiver hands each
// answer to the channel of its id.
type mux struct {
	stream grpc.ClientStream

	sendMu sync.Mutex // serializes SendMsg

	mu      sync.Mutex
	next    uint64
	waiting map[uint64]chan []byte
}

// ServeHTTP forwards the request (its path) and writes the peer's answer.
func (m *mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ch := make(chan []byte, 1)
	m.mu.Lock()
	m.next++
	id := m.next
	m.waiting[id] = ch
	m.mu.Unlock()

	m.sendMu.Lock()
	err := m.stream.SendMsg(message(id, []byte(r.URL.Path)))
	m.sendMu.Unlock()
	if err != nil {
		m.forget(id)
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	select {
	case b := <-ch:
		writeBody(w, b)
	case <-r.Context().Done():
		m.forget(id)
	}
}

// forget drops the waiter of id.
func (m *mux) forget(id uint64) {
	m.mu.Lock()
	delete(m.waiting, id)
	m.mu.Unlock()
}

// receive hands every answer to its waiter until the stream breaks.
func (m *mux) receive() error {
	for {
		var a wrapperspb.BytesValue
		if err := m.stream.RecvMsg(&a); err != nil {
			return err
		}
		id, payload, err := parse(&a)
		if err != nil {
			return err
		}
		m.mu.Lock()
		ch, ok := m.waiting[id]
		delete(m.waiting, id)
		m.mu.Unlock()
		if ok {
			ch <- payload
		}
	}
}
