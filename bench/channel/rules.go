package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/bench/internal/latency"
)

// rulesConfig is the cost of the permission checks (issue 10): one
// fan-out to two resources of the same server, one under the default open
// rules and one with a rule and a group that admits the subscribers,
// measured in alternating rounds with the same subscribers, publisher and
// window.
type rulesConfig struct {
	subs       int
	dialConc   int
	open       string // room 0: no rule of its own
	ruled      string // room 1: rule and group set with RULES
	rule       string // "": no RULES at all (both rooms open, an A/A run)
	groupSize  int    // members of the group, the subscribers' e-mail last
	login      string // EMAIL:PASSWORD of every subscriber
	adminToken string // the publisher's token cookie, with user_id 0
	window     int
	dataSize   int
	rounds     int           // measured rounds per room
	warmup     time.Duration // publishing before each round's measurement
	dur        time.Duration // measured time of one round
	maxSends   int64         // most NOTIFYs in one round
	drain      time.Duration // wait for a round's last replies and notifications
	timeout    time.Duration // for connecting
	readBuf    int
}

// The two rooms, as indexes into the per-room counters.
const (
	roomOpen  = 0
	roomRuled = 1
)

var roomNames = [2]string{"open", "ruled"}

// roomSub counts the notifications one connection receives, per room.
type roomSub struct {
	c     *websocket.Conn
	got   [2]atomic.Int64
	other atomic.Int64
	lat   [2]latency.Hist // written by the reader only, read after it ended
}

// roomTime finds the send time that the publisher embedded after tsMarker
// in a notification's data and the room digit just before the marker.
func roomTime(frame []byte) (room int, ts int64, ok bool) {
	i := bytes.Index(frame, tsMarker)
	if i < 1 || (frame[i-1] != '0' && frame[i-1] != '1') {
		return 0, 0, false
	}
	ts, ok = leadingInt(frame[i+len(tsMarker):])
	return int(frame[i-1] - '0'), ts, ok
}

// roundOrder is the room of each round: open and ruled, then ruled and
// open, and so on (ABBA), so that a drift over the run weighs on both.
func roundOrder(rounds int) []int {
	out := make([]int, 0, 2*rounds)
	for k := range rounds {
		if k%2 == 0 {
			out = append(out, roomOpen, roomRuled)
		} else {
			out = append(out, roomRuled, roomOpen)
		}
	}
	return out
}

// groupOf returns n e-mails ending with email: the group set on the ruled
// room. The subscribers' e-mail comes last, the farthest a search of the
// members in order would have to go.
func groupOf(n int, email string) []string {
	g := make([]string, 0, n)
	for i := 1; i < n; i++ {
		g = append(g, fmt.Sprintf("member%04d@example.org", i))
	}
	return append(g, email)
}

// rulesRun is one run of runRules: its connections and the counters their
// readers keep.
type rulesRun struct {
	d        *dialer
	p        *probe
	cfg      rulesConfig
	res      rulesResult
	email    string
	password string
	deadline time.Time // of the setup
	rooms    [2]string
	clock    time.Time // the origin of the send times in the data
	id       int64     // the publisher's last msg_id of the setup

	pub      *websocket.Conn // the publisher: the administrator
	subs     []*roomSub
	outsider *roomSub

	stopping  atomic.Bool
	stopOnce  sync.Once
	readers   sync.WaitGroup
	dropped   atomic.Int64
	dropMu    sync.Mutex
	firstDrop string
	measuring atomic.Int32 // room+1 while a round of it is measured, else 0

	// The publisher's replies, by room.
	tokens                    chan struct{} // the window of unanswered NOTIFYs
	answered, failed, sentSum [2]atomic.Int64
	failMu                    sync.Mutex
	firstFail                 string
	readErr                   chan error
}

