package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/bench/internal/proc"
)

// streamEntry is the size of one entry of the stream ceiling's messages:
// a small entity's PUT with its envelope (docs/fleet.md §8).
const streamEntry = 300

// streamInFlight bounds the stream ceiling's asynchronous publishes not
// yet acknowledged.
const streamInFlight = 256

// streamResult is the stream ceiling at one batch size.
type streamResult struct {
	batch     int     // entries per message
	msgs      float64 // messages acknowledged per second
	delivered bool    // every consumer read every message
	cpu       float64 // NATS CPU per entry, µs
}

// entries is the entries per second.
func (r streamResult) entries() float64 { return r.msgs * float64(r.batch) }

// streamCeiling measures where one log stream saturates on this machine,
// without reso: a stream like the fleet's log (R3, file storage, the
// cluster's sync_interval) read by three ordered consumers (the nodes),
// into which one client publishes messages of batch entries of 300 bytes
// asynchronously, at most 256 unacknowledged, for d; natsPID is the NATS
// cluster's process, whose CPU is counted per entry.
func streamCeiling(urls string, natsPID int, batch int, d time.Duration) (streamResult, error) {
	r := streamResult{batch: batch}
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	var ncs []*nats.Conn
	defer func() {
		for _, nc := range ncs {
			nc.Close()
		}
	}()
	for range 4 {
		nc, err := nats.Connect(urls)
		if err != nil {
			return r, err
		}
		ncs = append(ncs, nc)
	}
	name := fmt.Sprintf("CEILING%d", runID.Add(1))
	subject := strings.ToLower(name)
	js, err := jetstream.New(ncs[0])
	if err != nil {
		return r, err
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject},
		Storage: jetstream.FileStorage, Replicas: 3, Duplicates: time.Minute, AllowDirect: true}); err != nil {
		return r, err
	}
	defer js.DeleteStream(context.Background(), name)
	var read [3]atomic.Uint64
	for i, nc := range ncs[1:] {
		njs, err := jetstream.New(nc)
		if err != nil {
			return r, err
		}
		s, err := njs.Stream(ctx, name)
		if err != nil {
			return r, err
		}
		cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
		if err != nil {
			return r, err
		}
		cc, err := cons.Consume(func(jetstream.Msg) { read[i].Add(1) })
		if err != nil {
			return r, err
		}
		defer cc.Stop()
	}
	msg := bytes.Repeat([]byte("x"), batch*streamEntry)
	cpu0 := proc.CPU(natsPID)
	start := time.Now()
	var sent uint64
	for time.Since(start) < d {
		if _, err := js.PublishAsync(subject, msg, jetstream.WithStallWait(time.Minute)); err != nil {
			return r, err
		}
		sent++
		if js.PublishAsyncPending() >= streamInFlight {
			// Wait for room: the oldest acknowledgements.
			for js.PublishAsyncPending() >= streamInFlight/2 {
				select {
				case <-ctx.Done():
					return r, ctx.Err()
				case <-time.After(100 * time.Microsecond):
				}
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return r, fmt.Errorf("acknowledgements: %w", ctx.Err())
	}
	elapsed := time.Since(start)
	r.msgs = float64(sent) / elapsed.Seconds()
	r.cpu = float64((proc.CPU(natsPID) - cpu0).Microseconds()) / float64(sent*uint64(batch))
	// The consumers read behind the publisher: give them the time they need.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if read[0].Load() >= sent && read[1].Load() >= sent && read[2].Load() >= sent {
			r.delivered = true
			break
		}
	}
	return r, nil
}

// stream prints the stream ceiling at several batch sizes.
func (b *bench) stream() error {
	fmt.Println("the log's ceiling without reso: one R3 stream read by 3 consumers, asynchronous publishes (256 in flight) of messages of N entries of 300 B:")
	for _, batch := range []int{1, 16, 64, 256} {
		r, err := streamCeiling(b.fleet.NATSURLs(), b.fleet.NATSPid(), batch, b.c.d)
		if err != nil {
			return err
		}
		fmt.Printf("  %3d entries/message: %8.0f messages/s, %9.0f entries/s, %6.1f MB/s in; NATS CPU %.2f µs/entry; every consumer read all: %v\n",
			batch, r.msgs, r.entries(), r.entries()*streamEntry/1e6, r.cpu, r.delivered)
	}
	return nil
}
