package fleet

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// tally is the counts of one NOTIFY reported by the other nodes.
type tally struct {
	sum   int
	from  map[string]bool
	at    time.Time
	ready chan struct{} // signalled at each report
}

// countSubject is where the counts of node's NOTIFYs go.
func (f *Fleet) countSubject(node string) string {
	return "reso." + f.cfg.Name + ".count." + node
}

// Report implements [channel.Log].
func (f *Fleet) Report(node, id string, n int) {
	_ = f.nc.Publish(f.countSubject(node), []byte(id+" "+strconv.Itoa(n)+" "+f.node))
}

// onCount records one node's count of one of this node's NOTIFYs.
func (f *Fleet) onCount(m *nats.Msg) {
	parts := strings.Fields(string(m.Data))
	if len(parts) != 3 {
		return
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tallyOf(parts[0])
	if !t.from[parts[2]] {
		t.from[parts[2]] = true
		t.sum += n
	}
	select {
	case t.ready <- struct{}{}:
	default:
	}
}

// tallyOf returns the tally of proposal id, made on first use; f.mu is
// held. Tallies nobody gathered (a NOTIFY whose proposer gave up) are
// dropped after a minute.
func (f *Fleet) tallyOf(id string) *tally {
	t := f.tallies[id]
	if t == nil {
		now := time.Now()
		for k, old := range f.tallies {
			if now.Sub(old.at) > time.Minute {
				delete(f.tallies, k)
			}
		}
		t = &tally{from: make(map[string]bool), at: now, ready: make(chan struct{}, 1)}
		f.tallies[id] = t
	}
	return t
}

// Gather implements [channel.Log]: the sum of the counts of the other
// live nodes, waiting at most gatherTimeout for the last of them.
func (f *Fleet) Gather(ctx context.Context, id string) int {
	timer := time.NewTimer(gatherTimeout)
	defer timer.Stop()
	f.mu.Lock()
	t := f.tallyOf(id)
	f.mu.Unlock()
	for {
		live := f.Live()
		f.mu.Lock()
		all := true
		for _, n := range live {
			if n != f.node && !t.from[n] {
				all = false
			}
		}
		sum := t.sum
		if all {
			delete(f.tallies, id)
		}
		f.mu.Unlock()
		if all {
			return sum
		}
		select {
		case <-t.ready:
		case <-timer.C:
			f.mu.Lock()
			delete(f.tallies, id)
			f.mu.Unlock()
			return sum
		case <-ctx.Done():
			return sum
		}
	}
}
