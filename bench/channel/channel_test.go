package main

import (
	"encoding/json"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		frame   string
		id      int64
		isReply bool
		ok      bool
		sent    int64
		hasSent bool
		ts      int64
		hasTS   bool
	}{
		{name: "success", frame: `{"msg_id":17,"code":"success"}`, id: 17, isReply: true, ok: true},
		{name: "spaces", frame: `{"code": "success", "msg_id": 4}`, id: 4, isReply: true, ok: true},
		{name: "failed", frame: `{"msg_id":3,"code":"failed","reason":"no subscriber"}`, id: 3, isReply: true},
		{name: "sent_count", frame: `{"msg_id":9,"code":"success","sent_count":1000}`, id: 9, isReply: true, ok: true, sent: 1000, hasSent: true},
		{name: "notification", frame: `{"notify":"NOTIFY","resource":"/fan","data":"@ts=123456789;xxxx","from":"a","seq":5}`, ts: 123456789, hasTS: true},
		{name: "update", frame: `{"notify":"UPDATE","resource":"/hyg","delete":"h1","seq":6}`},
		{name: "no digits", frame: `{"msg_id":"x","code":"success"}`, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := []byte(tt.frame)
			id, isReply := msgID(b)
			if id != tt.id || isReply != tt.isReply {
				t.Errorf("msgID = %d, %v; want %d, %v", id, isReply, tt.id, tt.isReply)
			}
			if got := succeeded(b); got != tt.ok {
				t.Errorf("succeeded = %v, want %v", got, tt.ok)
			}
			if n, ok := sentCount(b); n != tt.sent || ok != tt.hasSent {
				t.Errorf("sentCount = %d, %v; want %d, %v", n, ok, tt.sent, tt.hasSent)
			}
			if n, ok := sendTime(b); n != tt.ts || ok != tt.hasTS {
				t.Errorf("sendTime = %d, %v; want %d, %v", n, ok, tt.ts, tt.hasTS)
			}
		})
	}
}

func TestAppendRequest(t *testing.T) {
	b := appendRequest(nil, "PUT", "/bench/p1/c0/7", 42, `,"persistent":true,"entity":{"n":42}`)
	var m struct {
		Method, Resource string
		MsgID            int64 `json:"msg_id"`
		Persistent       bool
		Entity           map[string]int
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if m.Method != "PUT" || m.Resource != "/bench/p1/c0/7" || m.MsgID != 42 || !m.Persistent || m.Entity["n"] != 42 {
		t.Errorf("%s decodes as %+v", b, m)
	}
}

func TestAppendPut(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		fields := `,"entity":{"n":42}`
		if persistent {
			fields = `,"persistent":true` + fields
		}
		want := appendRequest(nil, "PUT", "/bench/p1/c0/7", 42, fields)
		if got := appendPut(nil, "/bench/p1/c0", 7, 42, persistent); string(got) != string(want) {
			t.Errorf("appendPut(persistent %v) = %s, want %s", persistent, got, want)
		}
	}
}

