package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/bench/internal/latency"
)

// fanoutConfig is the fan-out figure: subs connections subscribed to one
// resource, one publisher sending NOTIFYs to it with at most window of them
// unanswered.
type fanoutConfig struct {
	subs     int
	dialConc int
	resource string
	window   int
	dataSize int           // bytes of the data string of each NOTIFY
	warmup   time.Duration // publishing before the measurement starts
	dur      time.Duration // measured time
	maxSends int64         // most NOTIFYs in the whole run
	drain    time.Duration // wait for the last notifications after the end
	timeout  time.Duration // for connecting
	readBuf  int
}

// fanoutResult is what one run measured. Counts are over the measured
// time, except the totals used to check for losses.
type fanoutResult struct {
	subs                 int
	elapsed              time.Duration // measured time
	delivered            int64         // notifications received in it
	sends                int64         // NOTIFYs answered in it
	lat                  latency.Hist  // delivery latency in it
	serverCPU, clientCPU time.Duration // over the measured time

	totalSends, totalFailed int64 // all NOTIFYs answered, and those failed
	totalSentCount          int64 // sum of sent_count of the replies
	totalDelivered          int64 // notifications received in the whole run
	other                   int64 // other frames received by subscribers
	dropped                 int64 // subscribers whose connection ended early
	capped                  bool  // maxSends ended the measured time early
	firstDrop               string
}

// subscriber counts the notifications one connection receives.
type subscriber struct {
	c         *websocket.Conn
	delivered atomic.Int64
	other     atomic.Int64
	lat       latency.Hist // written by the reader only, read after it ended
}

