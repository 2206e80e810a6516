package main

import (
	"github.com/reso-project/reso/bench/internal/latency"

	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
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

// roomResult is what the rounds of one room measured.
type roomResult struct {
	delivered            int64         // notifications received by the subscribers, measured
	elapsed              time.Duration // measured time over the room's rounds
	sends                int64         // NOTIFYs answered in the measured time
	rates                []float64     // delivered/s of each round
	lat                  latency.Hist  // delivery latency, measured
	serverCPU, clientCPU time.Duration // over the measured time

	totalSends     int64 // NOTIFYs answered in the whole run
	totalFailed    int64 // of them failed
	totalSentCount int64 // sum of the replies' sent_count
	totalDelivered int64 // notifications the subscribers received in the whole run
	minPerSub      int64 // fewest notifications one subscriber received
	outsider       int64 // notifications the outsider received
	capped         bool  // maxSends ended a round's measured time early
}

// rulesResult is what one run measured.
type rulesResult struct {
	subs      int
	session   string // how the subscribers authenticated
	effective string // the effective rights at the ruled room (RULES reply)
	rooms     [2]roomResult
	order     []int // the room of each round, in order
	rates     []float64
	probe     string // what SUBSCRIBE of the ruled room answered a new anonymous connection
	other     int64  // other frames received by subscribers
	dropped   int64  // subscriber connections that ended early
	firstDrop string
	firstFail string // reason of the first failed NOTIFY
}

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

// runRules sets the rooms up, connects the subscribers and measures the
// rounds.
func runRules(d *dialer, p *probe, cfg rulesConfig) (rulesResult, error) {
	var res rulesResult
	email, password, ok := strings.Cut(cfg.login, ":")
	if !ok || email == "" {
		return res, errors.New("-login: want EMAIL:PASSWORD")
	}
	deadline := time.Now().Add(cfg.timeout)
	rooms := [2]string{cfg.open, cfg.ruled}

	// The publisher: the administrator, whose checks are skipped.
	admin := http.Header{}
	admin.Set("Cookie", "user_id=0; token="+cfg.adminToken)
	pub, _, err := d.dialAs(admin)
	if err != nil {
		return res, fmt.Errorf("publisher: %w", err)
	}
	defer closeClean(pub)
	var id int64
	for _, r := range rooms {
		id++
		if _, err := mustSucceed(pub, message{Method: "PUT", Resource: r, MsgID: id, Persistent: true,
			Entity: []byte(`{"bench":"rules"}`)}, deadline); err != nil {
			return res, fmt.Errorf("publisher: %w", err)
		}
	}

	var stopping atomic.Bool
	var readers sync.WaitGroup
	var dropped atomic.Int64
	var dropMu sync.Mutex
	var firstDrop string
	var measuring atomic.Int32 // room+1 while a round of it is measured, else 0
	clock := time.Now()
	subs := make([]*roomSub, cfg.subs)
	var outsider *roomSub
	defer func() {
		stopping.Store(true)
		for _, s := range append(subs, outsider) {
			if s != nil {
				closeClean(s.c)
			}
		}
		readers.Wait()
	}()
	read := func(s *roomSub) {
		readers.Add(1)
		go func() {
			defer readers.Done()
			buf := make([]byte, 0, 512)
			for {
				var err error
				buf, err = readFrame(s.c, buf)
				if err != nil {
					if !stopping.Load() && dropped.Add(1) == 1 {
						dropMu.Lock()
						firstDrop = err.Error()
						dropMu.Unlock()
					}
					return
				}
				room, ts, ok := roomTime(buf)
				if !ok {
					s.other.Add(1)
					continue
				}
				s.got[room].Add(1)
				if int(measuring.Load()) == room+1 {
					s.lat[room].Add(time.Since(clock) - time.Duration(ts))
				}
			}
		}()
	}
	subscribe := func(s *roomSub, who string) error {
		for i, r := range rooms {
			if _, err := mustSucceed(s.c, message{Method: "SUBSCRIBE", Resource: r, MsgID: int64(i + 1)}, deadline); err != nil {
				return fmt.Errorf("%s: %w", who, err)
			}
		}
		return nil
	}

	// The outsider: an anonymous connection, not in the group, that
	// subscribes to both rooms before the rule is set; the rule must keep
	// the ruled room's notifications from it.
	oc, err := d.dial()
	if err != nil {
		return res, fmt.Errorf("outsider: %w", err)
	}
	outsider = &roomSub{c: oc}
	if err := subscribe(outsider, "outsider"); err != nil {
		return res, err
	}

	if cfg.rule != "" {
		id++
		rule := cfg.rule
		r, err := call(pub, message{Method: "RULES", Resource: cfg.ruled, MsgID: id, Rules: &rule, Group: groupOf(cfg.groupSize, email)}, deadline)
		if err != nil {
			return res, fmt.Errorf("publisher: %w", err)
		}
		if r.Code != "success" {
			return res, fmt.Errorf("RULES %s: %s (%s): the server does not set rules (-rule '' measures without)", cfg.ruled, r.Code, r.Reason)
		}
		res.effective = r.Effective
		// A new anonymous connection may no longer subscribe.
		c, err := d.dial()
		if err != nil {
			return res, fmt.Errorf("probe: %w", err)
		}
		r, err = call(c, message{Method: "SUBSCRIBE", Resource: cfg.ruled, MsgID: 1}, deadline)
		closeClean(c)
		if err != nil {
			return res, fmt.Errorf("probe: %w", err)
		}
		res.probe = r.Code
		if r.Reason != "" {
			res.probe += " (" + r.Reason + ")"
		}
	}
	read(outsider)

	// The subscribers: the first logs in with Basic in its handshake. The
	// others present session cookies, as a browser would, from a login
	// over HTTP (the handshake's answer sets none), or Basic again if
	// that gave none.
	cred := http.Header{}
	cred.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(email+":"+password)))
	c, _, err := d.dialAs(cred)
	if err != nil {
		return res, fmt.Errorf("subscriber 0: %w", err)
	}
	subs[0] = &roomSub{c: c}
	res.session = "Basic auth on every handshake (the login over HTTP set no session cookies)"
	if cookies, err := d.login(email, password); err != nil {
		return res, err
	} else if cookies != "" {
		cred = http.Header{}
		cred.Set("Cookie", cookies)
		res.session = "Basic auth on the first handshake; the session cookies of a login over HTTP on the others"
	}
	if err := subscribe(subs[0], "subscriber 0"); err != nil {
		return res, err
	}
	read(subs[0])
	err = forEach(cfg.subs-1, cfg.dialConc, func(i int) error {
		c, _, err := d.dialAs(cred)
		if err != nil {
			return fmt.Errorf("subscriber %d: %w", i+1, err)
		}
		s := &roomSub{c: c}
		subs[i+1] = s
		if err := subscribe(s, "subscriber "+strconv.Itoa(i+1)); err != nil {
			return err
		}
		read(s)
		return nil
	})
	if err != nil {
		return res, err
	}
	res.subs = cfg.subs

	// The publisher's replies, over all rounds. Its writes no longer have
	// the setup's deadline: the window bounds what it sends unanswered.
	pub.SetWriteDeadline(time.Time{})
	tokens := make(chan struct{}, cfg.window)
	var answered, failed, sentSum [2]atomic.Int64
	var failMu sync.Mutex
	var firstFail string
	readErr := make(chan error, 1)
	go func() {
		buf := make([]byte, 0, 512)
		for {
			var err error
			buf, err = readFrame(pub, buf)
			if err != nil {
				readErr <- err
				return
			}
			n, ok := msgID(buf)
			if !ok {
				continue
			}
			room := int(n & 1) // the msg_id of a NOTIFY is 2*k + its room
			if n, ok := sentCount(buf); ok {
				sentSum[room].Add(n)
			}
			if !succeeded(buf) {
				if failed[room].Add(1) == 1 {
					failMu.Lock()
					if firstFail == "" {
						firstFail = string(buf)
					}
					failMu.Unlock()
				}
			}
			answered[room].Add(1)
			<-tokens
		}
	}()

	got := func(room int) int64 {
		var n int64
		for _, s := range subs {
			n += s.got[room].Load()
		}
		return n
	}
	pad := strings.Repeat("x", max(cfg.dataSize-len("0@ts=1234567890123;"), 0))
	next := (id + 2) &^ 1 // msg_ids of NOTIFYs: above the setup's, 2*k + room
	var sent [2]int64
	res.order = roundOrder(cfg.rounds)
	for _, room := range res.order {
		var stop atomic.Bool
		var n int64
		done := make(chan error, 1)
		go func() { // this round's NOTIFYs
			b := make([]byte, 0, 256+len(pad))
			for n < cfg.maxSends && !stop.Load() {
				tokens <- struct{}{}
				n++
				next += 2
				ts := time.Since(clock).Nanoseconds()
				b = appendRequest(b[:0], "NOTIFY", rooms[room], next+int64(room),
					`,"data":"`+strconv.Itoa(room)+`@ts=`+strconv.FormatInt(ts, 10)+`;`+pad+`"`)
				if err := pub.WriteMessage(websocket.TextMessage, b); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		rr := &res.rooms[room]
		time.Sleep(cfg.warmup)
		measuring.Store(int32(room + 1))
		d0, a0, t0 := got(room), answered[room].Load(), time.Now()
		sc0, cc0 := p.cpu(), selfCPU()
		ended := false
		select {
		case <-time.After(cfg.dur):
		case err := <-done: // maxSends reached, or a write failed
			if err != nil {
				return res, fmt.Errorf("publisher: %w", err)
			}
			ended, rr.capped = true, true
		case err := <-readErr:
			return res, fmt.Errorf("publisher: %w", err)
		}
		measuring.Store(0)
		delivered, elapsed := got(room)-d0, time.Since(t0)
		rr.sends += answered[room].Load() - a0
		rr.serverCPU += p.cpu() - sc0
		rr.clientCPU += selfCPU() - cc0
		rr.delivered += delivered
		rr.elapsed += elapsed
		rate := float64(delivered) / elapsed.Seconds()
		rr.rates = append(rr.rates, rate)
		res.rates = append(res.rates, rate)
		stop.Store(true)

		// The round's last replies and the notifications of its NOTIFYs,
		// before the next round starts.
		if !ended {
			select {
			case err := <-done:
				if err != nil {
					return res, fmt.Errorf("publisher: %w", err)
				}
			case err := <-readErr:
				return res, fmt.Errorf("publisher: %w", err)
			case <-time.After(cfg.drain):
				return res, errors.New("publisher: a NOTIFY could not be sent within the drain time")
			}
		}
		sent[room] += n
		end := time.Now().Add(cfg.drain)
		for answered[room].Load() < sent[room] {
			if time.Now().After(end) {
				return res, errors.New("publisher: replies missing after the drain time")
			}
			time.Sleep(5 * time.Millisecond)
		}
		for time.Now().Before(end) && got(room) < sent[room]*int64(cfg.subs) && dropped.Load() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}

	for room := range rooms {
		rr := &res.rooms[room]
		rr.totalSends, rr.totalFailed, rr.totalSentCount = answered[room].Load(), failed[room].Load(), sentSum[room].Load()
		rr.totalDelivered = got(room)
		rr.minPerSub = -1
		for _, s := range subs {
			if n := s.got[room].Load(); rr.minPerSub < 0 || n < rr.minPerSub {
				rr.minPerSub = n
			}
		}
		rr.outsider = outsider.got[room].Load()
	}
	for _, s := range subs {
		res.other += s.other.Load()
	}
	res.dropped = dropped.Load()

	// Latencies: stop the readers before reading theirs.
	stopping.Store(true)
	for _, s := range append(subs, outsider) {
		closeClean(s.c)
	}
	readers.Wait()
	res.firstDrop, res.firstFail = firstDrop, firstFail
	for i, s := range subs {
		for room := range rooms {
			res.rooms[room].lat.Merge(&s.lat[room])
		}
		subs[i] = nil
	}
	outsider = nil
	return res, nil
}

// login sends a GET with Basic credentials to the HTTP door (the
// channel's URL with http and a slash) and returns its session cookies as
// a Cookie header value, "" if it set none. Any status but 401 will do:
// the door answers 404 for a resource that does not exist, with the
// cookies.
func (d *dialer) login(email, password string) (string, error) {
	u := "http" + strings.TrimPrefix(d.url, "ws") + "/"
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.SetBasicAuth(email, password)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "", fmt.Errorf("login: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return "", fmt.Errorf("login: GET %s as %s: %s", u, email, resp.Status)
	}
	var uid, token string
	for _, ck := range resp.Cookies() {
		switch ck.Name {
		case "user_id":
			uid = ck.Value
		case "token":
			token = ck.Value
		}
	}
	if uid == "" || token == "" {
		return "", nil
	}
	return "user_id=" + uid + "; token=" + token, nil
}

// median is the median of xs (0 for none); xs is left as it was.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// rate is the room's delivered notifications per second over its measured
// rounds.
func (r roomResult) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.delivered) / r.elapsed.Seconds()
}

