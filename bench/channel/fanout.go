package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"time"

	"github.com/reso-project/reso/bench/internal/latency"
)

// fanoutConfig is the fan-out figure and its generalization to several
// channels: channels resources, each with subs connections subscribed to
// it and one publisher of its own sending NOTIFYs to it with at most
// window of them unanswered. The fan-out figure is one channel with many
// subscribers; the channels figure many channels with one subscriber
// each.
type fanoutConfig struct {
	channels int    // 1: the resource itself; more: resource/c<k>
	subs     int    // subscriber connections per channel
	dialConc int    // connections being opened at once
	resource string // the resource, or the prefix of the channels'
	window   int    // unanswered NOTIFYs per publisher
	dataSize int    // bytes of the data string of each NOTIFY
	warmup   time.Duration
	dur      time.Duration // measured time
	maxSends int64         // most NOTIFYs in the whole run, all publishers
	drain    time.Duration // wait for the last notifications after the end
	timeout  time.Duration // for connecting
	readBuf  int
}

// channelOf is the resource of channel k.
func (cfg fanoutConfig) channelOf(k int) string {
	if cfg.channels <= 1 {
		return cfg.resource
	}
	return cfg.resource + "/c" + strconv.Itoa(k)
}

// fanoutResult is what one run measured. Counts are over the measured
// time, except the totals used to check for losses.
type fanoutResult struct {
	channels, subs       int           // subs: all subscriber connections
	elapsed              time.Duration // measured time
	delivered            int64         // notifications received in it
	sends                int64         // NOTIFYs answered in it
	lat                  latency.Hist  // delivery latency in it
	serverCPU, clientCPU time.Duration // over the measured time
	serverSys            time.Duration // the system part of serverCPU

	totalSends, totalFailed int64 // all NOTIFYs answered, and those failed
	totalSentCount          int64 // sum of sent_count of the replies
	totalDelivered          int64 // notifications received in the whole run
	other                   int64 // other frames received by subscribers
	dropped                 int64 // subscribers whose connection ended early
	capped                  bool  // maxSends ended the measured time early
	firstDrop               string
}

// missing is the notifications the replies counted (sent_count) and no
// subscriber received.
func (r fanoutResult) missing() int64 { return r.totalSentCount - r.totalDelivered }

// runFanout connects the subscribers and the publishers, publishes for
// warmup+dur (or until maxSends) and waits for the last notifications.
func runFanout(d *dialer, p *probe, cfg fanoutConfig) (fanoutResult, error) {
	var res fanoutResult
	cfg.channels = max(cfg.channels, 1)
	a := newAudience(time.Now())
	defer a.close()
	deadline := time.Now().Add(cfg.timeout)
	if err := a.connect(d, cfg.channels*cfg.subs, cfg.dialConc, func(i int) string { return cfg.channelOf(i / cfg.subs) }, deadline); err != nil {
		return res, err
	}
	res.channels, res.subs = cfg.channels, cfg.channels*cfg.subs

	pubConns, err := dialAll(d, cfg.channels, cfg.dialConc)
	defer func() {
		for _, c := range pubConns {
			if c != nil {
				closeClean(c)
			}
		}
	}()
	if err != nil {
		return res, err
	}
	pad := strings.Repeat("x", max(cfg.dataSize-len("@ts=1234567890123;"), 0))
	run := newPublishing(cfg.maxSends, a.clock)
	defer run.end()
	pubs := make([]*publisher, cfg.channels)
	for k, c := range pubConns {
		pubs[k] = run.start(c, cfg.channelOf(k), cfg.window, pad)
	}
	sum := func(f func(*publisher) int64) int64 {
		var n int64
		for _, pb := range pubs {
			n += f(pb)
		}
		return n
	}
	answered := func() int64 { return sum(func(pb *publisher) int64 { return pb.answered.Load() }) }

	time.Sleep(cfg.warmup)
	a.measuring.Store(true)
	d0, a0, t0 := a.delivered(), answered(), time.Now()
	su0, ss0 := p.cpuSplit()
	cc0 := selfCPU()
	select {
	case <-time.After(cfg.dur):
	case <-run.spent:
		res.capped = true
	case err := <-run.errs:
		return res, fmt.Errorf("publisher: %w", err)
	}
	a.measuring.Store(false)
	res.delivered, res.sends, res.elapsed = a.delivered()-d0, answered()-a0, time.Since(t0)
	su1, ss1 := p.cpuSplit()
	res.serverCPU, res.serverSys, res.clientCPU = su1+ss1-su0-ss0, ss1-ss0, selfCPU()-cc0

	// Wait for the outstanding replies and the notifications they counted.
	end := time.Now().Add(cfg.drain)
	if !run.stop(cfg.drain) {
		return res, errors.New("publisher: replies missing after the drain time")
	}
	sent := sum(func(pb *publisher) int64 { return pb.sent.Load() })
	sentSum := func() int64 { return sum(func(pb *publisher) int64 { return pb.sentSum.Load() }) }
	for time.Now().Before(end) && (answered() < sent || a.delivered() < sentSum()) {
		time.Sleep(10 * time.Millisecond)
	}
	res.other = a.other()
	res.totalSends, res.totalSentCount = answered(), sentSum()
	res.totalFailed = sum(func(pb *publisher) int64 { return pb.failed.Load() })
	res.totalDelivered = a.delivered()
	res.dropped = a.drops.n.Load()
	if res.totalSends < sent {
		return res, errors.New("publisher: replies missing after the drain time")
	}
	// Latencies: the readers still run; stop them before reading theirs.
	a.close()
	res.firstDrop = a.drops.firstErr()
	a.latency(&res.lat)
	return res, nil
}