// runRules sets the rooms up, connects the subscribers and measures the
// rounds.
func runRules(d *dialer, p *probe, cfg rulesConfig) (rulesResult, error) {
	r := &rulesRun{d: d, p: p, cfg: cfg, rooms: [2]string{cfg.open, cfg.ruled}, clock: time.Now(),
		subs: make([]*roomSub, cfg.subs), deadline: time.Now().Add(cfg.timeout)}
	var ok bool
	if r.email, r.password, ok = strings.Cut(cfg.login, ":"); !ok || r.email == "" {
		return r.res, errors.New("-login: want EMAIL:PASSWORD")
	}
	defer r.stop()
	for _, phase := range []func() error{r.setUp, r.connect, r.publish} {
		if err := phase(); err != nil {
			return r.res, err
		}
	}
	r.collect()
	return r.res, nil
}

// setUp connects the publisher, which creates the rooms, and the outsider,
// then sets the rule on the ruled room and checks that a new anonymous
// connection may no longer subscribe to it.
func (r *rulesRun) setUp() error {
	admin := http.Header{}
	admin.Set("Cookie", "user_id=0; token="+r.cfg.adminToken)
	pub, _, err := r.d.dialAs(admin)
	if err != nil {
		return fmt.Errorf("publisher: %w", err)
	}
	r.pub = pub
	for _, room := range r.rooms {
		r.id++
		if _, err := mustSucceed(pub, message{Method: "PUT", Resource: room, MsgID: r.id, Persistent: true,
			Entity: []byte(`{"bench":"rules"}`)}, r.deadline); err != nil {
			return fmt.Errorf("publisher: %w", err)
		}
	}

	// The outsider: an anonymous connection, not in the group, that
	// subscribes to both rooms before the rule is set; the rule must keep
	// the ruled room's notifications from it.
	oc, err := r.d.dial()
	if err != nil {
		return fmt.Errorf("outsider: %w", err)
	}
	r.outsider = &roomSub{c: oc}
	if err := r.subscribe(r.outsider, "outsider"); err != nil {
		return err
	}
	if r.cfg.rule != "" {
		r.id++
		rule := r.cfg.rule
		rep, err := call(pub, message{Method: "RULES", Resource: r.cfg.ruled, MsgID: r.id, Rules: &rule, Group: groupOf(r.cfg.groupSize, r.email)}, r.deadline)
		if err != nil {
			return fmt.Errorf("publisher: %w", err)
		}
		if rep.Code != "success" {
			return fmt.Errorf("RULES %s: %s (%s): the server does not set rules (-rule '' measures without)", r.cfg.ruled, rep.Code, rep.Reason)
		}
		r.res.effective = rep.Effective
		c, err := r.d.dial()
		if err != nil {
			return fmt.Errorf("probe: %w", err)
		}
		rep, err = call(c, message{Method: "SUBSCRIBE", Resource: r.cfg.ruled, MsgID: 1}, r.deadline)
		closeClean(c)
		if err != nil {
			return fmt.Errorf("probe: %w", err)
		}
		r.res.probe = rep.Code
		if rep.Reason != "" {
			r.res.probe += " (" + rep.Reason + ")"
		}
	}
	r.read(r.outsider)
	return nil
}

// connect connects the subscribers: the first logs in with Basic in its
// handshake; the others present session cookies, as a browser would, from
// a login over HTTP (the handshake's answer sets none), or Basic again if
// that gave none.
func (r *rulesRun) connect() error {
	cred := http.Header{}
	cred.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(r.email+":"+r.password)))
	c, _, err := r.d.dialAs(cred)
	if err != nil {
		return fmt.Errorf("subscriber 0: %w", err)
	}
	r.subs[0] = &roomSub{c: c}
	r.res.session = "Basic auth on every handshake (the login over HTTP set no session cookies)"
	if cookies, err := r.d.login(r.email, r.password); err != nil {
		return err
	} else if cookies != "" {
		cred = http.Header{}
		cred.Set("Cookie", cookies)
		r.res.session = "Basic auth on the first handshake; the session cookies of a login over HTTP on the others"
	}
	if err := r.subscribe(r.subs[0], "subscriber 0"); err != nil {
		return err
	}
	r.read(r.subs[0])
	err = forEach(r.cfg.subs-1, r.cfg.dialConc, func(i int) error {
		c, _, err := r.d.dialAs(cred)
		if err != nil {
			return fmt.Errorf("subscriber %d: %w", i+1, err)
		}
		s := &roomSub{c: c}
		r.subs[i+1] = s
		if err := r.subscribe(s, "subscriber "+strconv.Itoa(i+1)); err != nil {
			return err
		}
		r.read(s)
		return nil
	})
	if err != nil {
		return err
	}
	r.res.subs = r.cfg.subs
	return nil
}