// runFanout connects the subscribers and the publisher, publishes for
// warmup+dur (or until maxSends) and waits for the last notifications.
func runFanout(d *dialer, p *probe, cfg fanoutConfig) (fanoutResult, error) {
	var res fanoutResult
	clock := time.Now() // send times are durations since clock (monotonic)
	subs := make([]*subscriber, cfg.subs)
	var readers sync.WaitGroup
	var measuring atomic.Bool
	var dropped atomic.Int64
	var dropMu sync.Mutex
	var firstDrop string
	var stopping atomic.Bool
	defer func() {
		stopping.Store(true)
		for _, s := range subs {
			if s != nil {
				closeClean(s.c)
			}
		}
		readers.Wait()
	}()
	deadline := time.Now().Add(cfg.timeout)
	err := forEach(cfg.subs, cfg.dialConc, func(i int) error {
		c, err := d.dial()
		if err != nil {
			return err
		}
		s := &subscriber{c: c}
		subs[i] = s
		if _, err := mustSucceed(c, message{Method: "SUBSCRIBE", Resource: cfg.resource, MsgID: 1}, deadline); err != nil {
			return err
		}
		readers.Add(1)
		go func() {
			defer readers.Done()
			buf := make([]byte, 0, 512)
			for {
				var err error
				buf, err = readFrame(c, buf)
				if err != nil {
					if !stopping.Load() {
						if dropped.Add(1) == 1 {
							dropMu.Lock()
							firstDrop = err.Error()
							dropMu.Unlock()
						}
					}
					return
				}
				ts, ok := sendTime(buf)
				if !ok {
					s.other.Add(1)
					continue
				}
				s.delivered.Add(1)
				if measuring.Load() {
					s.lat.Add(time.Since(clock) - time.Duration(ts))
				}
			}
		}()
		return nil
	})
	if err != nil {
		return res, err
	}
	res.subs = cfg.subs

	pub, err := d.dial()
	if err != nil {
		return res, err
	}
	defer closeClean(pub)
	pad := strings.Repeat("x", max(cfg.dataSize-len("@ts=1234567890123;"), 0))
	tokens := make(chan struct{}, cfg.window)
	var answered, failed, sentSum atomic.Int64
	var stop atomic.Bool
	readErr := make(chan error, 1)
	go func() { // the publisher's replies
		buf := make([]byte, 0, 512)
		for {
			var err error
			buf, err = readFrame(pub, buf)
			if err != nil {
				readErr <- err
				return
			}
			if _, ok := msgID(buf); !ok {
				continue
			}
			if n, ok := sentCount(buf); ok {
				sentSum.Add(n)
			}
			if !succeeded(buf) {
				failed.Add(1)
			}
			answered.Add(1)
			<-tokens
		}
	}()
	var sent int64
	writeErr := make(chan error, 1)
	go func() { // the publisher's NOTIFYs
		b := make([]byte, 0, 256+len(pad))
		for sent < cfg.maxSends && !stop.Load() {
			tokens <- struct{}{}
			sent++
			ts := time.Since(clock).Nanoseconds()
			b = appendRequest(b[:0], "NOTIFY", cfg.resource, sent,
				`,"data":"@ts=`+strconv.FormatInt(ts, 10)+`;`+pad+`"`)
			if err := pub.WriteMessage(websocket.TextMessage, b); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}()

	total := func() int64 {
		var n int64
		for _, s := range subs {
			n += s.delivered.Load()
		}
		return n
	}
	time.Sleep(cfg.warmup)
	measuring.Store(true)
	d0, a0, t0 := total(), answered.Load(), time.Now()
	sc0, cc0 := p.cpu(), selfCPU()
	select {
	case <-time.After(cfg.dur):
	case err := <-writeErr: // maxSends reached, or a write failed
		if err != nil {
			return res, fmt.Errorf("publisher: %w", err)
		}
		res.capped = true
		writeErr <- nil
	case err := <-readErr:
		return res, fmt.Errorf("publisher: %w", err)
	}
	measuring.Store(false)
	res.delivered, res.sends, res.elapsed = total()-d0, answered.Load()-a0, time.Since(t0)
	res.serverCPU, res.clientCPU = p.cpu()-sc0, selfCPU()-cc0
	stop.Store(true)

	// Wait for the outstanding replies and the notifications they counted.
	end := time.Now().Add(cfg.drain)
	select {
	case err := <-writeErr:
		if err != nil {
			return res, fmt.Errorf("publisher: %w", err)
		}
	case <-time.After(cfg.drain):
		return res, errors.New("publisher: replies missing after the drain time")
	}
	for time.Now().Before(end) && (answered.Load() < sent || total() < sentSum.Load()) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, s := range subs {
		res.other += s.other.Load()
	}
	res.totalSends, res.totalFailed, res.totalSentCount = answered.Load(), failed.Load(), sentSum.Load()
	res.totalDelivered = total()
	res.dropped = dropped.Load()
	if answered.Load() < sent {
		return res, errors.New("publisher: replies missing after the drain time")
	}
	// Latencies: the readers still run; stop them before reading theirs.
	stopping.Store(true)
	for _, s := range subs {
		closeClean(s.c)
	}
	readers.Wait()
	res.firstDrop = firstDrop
	for i, s := range subs {
		res.lat.Merge(&s.lat)
		subs[i] = nil
	}
	return res, nil
}

// print writes the fan-out figures.
func (r fanoutResult) print(w io.Writer, cfg fanoutConfig) {
	secs := r.elapsed.Seconds()
	rate := float64(r.delivered) / secs
	fmt.Fprintf(w, "fanout: %d subscribers of %s, NOTIFY of %d data bytes, window %d, measured %.1fs after %.1fs warm-up\n",
		r.subs, cfg.resource, cfg.dataSize, cfg.window, secs, cfg.warmup.Seconds())
	fmt.Fprintf(w, "  delivered      %10.0f notifications/s   (%d in %.1fs; target: at least 200,000/s)\n", rate, r.delivered, secs)
	fmt.Fprintf(w, "  NOTIFYs        %10.0f /s answered\n", float64(r.sends)/secs)
	fmt.Fprintf(w, "  latency        p50 %v  p99 %v  max %v   (send to receipt, %d samples)\n",
		r.lat.Quantile(0.50), r.lat.Quantile(0.99), r.lat.Max(), r.lat.Count())
	if rate > 0 {
		// With the window full, a notification waits behind window x subs
		// others: latency is mostly this queue; -window 1 shows the rest.
		fmt.Fprintf(w, "                 (a full window queues %d notifications: %v at this rate; -window 1 for latency without that queue)\n",
			cfg.window*r.subs, time.Duration(float64(cfg.window*r.subs)/rate*float64(time.Second)).Round(time.Microsecond))
	}
	if r.serverCPU > 0 {
		fmt.Fprintf(w, "  server CPU     %.2f cores, %.2f µs per delivered notification\n",
			r.serverCPU.Seconds()/secs, float64(r.serverCPU.Microseconds())/float64(max(r.delivered, 1)))
	}
	fmt.Fprintf(w, "  client CPU     %.2f cores, %.2f µs per delivered notification\n",
		r.clientCPU.Seconds()/secs, float64(r.clientCPU.Microseconds())/float64(max(r.delivered, 1)))
	fmt.Fprintf(w, "  whole run      %d NOTIFYs answered (%d failed), sent_count sum %d, received %d (missing %d), %d other frames, %d subscribers dropped",
		r.totalSends, r.totalFailed, r.totalSentCount, r.totalDelivered, r.totalSentCount-r.totalDelivered, r.other, r.dropped)
	if r.firstDrop != "" {
		fmt.Fprintf(w, " (first: %s)", r.firstDrop)
	}
	fmt.Fprintln(w)
	if r.capped {
		fmt.Fprintln(w, "  CAPPED: -max NOTIFYs were sent before the measured time was over; raise -max")
	}
}
