package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/bench/internal/cluster"
)

// The streams of the fleet "bench"'s heartbeats and members (the second
// is missing before issue 36).
var beatStreams = []string{"KV_RESO_BENCH_NODES", "KV_RESO_BENCH_MEMBERS"}

// idleResult is what idleFigures measures.
type idleResult struct {
	msgs, bytes    float64
	cpu, rss, nats float64
}

// idleFigures measures, over window of idleness: the messages the
// consumers of the heartbeat streams delivered per second and their
// bytes, the mean CPU share and RSS (MiB) of the nodes, and the NATS
// process's CPU share.
func idleFigures(f *cluster.Fleet, nodes []*cluster.Node, window time.Duration) (idleResult, error) {
	var r idleResult
	nc, err := nats.Connect(f.NATSURLs())
	if err != nil {
		return r, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return r, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), window+time.Minute)
	defer cancel()

	d0, _, err := delivered(ctx, js)
	if err != nil {
		return r, err
	}
	cpu0, err := cpuTicks(nodes)
	if err != nil {
		return r, err
	}
	nats0, err := ticks(f.NATSPid())
	if err != nil {
		return r, err
	}
	began := time.Now()
	time.Sleep(window)
	d1, size, err := delivered(ctx, js)
	if err != nil {
		return r, err
	}
	cpu1, err := cpuTicks(nodes)
	if err != nil {
		return r, err
	}
	nats1, err := ticks(f.NATSPid())
	if err != nil {
		return r, err
	}
	secs := time.Since(began).Seconds()
	var msgs uint64
	for k, v := range d1 {
		msgs += v - min(v, d0[k])
	}
	r.msgs = float64(msgs) / secs
	r.bytes = r.msgs * size
	r.cpu = float64(cpu1-cpu0) / clockTicks / secs / float64(len(nodes))
	r.nats = float64(nats1-nats0) / clockTicks / secs
	for _, n := range nodes {
		kib, err := rssKiB(n.Pid())
		if err != nil {
			return r, err
		}
		r.rss += float64(kib) / 1024 / float64(len(nodes))
	}
	return r, nil
}

// delivered returns the messages each consumer of the heartbeat streams
// delivered so far, by stream and consumer, and the streams' mean
// message size in bytes.
func delivered(ctx context.Context, js jetstream.JetStream) (map[string]uint64, float64, error) {
	d := make(map[string]uint64)
	var bytes, msgs uint64
	for _, name := range beatStreams {
		s, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("stream %s: %w", name, err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			return nil, 0, err
		}
		bytes += info.State.Bytes
		msgs += info.State.Msgs
		l := s.ListConsumers(ctx)
		for ci := range l.Info() {
			d[name+"/"+ci.Name] = ci.Delivered.Consumer
		}
		if err := l.Err(); err != nil {
			return nil, 0, fmt.Errorf("consumers of %s: %w", name, err)
		}
	}
	return d, float64(bytes) / float64(max(msgs, 1)), nil
}

// clockTicks is the kernel's USER_HZ: the unit of /proc/<pid>/stat's times.
const clockTicks = 100

// cpuTicks returns the user and system CPU time of the nodes, summed.
func cpuTicks(nodes []*cluster.Node) (uint64, error) {
	var sum uint64
	for _, n := range nodes {
		t, err := ticks(n.Pid())
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// ticks returns the user and system CPU time of process pid.
func ticks(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command's ")": state is the first; utime and
	// stime are fields 14 and 15 of the line.
	s := string(b)
	fs := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fs) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	u, err1 := strconv.ParseUint(fs[11], 10, 64)
	k, err2 := strconv.ParseUint(fs[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return u + k, nil
}

// rssKiB returns the resident set size of process pid.
func rssKiB(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}
