package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// floor measures the simplest peer of a fleet's NOTIFY with one in flight,
// on the same NATS cluster and without reso: three clients stand for the
// nodes, each reading the log stream (R3, file storage, as the fleet's)
// with an ordered consumer; the first publishes a message of the size of
// an entry and waits for its acknowledgement, for its own consumer's
// delivery and for a report from each of the two others, sent over core
// NATS when their consumers deliver it: the round trips a fleet's NOTIFY
// with msg_id cannot go without. It returns rounds per second and their
// p50 and p99.
func floor(urls string, d time.Duration) (float64, time.Duration, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	var ncs []*nats.Conn
	defer func() {
		for _, nc := range ncs {
			nc.Close()
		}
	}()
	for range 3 {
		nc, err := nats.Connect(urls)
		if err != nil {
			return 0, 0, 0, err
		}
		ncs = append(ncs, nc)
	}
	name := fmt.Sprintf("FLOOR%d", runID.Add(1))
	js, err := jetstream.New(ncs[0])
	if err != nil {
		return 0, 0, 0, err
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name)},
		Storage: jetstream.FileStorage, Replicas: 3, Duplicates: time.Minute, AllowDirect: true})
	if err != nil {
		return 0, 0, 0, err
	}
	defer js.DeleteStream(context.Background(), name)
	mine := make(chan struct{}, 1)
	reports := make(chan struct{}, 2)
	sub, err := ncs[0].Subscribe(strings.ToLower(name)+".report", func(*nats.Msg) { reports <- struct{}{} })
	if err != nil {
		return 0, 0, 0, err
	}
	defer sub.Unsubscribe()
	if err := ncs[0].Flush(); err != nil {
		return 0, 0, 0, err
	}
	for i, nc := range ncs {
		njs, err := jetstream.New(nc)
		if err != nil {
			return 0, 0, 0, err
		}
		s, err := njs.Stream(ctx, name)
		if err != nil {
			return 0, 0, 0, err
		}
		cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
		if err != nil {
			return 0, 0, 0, err
		}
		cc, err := cons.Consume(func(m jetstream.Msg) {
			if i == 0 {
				mine <- struct{}{}
				return
			}
			_ = nc.Publish(strings.ToLower(name)+".report", []byte("1"))
		})
		if err != nil {
			return 0, 0, 0, err
		}
		defer cc.Stop()
	}
	entry := []byte(strings.Repeat("x", 300))
	var lat []time.Duration
	start := time.Now()
	for n := 0; time.Since(start) < d; n++ {
		t0 := time.Now()
		if _, err := js.Publish(ctx, strings.ToLower(name), entry, jetstream.WithMsgID(fmt.Sprint(n))); err != nil {
			return 0, 0, 0, err
		}
		for range 3 {
			select {
			case <-mine:
			case <-reports:
			case <-ctx.Done():
				return 0, 0, 0, ctx.Err()
			}
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return float64(len(lat)) / elapsed.Seconds(), lat[len(lat)/2], lat[len(lat)*99/100], nil
}
