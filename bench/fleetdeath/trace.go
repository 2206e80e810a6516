package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// spread is the distribution of a figure over the clients.
type spread struct {
	n              int
	p50, p99, last float64
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	slices.Sort(xs)
	return spread{n: len(xs), p50: xs[len(xs)/2], p99: xs[min(len(xs)-1, len(xs)*99/100)], last: xs[len(xs)-1]}
}

// secs prints a spread of seconds.
func (s spread) secs() string {
	return fmt.Sprintf("p50 %.2f s, p99 %.2f s, max %.2f s", s.p50, s.p99, s.last)
}

// count prints a spread of counts.
func (s spread) count() string {
	return fmt.Sprintf("p50 %g, p99 %g, max %g", s.p50, s.p99, s.last)
}

// printTrace prints, for the clients of one kind, the distribution of
// the time from the kill to their first resync, split in the kill to the
// open of the connection that subscribed again and that open to the
// resync; the attempts each took; the waits between attempts; and what
// ended the attempts that failed.
func printTrace(w io.Writer, kind string, r report, killed time.Time) {
	var resub, open, sub, attempts, waits []float64
	for k, ms := range r.First {
		if ms == 0 {
			continue
		}
		resub = append(resub, time.UnixMilli(ms).Sub(killed).Seconds())
		if k < len(r.Opened) && r.Opened[k] > 0 {
			open = append(open, time.UnixMilli(r.Opened[k]).Sub(killed).Seconds())
			sub = append(sub, time.UnixMilli(ms).Sub(time.UnixMilli(r.Opened[k])).Seconds())
		}
		if k < len(r.Attempts) {
			attempts = append(attempts, float64(r.Attempts[k]))
		}
	}
	for _, ms := range r.Waits {
		waits = append(waits, float64(ms)/1000)
	}
	fmt.Fprintf(w, "    %s clients: kill to subscribed again %s; recovered: true %d of %d, missed %d\n", kind, spreadOf(resub).secs(), r.Recovered, r.Clients, r.Missed)
	if len(r.Attempts) == 0 {
		return
	}
	fmt.Fprintf(w, "      kill to the open of the connection that subscribed again %s; that open to the resync %s\n", spreadOf(open).secs(), spreadOf(sub).secs())
	fmt.Fprintf(w, "      connection attempts per client %s; waits between attempts (%d) %s\n", spreadOf(attempts).count(), len(waits), spreadOf(waits).secs())
	var ended []string
	for _, k := range slices.Sorted(maps.Keys(r.Ended)) {
		ended = append(ended, fmt.Sprintf("%s: %d", k, r.Ended[k]))
	}
	if len(ended) == 0 {
		ended = []string{"none"}
	}
	probes := ""
	if r.Probes > 0 {
		probes = fmt.Sprintf("; GETs learning a failed handshake's status (reso.js's probe): %d", r.Probes)
	}
	fmt.Fprintf(w, "      failed attempts, by what ended them: %s%s\n", strings.Join(ended, ", "), probes)
}