// subscribe subscribes s to both rooms.
func (r *rulesRun) subscribe(s *roomSub, who string) error {
	for i, room := range r.rooms {
		if _, err := mustSucceed(s.c, message{Method: "SUBSCRIBE", Resource: room, MsgID: int64(i + 1)}, r.deadline); err != nil {
			return fmt.Errorf("%s: %w", who, err)
		}
	}
	return nil
}

// read starts the reader of s: it counts the notifications of each room,
// and their latency while a round of that room is measured.
func (r *rulesRun) read(s *roomSub) {
	r.readers.Go(func() {
		buf := make([]byte, 0, 512)
		for {
			var err error
			buf, err = readFrame(s.c, buf)
			if err != nil {
				if !r.stopping.Load() && r.dropped.Add(1) == 1 {
					r.dropMu.Lock()
					r.firstDrop = err.Error()
					r.dropMu.Unlock()
				}
				return
			}
			room, ts, ok := roomTime(buf)
			if !ok {
				s.other.Add(1)
				continue
			}
			s.got[room].Add(1)
			if int(r.measuring.Load()) == room+1 {
				s.lat[room].Add(time.Since(r.clock) - time.Duration(ts))
			}
		}
	})
}

// got returns the notifications of room the subscribers received.
func (r *rulesRun) got(room int) int64 {
	var n int64
	for _, s := range r.subs {
		n += s.got[room].Load()
	}
	return n
}

// readReplies reads the publisher's replies over all rounds, by room (the
// msg_id of a NOTIFY is 2*k + its room), freeing a place in the window
// for each.
func (r *rulesRun) readReplies() {
	buf := make([]byte, 0, 512)
	for {
		var err error
		buf, err = readFrame(r.pub, buf)
		if err != nil {
			r.readErr <- err
			return
		}
		n, ok := msgID(buf)
		if !ok {
			continue
		}
		room := int(n & 1)
		if n, ok := sentCount(buf); ok {
			r.sentSum[room].Add(n)
		}
		if !succeeded(buf) && r.failed[room].Add(1) == 1 {
			r.failMu.Lock()
			if r.firstFail == "" {
				r.firstFail = string(buf)
			}
			r.failMu.Unlock()
		}
		r.answered[room].Add(1)
		<-r.tokens
	}
}

