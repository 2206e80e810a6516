package doors_test

import (
	"context"
	"testing"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/plugins/doors"
)

// BenchmarkSessionMessages measures one session's messages through the
// WebSocket door on the tree in process, over a pipe session: a NOTIFY
// of a resource without subscribers and its reply, 16 in flight.
func BenchmarkSessionMessages(b *testing.B) {
	tr, err := channel.New(b.Context(), nil, channel.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	h := &doors.Session{Tree: doors.TreeOf(tr)}
	server, client := core.Pipe("bench")
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeSession(context.Background(), &core.Request{}, server)
		server.Close(core.CloseNormal, "")
	}()
	msg := core.Message{Data: []byte(`{"method":"NOTIFY","resource":"/bench","msg_id":1}`)}
	const window = 16
	ctx := context.Background()
	sent, got := 0, 0
	b.ReportAllocs()
	for b.Loop() {
		for sent-got < window {
			if err := client.Send(ctx, msg); err != nil {
				b.Fatal(err)
			}
			sent++
		}
		if _, err := client.Recv(ctx); err != nil {
			b.Fatal(err)
		}
		got++
	}
	for got < sent {
		if _, err := client.Recv(ctx); err != nil {
			b.Fatal(err)
		}
		got++
	}
	client.Close(core.CloseNormal, "")
	<-done
}
