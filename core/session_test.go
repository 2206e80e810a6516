package core

import (
	"context"
	"testing"
)

// batchRecorder is a Session that records how SendAll reached it.
type batchRecorder struct {
	Session
	sends   int
	batches [][]Message
}

func (b *batchRecorder) Send(context.Context, Message) error { b.sends++; return nil }

type batchingRecorder struct{ *batchRecorder }

func (b batchingRecorder) SendBatch(_ context.Context, ms []Message) error {
	b.batches = append(b.batches, ms)
	return nil
}

func TestSendAll(t *testing.T) {
	ms := []Message{{Data: []byte("a")}, {Data: []byte("b")}, {Data: []byte("c")}}
	plain := &batchRecorder{}
	if err := SendAll(context.Background(), plain, ms); err != nil || plain.sends != 3 {
		t.Errorf("plain session: %d sends, err %v; want 3, nil", plain.sends, err)
	}
	rec := &batchRecorder{}
	if err := SendAll(context.Background(), batchingRecorder{rec}, ms); err != nil || rec.sends != 0 || len(rec.batches) != 1 || len(rec.batches[0]) != 3 {
		t.Errorf("batching session: %d sends, %d batches, err %v; want one batch of 3", rec.sends, len(rec.batches), err)
	}
	a, b := Pipe("p")
	go func() { _ = SendAll(context.Background(), a, ms) }()
	for _, want := range []string{"a", "b", "c"} {
		m, err := b.Recv(context.Background())
		if err != nil || string(m.Data) != want {
			t.Fatalf("pipe: got %q, %v; want %q", m.Data, err, want)
		}
	}
}
