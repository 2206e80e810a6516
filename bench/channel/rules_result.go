package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/reso-project/reso/bench/internal/latency"
)

// roomResult is what the rounds of one room measured.
type roomResult struct {
	delivered            int64         // notifications received by the subscribers, measured
	elapsed              time.Duration // measured time over the room's rounds
	sends                int64         // NOTIFYs answered in the measured time
	rates                []float64     // delivered/s of each round
	lat                  latency.Hist  // delivery latency, measured
	serverCPU, clientCPU time.Duration // over the measured time
	serverSys            time.Duration // the system part of serverCPU

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
			fmt.Fprintf(w, "  server CPU %.2f µs (system %.0f%%)", float64(rr.serverCPU.Microseconds())/float64(max(rr.delivered, 1)),
				100*float64(rr.serverSys)/float64(rr.serverCPU))
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