// publish runs the rounds in ABBA order.
func (r *rulesRun) publish() error {
	// Writes no longer have the setup's deadline: the window bounds what
	// the publisher sends unanswered.
	r.pub.SetWriteDeadline(time.Time{})
	r.tokens = make(chan struct{}, r.cfg.window)
	r.readErr = make(chan error, 1)
	go r.readReplies()
	pad := strings.Repeat("x", max(r.cfg.dataSize-len("0@ts=1234567890123;"), 0))
	next := (r.id + 2) &^ 1 // msg_ids of NOTIFYs: above the setup's, 2*k + room
	var sent [2]int64
	r.res.order = roundOrder(r.cfg.rounds)
	for _, room := range r.res.order {
		n, err := r.round(room, &next, pad)
		if err != nil {
			return err
		}
		// The round's last replies and the notifications of its NOTIFYs,
		// before the next round starts.
		sent[room] += n
		end := time.Now().Add(r.cfg.drain)
		for r.answered[room].Load() < sent[room] {
			if time.Now().After(end) {
				return errors.New("publisher: replies missing after the drain time")
			}
			time.Sleep(5 * time.Millisecond)
		}
		for time.Now().Before(end) && r.got(room) < sent[room]*int64(r.cfg.subs) && r.dropped.Load() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		// The outsider's too, which its reader may take longer to read
		// than the members' (658 of 660 were counted once on a loaded
		// machine): all of the open room's, and those of the ruled room
		// it is receiving (all when the rule is ignored; when it holds,
		// none come, and nothing is awaited).
		for time.Now().Before(end) && r.dropped.Load() == 0 {
			o := r.outsider.got[room].Load()
			if o >= sent[room] || o == 0 && room != roomOpen {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// round runs one round of room: NOTIFYs from a goroutine, a warm-up, then
// the measured time; it returns how many NOTIFYs it sent, once the sender
// has stopped. next is the last msg_id used.
func (r *rulesRun) round(room int, next *int64, pad string) (int64, error) {
	var stop atomic.Bool
	var n int64
	done := make(chan error, 1)
	go func() {
		b := make([]byte, 0, 256+len(pad))
		for n < r.cfg.maxSends && !stop.Load() {
			r.tokens <- struct{}{}
			n++
			*next += 2
			ts := time.Since(r.clock).Nanoseconds()
			b = appendRequest(b[:0], "NOTIFY", r.rooms[room], *next+int64(room),
				`,"data":"`+strconv.Itoa(room)+`@ts=`+strconv.FormatInt(ts, 10)+`;`+pad+`"`)
			if err := r.pub.WriteMessage(websocket.TextMessage, b); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	rr := &r.res.rooms[room]
	time.Sleep(r.cfg.warmup)
	r.measuring.Store(int32(room + 1))
	d0, a0, t0 := r.got(room), r.answered[room].Load(), time.Now()
	su0, ss0 := r.p.cpuSplit()
	cc0 := selfCPU()
	ended := false
	select {
	case <-time.After(r.cfg.dur):
	case err := <-done: // maxSends reached, or a write failed
		if err != nil {
			return 0, fmt.Errorf("publisher: %w", err)
		}
		ended, rr.capped = true, true
	case err := <-r.readErr:
		return 0, fmt.Errorf("publisher: %w", err)
	}
	r.measuring.Store(0)
	delivered, elapsed := r.got(room)-d0, time.Since(t0)
	rr.sends += r.answered[room].Load() - a0
	su1, ss1 := r.p.cpuSplit()
	rr.serverCPU += su1 + ss1 - su0 - ss0
	rr.serverSys += ss1 - ss0
	rr.clientCPU += selfCPU() - cc0
	rr.delivered += delivered
	rr.elapsed += elapsed
	rate := float64(delivered) / elapsed.Seconds()
	rr.rates = append(rr.rates, rate)
	r.res.rates = append(r.res.rates, rate)
	stop.Store(true)
	if !ended {
		select {
		case err := <-done:
			if err != nil {
				return 0, fmt.Errorf("publisher: %w", err)
			}
		case err := <-r.readErr:
			return 0, fmt.Errorf("publisher: %w", err)
		case <-time.After(r.cfg.drain):
			return 0, errors.New("publisher: a NOTIFY could not be sent within the drain time")
		}
	}
	return n, nil
}

// stop closes every connection and waits for the subscribers' readers,
// once however often it is called.
func (r *rulesRun) stop() {
	r.stopOnce.Do(func() {
		r.stopping.Store(true)
		for _, s := range append(r.subs, r.outsider) {
			if s != nil {
				closeClean(s.c)
			}
		}
		r.readers.Wait()
		if r.pub != nil {
			closeClean(r.pub)
		}
	})
}

// collect fills the result's totals and, once the readers have stopped,
// the latencies.
func (r *rulesRun) collect() {
	for room := range r.rooms {
		rr := &r.res.rooms[room]
		rr.totalSends, rr.totalFailed, rr.totalSentCount = r.answered[room].Load(), r.failed[room].Load(), r.sentSum[room].Load()
		rr.totalDelivered = r.got(room)
		rr.minPerSub = -1
		for _, s := range r.subs {
			if n := s.got[room].Load(); rr.minPerSub < 0 || n < rr.minPerSub {
				rr.minPerSub = n
			}
		}
		rr.outsider = r.outsider.got[room].Load()
	}
	for _, s := range r.subs {
		r.res.other += s.other.Load()
	}
	r.res.dropped = r.dropped.Load()
	r.stop()
	r.res.firstDrop, r.res.firstFail = r.firstDrop, r.firstFail
	for _, s := range r.subs {
		for room := range r.rooms {
			r.res.rooms[room].lat.Merge(&s.lat[room])
		}
	}
}
