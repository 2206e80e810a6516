package fleet

import (
	"testing"
	"time"
)

// TestSnapshotDue: a snapshot is due once both SnapshotEvery entries and
// SnapshotInterval have passed since the last one.
func TestSnapshotDue(t *testing.T) {
	last := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		pos      uint64
		after    time.Duration
		interval time.Duration
		want     bool
	}{
		{1099, time.Hour, time.Minute, false},        // too few entries
		{1100, time.Hour, time.Minute, true},         // both
		{5000, 59 * time.Second, time.Minute, false}, // too soon
		{5000, time.Minute, time.Minute, true},
		{1100, 0, 0, true}, // no least time
	} {
		f := &Fleet{cfg: Config{SnapshotEvery: 100, SnapshotInterval: c.interval}, snapPos: 1000, snapAt: last}
		if got := f.due(c.pos, last.Add(c.after)); got != c.want {
			t.Errorf("due(%d, +%v) with interval %v = %v, want %v", c.pos, c.after, c.interval, got, c.want)
		}
	}
}