// ratio is the ruled room's delivered/s over the open room's, from the
// totals of their rounds.
func (r rulesResult) ratio() float64 {
	if o := r.rooms[roomOpen].rate(); o > 0 {
		return r.rooms[roomRuled].rate() / o
	}
	return 0
}

// figure is the figure of issue 10: the median of the ratios ruled/open of
// the pairs of adjacent rounds.
func (r rulesResult) figure() float64 { return median(r.pairRatios()) }

// pairRatios is ruled/open of each pair of adjacent rounds (the rounds
// come in pairs, one of each room), which a drift over the run weighs on
// less than on the totals.
func (r rulesResult) pairRatios() []float64 {
	var out []float64
	for i := 0; i+1 < len(r.rates) && i+1 < len(r.order); i += 2 {
		o, ru := r.rates[i], r.rates[i+1]
		if r.order[i] == roomRuled {
			o, ru = ru, o
		}
		if o > 0 {
			out = append(out, ru/o)
		}
	}
	return out
}

// check says whether the rule was in force: the outsider received none of
// the ruled room's notifications and some of the open room's, every
// subscriber received some of the ruled room's, a new anonymous SUBSCRIBE
// of it was forbidden, and no NOTIFY failed. With no rule it checks only
// the NOTIFYs.
func (r rulesResult) check(cfg rulesConfig) error {
	var errs []error
	for room, rr := range r.rooms {
		if rr.totalFailed > 0 {
			errs = append(errs, fmt.Errorf("%d NOTIFYs to the %s room failed (first: %s)", rr.totalFailed, roomNames[room], r.firstFail))
		}
	}
	if cfg.rule == "" {
		return errors.Join(errs...)
	}
	ruled, open := r.rooms[roomRuled], r.rooms[roomOpen]
	if ruled.outsider != 0 {
		errs = append(errs, fmt.Errorf("the outsider (anonymous, not in the group) received %d notifications of the ruled room: the rule is not in force", ruled.outsider))
	}
	if open.outsider == 0 {
		errs = append(errs, errors.New("the outsider received no notification of the open room: it proves nothing"))
	}
	if ruled.minPerSub <= 0 {
		errs = append(errs, errors.New("a group member received no notification of the ruled room"))
	}
	if !strings.HasPrefix(r.probe, "failed (forbidden") {
		errs = append(errs, fmt.Errorf("SUBSCRIBE of the ruled room by a new anonymous connection answered %q, want failed (forbidden)", r.probe))
	}
	return errors.Join(errs...)
}