func TestParsePhases(t *testing.T) {
	ps, err := parsePhases("notify@32, persistent@32,transient@256", 1000)
	if err != nil || len(ps) != 3 || ps[2] != (phase{"transient", 256}) {
		t.Fatalf("got %v, %v", ps, err)
	}
	for _, bad := range []string{"", "put@3", "notify@0", "notify@2000", "notify"} {
		if _, err := parsePhases(bad, 1000); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestFanout(t *testing.T) {
	f := newFake(t)
	d, err := newDialer(f.url(), 1024)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fanoutConfig{subs: 20, dialConc: 8, resource: "/fan", window: 4, dataSize: 100,
		warmup: 50 * time.Millisecond, dur: 300 * time.Millisecond, maxSends: 1_000_000, drain: 5 * time.Second, timeout: 10 * time.Second}
	res, err := runFanout(d, newProbe(os.Getpid(), ""), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if f.overflow.Load() != 0 {
		t.Fatalf("the fake server dropped %d notifications", f.overflow.Load())
	}
	if res.totalSends == 0 || res.totalFailed != 0 || res.totalSentCount != 20*res.totalSends {
		t.Errorf("sends %d, failed %d, sent_count sum %d: want sent_count = 20 per send, none failed",
			res.totalSends, res.totalFailed, res.totalSentCount)
	}
	if res.totalDelivered != res.totalSentCount || res.other != 0 || res.dropped != 0 {
		t.Errorf("received %d of %d, %d other frames, %d dropped", res.totalDelivered, res.totalSentCount, res.other, res.dropped)
	}
	if res.delivered > res.totalDelivered || res.sends > res.totalSends {
		t.Errorf("measured %d deliveries of %d sends: more than the whole run's %d and %d",
			res.delivered, res.sends, res.totalDelivered, res.totalSends)
	}
	if res.capped {
		t.Error("capped")
	}
	if res.lat.Count() == 0 || res.lat.Quantile(0.5) > res.lat.Quantile(0.99) || res.lat.Quantile(0.99) > res.lat.Max() {
		t.Errorf("latency: %d samples, p50 %v, p99 %v, max %d µs", res.lat.Count(), res.lat.Quantile(0.5), res.lat.Quantile(0.99), res.lat.Max())
	}
	var out strings.Builder
	res.print(&out, cfg)
	if !strings.Contains(out.String(), "notifications/s") {
		t.Errorf("print: %s", out.String())
	}
	t.Log("\n" + out.String())
}

func TestWrites(t *testing.T) {
	f := newFake(t)
	d, err := newDialer(f.url(), 1024)
	if err != nil {
		t.Fatal(err)
	}
	cfg := writesConfig{window: 4, dialConc: 4, prefix: "/bench/", warmup: 20 * time.Millisecond,
		dur: 200 * time.Millisecond, maxOps: 1_000_000, timeout: 10 * time.Second}
	p := newProbe(os.Getpid(), "")
	var out strings.Builder
	var base *writesResult
	for _, ph := range []phase{{"notify", 4}, {"persistent", 4}, {"transient", 8}} {
		res, err := runWrites(d, p, cfg, ph, "r1")
		if err != nil {
			t.Fatalf("%v: %v", ph, err)
		}
		switch ph.mode {
		case "notify":
			if res.ok != 0 || res.failed == 0 || res.firstFailure != "no subscriber" {
				t.Errorf("notify: %d ok, %d failed (%q): want every reply failed with no subscriber", res.ok, res.failed, res.firstFailure)
			}
			res.print(&out, nil)
			base = &res
			continue
		default:
			if res.ok == 0 || res.failed != 0 {
				t.Errorf("%s: %d ok, %d failed", ph.mode, res.ok, res.failed)
			}
		}
		res.print(&out, base)
	}
	if f.persist.Load() == 0 || f.persist.Load() == f.puts.Load() {
		t.Errorf("fake saw %d PUTs, %d persistent: want both kinds", f.puts.Load(), f.persist.Load())
	}
	t.Log("\n" + out.String())
}

func TestWritesMax(t *testing.T) {
	f := newFake(t)
	d, _ := newDialer(f.url(), 1024)
	// The run ends once the 100 replies are in; dur is only a bound.
	cfg := writesConfig{window: 4, dialConc: 4, prefix: "/bench/", dur: time.Minute, maxOps: 100, timeout: 10 * time.Second}
	res, err := runWrites(d, newProbe(0, ""), cfg, phase{"transient", 3}, "r2")
	if err != nil {
		t.Fatal(err)
	}
	if res.ok != 100 || !res.capped {
		t.Errorf("%d ok, capped %v: want exactly 100 and capped", res.ok, res.capped)
	}
}

// TestWritesRounds runs the phases twice in the same server and checks
// the summary: the transient phases' ratios to the notify phase before
// each, the first round apart.
func TestWritesRounds(t *testing.T) {
	f := newFake(t)
	d, _ := newDialer(f.url(), 1024)
	cfg := writesConfig{window: 4, dialConc: 4, prefix: "/bench/", warmup: 10 * time.Millisecond,
		dur: 100 * time.Millisecond, maxOps: 1_000_000, timeout: 10 * time.Second}
	var out strings.Builder
	ps := []phase{{"notify", 2}, {"transient", 2}}
	if err := runWritesRounds(&out, d, newProbe(os.Getpid(), ""), cfg, ps, 3, "rr", 0); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if n := strings.Count(out.String(), "\n  transient "); n != 3 {
		t.Errorf("%d transient phases printed, want 3", n)
	}
	if !strings.Contains(out.String(), "page faults/op") {
		t.Error("no page faults per operation with a pid")
	}
	re := regexp.MustCompile(`(?m)^transient ÷ notify over 3 rounds: round 1 \(a heap growing into fresh memory\) ([0-9.]+); later rounds ([0-9.]+) ([0-9.]+), median ([0-9.]+)$`)
	m := re.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no summary line of 3 rounds")
	}
	a, _ := strconv.ParseFloat(m[2], 64)
	b, _ := strconv.ParseFloat(m[3], 64)
	med, _ := strconv.ParseFloat(m[4], 64)
	if math.Abs(med-(a+b)/2) > 0.0011 {
		t.Errorf("median of %v and %v printed as %v", a, b, med)
	}
}

func TestHygiene(t *testing.T) {
	for _, rst := range []bool{false, true} {
		t.Run(map[bool]string{false: "fin", true: "rst"}[rst], func(t *testing.T) {
			f := newFake(t)
			d, _ := newDialer(f.url(), 1024)
			p := newProbe(os.Getpid(), f.debugAddr())
			cfg := hygieneConfig{cycles: 300, conc: 16, resource: "/hyg", rst: rst, prime: true, slack: 0,
				wait: 10 * time.Second, poll: 10 * time.Millisecond, timeout: 30 * time.Second}
			res, err := runHygiene(d, p, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.clean || res.children != 0 || res.subscribers != 0 || res.gor != res.baseGor || res.baseGor != 10 {
				t.Errorf("clean %v, children %d, subscribers %d, goroutines %d (baseline %d)",
					res.clean, res.children, res.subscribers, res.gor, res.baseGor)
			}
			if f.puts.Load() != 301 {
				t.Errorf("fake saw %d PUTs, want 300 and the priming one", f.puts.Load())
			}
			var out strings.Builder
			res.print(&out, cfg)
			t.Log("\n" + out.String())
		})
	}
}

// A subscriber that never goes away keeps the server from being clean:
// hygiene must give up after -wait and say so.
func TestHygieneNotClean(t *testing.T) {
	f := newFake(t)
	d, _ := newDialer(f.url(), 1024)
	stay, err := d.dial()
	if err != nil {
		t.Fatal(err)
	}
	defer stay.Close()
	p := newProbe(0, f.debugAddr())
	cfg := hygieneConfig{cycles: 10, conc: 2, resource: "/hyg", slack: 2,
		wait: 200 * time.Millisecond, poll: 20 * time.Millisecond, timeout: 10 * time.Second}
	// The baseline counts this connection's goroutines; its subscription
	// stays after the cycles.
	if _, err := mustSucceed(stay, message{Method: "SUBSCRIBE", Resource: "/hyg", MsgID: 1}, time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	res, err := runHygiene(d, p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.clean || res.subscribers != 1 || res.children != 0 {
		t.Errorf("clean %v, subscribers %d, children %d: want not clean with 1 subscriber, 0 children", res.clean, res.subscribers, res.children)
	}
}

func TestIdle(t *testing.T) {
	f := newFake(t)
	d, _ := newDialer(f.url(), 1024)
	p := newProbe(os.Getpid(), f.debugAddr())
	cfg := idleConfig{n: 50, dialConc: 8, prefix: "/idle/c", settle: 10 * time.Millisecond, timeout: 10 * time.Second}
	res, err := runIdle(d, p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.conns != 50 || res.gor-res.baseGor != 100 || res.heap-res.baseHeap != 50*4 || res.heapGC-res.baseHeap != 50*4 || res.dropped != 0 {
		t.Errorf("conns %d, goroutines %d-%d, heap %d (%d after a collection) - %d KiB, dropped %d: want 50, +100, +200 KiB, 0",
			res.conns, res.gor, res.baseGor, res.heap, res.heapGC, res.baseHeap, res.dropped)
	}
	if res.rssErr != nil || res.rss == 0 {
		t.Errorf("rss %d: %v", res.rss, res.rssErr)
	}
	f.mu.Lock()
	n := len(f.subs)
	f.mu.Unlock()
	if n != 50 {
		t.Errorf("fake has %d subscribed resources, want 50", n)
	}
	var out strings.Builder
	res.print(&out, cfg)
	t.Log("\n" + out.String())
}

func TestRules(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run(map[bool]string{false: "enforced", true: "ignored"}[ignore], func(t *testing.T) {
			f := newFake(t)
			f.ignoreRules = ignore
			d, _ := newDialer(f.url(), 1024)
			cfg := rulesConfig{subs: 10, dialConc: 4, open: "/bench/open/room", ruled: "/bench/ruled/room", rule: "group:rs",
				groupSize: 5, login: "bob@example.com:pw", adminToken: "t", window: 4, dataSize: 100, rounds: 2,
				warmup: 20 * time.Millisecond, dur: 100 * time.Millisecond, maxSends: 1_000_000, drain: 5 * time.Second, timeout: 10 * time.Second}
			res, err := runRules(d, newProbe(os.Getpid(), ""), cfg)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			res.print(&out, cfg)
			t.Log("\n" + out.String())
			if f.overflow.Load() != 0 {
				t.Fatalf("the fake server dropped %d notifications", f.overflow.Load())
			}
			if f.basic.Load() != 1 || f.logins.Load() != 1 {
				t.Errorf("%d handshakes with Basic, %d logins over HTTP: want 1 and 1 (cookies for the others)", f.basic.Load(), f.logins.Load())
			}
			if len(res.order) != 4 || len(res.rates) != 4 || res.order[0] != roomOpen || res.order[2] != roomRuled {
				t.Errorf("rounds %v, rates %v: want open, ruled, ruled, open", res.order, res.rates)
			}
			for room, rr := range res.rooms {
				if rr.totalSends == 0 || rr.totalFailed != 0 || rr.totalDelivered != rr.totalSends*10 || rr.minPerSub != rr.totalSends {
					t.Errorf("%s: %d sends (%d failed), members received %d (each at least %d)",
						roomNames[room], rr.totalSends, rr.totalFailed, rr.totalDelivered, rr.minPerSub)
				}
				if rr.delivered == 0 || rr.delivered > rr.totalDelivered || rr.lat.Count() == 0 {
					t.Errorf("%s: measured %d of %d, %d latency samples", roomNames[room], rr.delivered, rr.totalDelivered, rr.lat.Count())
				}
			}
			if res.ratio() <= 0 || res.figure() <= 0 || !strings.Contains(out.String(), "ratio ruled/open") {
				t.Errorf("ratio %v", res.ratio())
			}
			open, ruled := res.rooms[roomOpen], res.rooms[roomRuled]
			err = res.check(cfg)
			if ignore {
				if err == nil || ruled.outsider != ruled.totalSends {
					t.Errorf("rule ignored: check %v, outsider received %d of %d", err, ruled.outsider, ruled.totalSends)
				}
				return
			}
			if err != nil || ruled.outsider != 0 || open.outsider != open.totalSends || res.probe != "failed (forbidden)" {
				t.Errorf("check %v; outsider received %d (ruled), %d of %d (open); probe %q", err, ruled.outsider, open.outsider, open.totalSends, res.probe)
			}
		})
	}
}

func TestRoomTime(t *testing.T) {
	for _, tt := range []struct {
		frame string
		room  int
		ts    int64
		ok    bool
	}{
		{`{"notify":"NOTIFY","resource":"/a","data":"1@ts=42;xx","seq":1}`, 1, 42, true},
		{`{"notify":"NOTIFY","resource":"/a","data":"0@ts=7;","seq":1}`, 0, 7, true},
		{`{"notify":"NOTIFY","resource":"/a","data":"@ts=7;","seq":1}`, 0, 0, false},
		{`{"notify":"UPDATE","resource":"/a","seq":2}`, 0, 0, false},
	} {
		room, ts, ok := roomTime([]byte(tt.frame))
		if room != tt.room || ts != tt.ts || ok != tt.ok {
			t.Errorf("%s: %d, %d, %v; want %d, %d, %v", tt.frame, room, ts, ok, tt.room, tt.ts, tt.ok)
		}
	}
	if got := roundOrder(3); !slices.Equal(got, []int{0, 1, 1, 0, 0, 1}) {
		t.Errorf("roundOrder(3) = %v", got)
	}
	if g := groupOf(3, "bob@example.com"); len(g) != 3 || g[2] != "bob@example.com" || g[0] == g[1] {
		t.Errorf("groupOf(3) = %v", g)
	}
	r := rulesResult{order: roundOrder(2), rates: []float64{100, 90, 80, 100}}
	if got := r.pairRatios(); !slices.Equal(got, []float64{0.9, 0.8}) {
		t.Errorf("pairRatios = %v, want [0.9 0.8]", got)
	}
	if m := median([]float64{3, 1, 2, 10}); m != 2.5 {
		t.Errorf("median = %v", m)
	}
}

// The channels figure: each channel has its own subscriber and publisher;
// every NOTIFY reaches the one subscriber of its channel.
func TestChannels(t *testing.T) {
	f := newFake(t)
	d, err := newDialer(f.url(), 1024)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fanoutConfig{channels: 12, subs: 1, dialConc: 8, resource: "/ch", window: 4, dataSize: 100,
		warmup: 50 * time.Millisecond, dur: 300 * time.Millisecond, maxSends: 1_000_000, drain: 5 * time.Second, timeout: 10 * time.Second}
	res, err := runFanout(d, newProbe(os.Getpid(), ""), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if f.overflow.Load() != 0 {
		t.Fatalf("the fake server dropped %d notifications", f.overflow.Load())
	}
	f.mu.Lock()
	rooms := len(f.subs)
	f.mu.Unlock()
	if rooms != 12 || res.channels != 12 || res.subs != 12 {
		t.Errorf("fake has %d subscribed resources, result %d channels and %d subscribers: want 12 each", rooms, res.channels, res.subs)
	}
	if res.totalSends == 0 || res.totalFailed != 0 || res.totalSentCount != res.totalSends {
		t.Errorf("sends %d, failed %d, sent_count sum %d: want sent_count 1 per send, none failed",
			res.totalSends, res.totalFailed, res.totalSentCount)
	}
	if res.totalDelivered != res.totalSentCount || res.missing() != 0 || res.other != 0 || res.dropped != 0 {
		t.Errorf("received %d of %d, %d other frames, %d dropped", res.totalDelivered, res.totalSentCount, res.other, res.dropped)
	}
	if res.delivered == 0 || res.delivered > res.totalDelivered || res.lat.Count() == 0 {
		t.Errorf("measured %d deliveries of %d, %d latency samples", res.delivered, res.totalDelivered, res.lat.Count())
	}
	if s := res.sysShare(); s < 0 || s > 1 || res.serverSys > res.serverCPU {
		t.Errorf("system %v of server CPU %v: share %v", res.serverSys, res.serverCPU, s)
	}
	var out strings.Builder
	res.print(&out, cfg)
	if !strings.Contains(out.String(), "channels: 12 channels /ch/c<k>") || !strings.Contains(out.String(), " missing=0 ") {
		t.Errorf("print: %s", out.String())
	}
	t.Log("\n" + out.String())
}

// A run capped by -max ends early, says so, and still counts every
// notification of the NOTIFYs it sent.
func TestChannelsMax(t *testing.T) {
	f := newFake(t)
	d, _ := newDialer(f.url(), 1024)
	cfg := fanoutConfig{channels: 5, subs: 2, dialConc: 4, resource: "/ch", window: 2, dataSize: 40,
		dur: time.Minute, maxSends: 200, drain: 5 * time.Second, timeout: 10 * time.Second}
	res, err := runFanout(d, newProbe(0, ""), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.capped || res.totalSends != 200 || res.totalSentCount != 400 || res.totalDelivered != 400 {
		t.Errorf("capped %v, %d sends, sent_count sum %d, received %d: want capped, 200, 400, 400",
			res.capped, res.totalSends, res.totalSentCount, res.totalDelivered)
	}
}

// The system share comes from /proc: a process that spends time in the
// kernel has some.
func TestCPUSplit(t *testing.T) {
	p := newProbe(os.Getpid(), "")
	u0, s0 := p.cpuSplit()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for range 2000 {
			os.Getpid()
			f, err := os.Open(os.DevNull)
			if err == nil {
				f.Close()
			}
		}
		u1, s1 := p.cpuSplit()
		if s1 > s0 && u1 >= u0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("system time %v -> %v, user %v -> %v: no system time counted", s0, s1, u0, u1)
		}
	}
}
