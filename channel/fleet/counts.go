package fleet

import (
	"bytes"
	"context"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reso-project/reso/channel"
)

// tally is the counts of one NOTIFY reported by the other nodes.
type tally struct {
	sum   int
	from  map[string]bool
	at    time.Time
	ready chan struct{} // signalled at each report
}

// Bounds of the tallies: one nobody gathered (its proposer gave up) is
// dropped by the sweep after tallyAge.
const (
	tallyAge   = time.Minute
	tallySweep = 10 * time.Second
)

// countSubject is where the counts of node's NOTIFYs go.
func (f *Fleet) countSubject(node string) string {
	return "reso." + f.cfg.Name + ".count." + node
}

// Report implements [channel.Log]: one message to node carries the counts
// of one of its batches: this node's id on the first line, then a line
// "<proposal id> <count>" per NOTIFY.
func (f *Fleet) Report(node string, counts []channel.Count) {
	b := make([]byte, 0, len(f.node)+1+len(counts)*32)
	b = append(b, f.node...)
	for _, c := range counts {
		b = append(b, '\n')
		b = append(b, c.ID...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(c.N), 10)
	}
	_ = f.nc.Publish(f.countSubject(node), b)
}

// onCount records one node's counts of this node's NOTIFYs.
func (f *Fleet) onCount(m *nats.Msg) {
	lines := bytes.Split(m.Data, []byte{'\n'})
	from := string(lines[0])
	if from == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range lines[1:] {
		id, num, ok := bytes.Cut(l, []byte{' '})
		n, err := strconv.Atoi(string(num))
		if !ok || len(id) == 0 || err != nil || n < 0 {
			continue
		}
		t := f.tallyOf(string(id))
		if !t.from[from] {
			t.from[from] = true
			t.sum += n
		}
		select {
		case t.ready <- struct{}{}:
		default:
		}
	}
}

// tallyOf returns the tally of proposal id, made on first use; f.mu is
// held.
func (f *Fleet) tallyOf(id string) *tally {
	t := f.tallies[id]
	if t == nil {
		t = &tally{from: make(map[string]bool), at: time.Now(), ready: make(chan struct{}, 1)}
		f.tallies[id] = t
	}
	return t
}

// sweepTallies drops the tallies older than tallyAge.
func (f *Fleet) sweepTallies() {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, t := range f.tallies {
		if now.Sub(t.at) > tallyAge {
			delete(f.tallies, k)
		}
	}
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