// print writes the figures of the run.
func (r rulesResult) print(w io.Writer, cfg rulesConfig) {
	email, _, _ := strings.Cut(cfg.login, ":")
	rule := "no rule: both rooms open (A/A)"
	if cfg.rule != "" {
		rule = fmt.Sprintf("rule %q and a group of %d e-mails (%s last)", cfg.rule, cfg.groupSize, email)
	}
	fmt.Fprintf(w, "rules: %d subscribers as %s of both %s (no rule) and %s (%s)\n", r.subs, email, cfg.open, cfg.ruled, rule)
	fmt.Fprintf(w, "  publisher: the administrator, NOTIFY of %d data bytes, window %d; %d rounds of %.1fs per room (ABBA), each after %.1fs of warm-up\n",
		cfg.dataSize, cfg.window, cfg.rounds, cfg.dur.Seconds(), cfg.warmup.Seconds())
	fmt.Fprintf(w, "  subscribers: %s\n", r.session)
	if r.effective != "" {
		fmt.Fprintf(w, "  effective at %s: %s\n", cfg.ruled, r.effective)
	}
	fmt.Fprint(w, "  rounds (delivered/s):")
	for i, room := range r.order {
		if i < len(r.rates) {
			fmt.Fprintf(w, " %s %.0f", roomNames[room], r.rates[i])
		}
	}
	fmt.Fprintln(w)
	for room, rr := range r.rooms {
		secs := rr.elapsed.Seconds()
		fmt.Fprintf(w, "  %-6s %10.0f delivered/s  (%d in %.1fs; median round %.0f/s)  NOTIFYs %.0f/s  latency p50 %v p99 %v",
			roomNames[room], rr.rate(), rr.delivered, secs, median(rr.rates), float64(rr.sends)/max(secs, 1e-9),
			rr.lat.Quantile(0.50), rr.lat.Quantile(0.99))
		if rr.serverCPU > 0 {
			fmt.Fprintf(w, "  server CPU %.2f µs", float64(rr.serverCPU.Microseconds())/float64(max(rr.delivered, 1)))
		}
		fmt.Fprintf(w, "  client CPU %.2f µs per notification\n", float64(rr.clientCPU.Microseconds())/float64(max(rr.delivered, 1)))
		if rr.capped {
			fmt.Fprintf(w, "         CAPPED: -max NOTIFYs were sent before a round of the %s room was over; raise -max\n", roomNames[room])
		}
	}
	// The figure is the median of the pairs: on two shared cores a round
	// now and then runs slow, and the totals move with it.
	pairs := r.pairRatios()
	fig := r.figure()
	verdict := "met"
	if fig < 0.90 {
		verdict = "NOT met"
	}
	fmt.Fprintf(w, "  ratio ruled/open  %.3f  median of the %d pairs of adjacent rounds", fig, len(pairs))
	if len(pairs) > 0 {
		fmt.Fprintf(w, " (%.3f to %.3f)", slices.Min(pairs), slices.Max(pairs))
	}
	fmt.Fprintf(w, "; target (issue 10): at least 0.90: %s\n", verdict)
	fmt.Fprintf(w, "                    %.3f  totals of the rounds", r.ratio())
	if o, ru := r.rooms[roomOpen], r.rooms[roomRuled]; o.serverCPU > 0 && ru.delivered > 0 && o.delivered > 0 {
		// CPU per notification moves less with a busy machine than the
		// throughput does.
		fmt.Fprintf(w, "; server CPU per notification ruled/open %.3f",
			(ru.serverCPU.Seconds()/float64(ru.delivered))/(o.serverCPU.Seconds()/float64(o.delivered)))
	}
	fmt.Fprintln(w)
	if cfg.rule != "" {
		ruled, open := r.rooms[roomRuled], r.rooms[roomOpen]
		fmt.Fprintf(w, "  rule check: ruled room: the %d group members received %d (each at least %d), the outsider (anonymous, subscribed before the rule) %d; open room: the outsider %d; a new anonymous SUBSCRIBE of %s: %s\n",
			r.subs, ruled.totalDelivered, ruled.minPerSub, ruled.outsider, open.outsider, cfg.ruled, r.probe)
	}
	fmt.Fprint(w, "  whole run:")
	for room, rr := range r.rooms {
		fmt.Fprintf(w, " %s %d NOTIFYs answered (%d failed), sent_count sum %d, members received %d of %d;",
			roomNames[room], rr.totalSends, rr.totalFailed, rr.totalSentCount, rr.totalDelivered, rr.totalSends*int64(r.subs))
	}
	fmt.Fprintf(w, " %d other frames, %d subscribers dropped", r.other, r.dropped)
	if r.firstDrop != "" {
		fmt.Fprintf(w, " (first: %s)", r.firstDrop)
	}
	fmt.Fprintln(w)
}