// print writes the figures of a run.
func (r fanoutResult) print(w io.Writer, cfg fanoutConfig) {
	secs := r.elapsed.Seconds()
	rate := float64(r.delivered) / secs
	if r.channels <= 1 {
		fmt.Fprintf(w, "fanout: %d subscribers of %s, NOTIFY of %d data bytes, window %d, measured %.1fs after %.1fs warm-up\n",
			r.subs, cfg.resource, cfg.dataSize, cfg.window, secs, cfg.warmup.Seconds())
	} else {
		fmt.Fprintf(w, "channels: %d channels %s/c<k>, %d subscriber(s) and one publisher each, NOTIFY of %d data bytes, window %d per publisher, measured %.1fs after %.1fs warm-up\n",
			r.channels, cfg.resource, r.subs/r.channels, cfg.dataSize, cfg.window, secs, cfg.warmup.Seconds())
	}
	target := ""
	if r.channels <= 1 {
		target = "; target: at least 200,000/s"
	}
	fmt.Fprintf(w, "  delivered      %10.0f notifications/s   (%d in %.1fs%s)\n", rate, r.delivered, secs, target)
	fmt.Fprintf(w, "  NOTIFYs        %10.0f /s answered\n", float64(r.sends)/secs)
	fmt.Fprintf(w, "  latency        p50 %v  p99 %v  max %v   (send to receipt, %d samples)\n",
		r.lat.Quantile(0.50), r.lat.Quantile(0.99), r.lat.Max(), r.lat.Count())
	if rate > 0 {
		// With the windows full, a notification waits behind window x
		// subscribers others: latency is mostly this queue; -window 1
		// shows the rest.
		q := cfg.window * r.subs
		fmt.Fprintf(w, "                 (full windows queue %d notifications: %v at this rate; -window 1 for latency without that queue)\n",
			q, time.Duration(float64(q)/rate*float64(time.Second)).Round(time.Microsecond))
	}
	if r.serverCPU > 0 {
		fmt.Fprintf(w, "  server CPU     %.2f cores, %.2f µs per delivered notification, %.2f µs per NOTIFY; system time %.0f%%\n",
			r.serverCPU.Seconds()/secs, perMicro(r.serverCPU, r.delivered), perMicro(r.serverCPU, r.sends), 100*r.sysShare())
	}
	fmt.Fprintf(w, "  client CPU     %.2f cores, %.2f µs per delivered notification\n",
		r.clientCPU.Seconds()/secs, perMicro(r.clientCPU, r.delivered))
	fmt.Fprintf(w, "  whole run      %d NOTIFYs answered (%d failed), sent_count sum %d, received %d (missing %d), %d other frames, %d subscribers dropped",
		r.totalSends, r.totalFailed, r.totalSentCount, r.totalDelivered, r.missing(), r.other, r.dropped)
	if r.firstDrop != "" {
		fmt.Fprintf(w, " (first: %s)", r.firstDrop)
	}
	fmt.Fprintln(w)
	if r.capped {
		fmt.Fprintln(w, "  CAPPED: -max NOTIFYs were sent before the measured time was over; raise -max")
	}
	// One line of key=value for scripts (bench/channel-vs-bare.sh).
	fmt.Fprintf(w, "  figures        deliveries_per_s=%.0f server_us_per_delivery=%.3f server_us_per_notify=%.3f sys_share=%.3f p50_us=%d p99_us=%d missing=%d failed=%d dropped=%d\n",
		rate, perMicro(r.serverCPU, r.delivered), perMicro(r.serverCPU, r.sends), r.sysShare(),
		r.lat.Quantile(0.50).Microseconds(), r.lat.Quantile(0.99).Microseconds(), r.missing(), r.totalFailed, r.dropped)
}

// sysShare is the system time's share of the server's CPU time.
func (r fanoutResult) sysShare() float64 {
	if r.serverCPU <= 0 {
		return 0
	}
	return float64(r.serverSys) / float64(r.serverCPU)
}

// perMicro is d in microseconds per one of n.
func perMicro(d time.Duration, n int64) float64 {
	return float64(d.Nanoseconds()) / 1e3 / float64(max(n, 1))
}
