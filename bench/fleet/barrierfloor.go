package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/bench/internal/latency"
)

// barrierFloor measures the simplest peers of the two read barriers on
// the same NATS cluster, without reso: on a stream like the fleet's log
// (R3, file storage) read by three ordered consumers, one client sends
// STREAM.INFO requests one after the other (the barrier before issue 35,
// which a stale server can answer), then publishes acknowledged messages
// one after the other (a read mark: a quorum's round). Each runs for d;
// it returns their rates and p50/p99.
func barrierFloor(urls string, d time.Duration) (info, mark readResult, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*d+time.Minute)
	defer cancel()
	nc, err := nats.Connect(urls)
	if err != nil {
		return info, mark, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return info, mark, err
	}
	name := fmt.Sprintf("BARRIER%d", runID.Add(1))
	subject := strings.ToLower(name)
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject},
		Storage: jetstream.FileStorage, Replicas: 3, Duplicates: time.Minute, AllowDirect: true})
	if err != nil {
		return info, mark, err
	}
	defer js.DeleteStream(context.Background(), name)
	for range 3 {
		c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
		if err != nil {
			return info, mark, err
		}
		cc, err := c.Consume(func(m jetstream.Msg) {})
		if err != nil {
			return info, mark, err
		}
		defer cc.Stop()
	}
	round := func(op func() error) (readResult, error) {
		var h latency.Hist
		start := time.Now()
		for time.Since(start) < d {
			t0 := time.Now()
			if err := op(); err != nil {
				return readResult{}, err
			}
			h.Add(time.Since(t0))
		}
		return readResult{rate: float64(h.Count()) / time.Since(start).Seconds(),
			p50: h.Quantile(0.5), p99: h.Quantile(0.99), max: h.Max()}, nil
	}
	if info, err = round(func() error {
		_, err := s.Info(ctx)
		return err
	}); err != nil {
		return info, mark, err
	}
	mark, err = round(func() error {
		_, err := js.Publish(ctx, subject, []byte("reso-read 0123456789abcdef\n"))
		return err
	})
	return info, mark, err
}
