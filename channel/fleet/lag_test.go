package fleet

import (
	"testing"
	"time"
)

// TestLagClock: the lag is the time since the node first knew of the
// oldest position it has not applied; positions learned within the
// grain extend the newest stamp (counted from its time), a full clock
// extends its newest stamp, and applying forgets what it covers.
func TestLagClock(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type learn struct {
		pos, applied uint64
		at           time.Duration
	}
	cases := []struct {
		name    string
		learns  []learn
		applied uint64
		now     time.Duration
		want    time.Duration
	}{
		{"nothing known", nil, 0, time.Second, 0},
		{"all applied", []learn{{5, 0, 0}}, 5, time.Second, 0},
		{"known unapplied", []learn{{5, 0, 0}}, 3, 3 * time.Second, 3 * time.Second},
		{"already applied when learned", []learn{{5, 5, 0}}, 5, time.Second, 0},
		{"oldest counts", []learn{{5, 0, 0}, {9, 0, time.Second}}, 4, 3 * time.Second, 3 * time.Second},
		{"older stamp applied", []learn{{5, 0, 0}, {9, 0, time.Second}}, 5, 3 * time.Second, 2 * time.Second},
		{"within the grain", []learn{{5, 0, 0}, {9, 0, 50 * time.Millisecond}}, 5, time.Second, time.Second},
		{"a lower position adds nothing", []learn{{9, 0, 0}, {7, 0, time.Second}}, 8, 2 * time.Second, 2 * time.Second},
		{"applied while learning", []learn{{5, 0, 0}, {9, 5, time.Second}}, 5, 2 * time.Second, time.Second},
		{"clock ahead of now", []learn{{5, 0, time.Second}}, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lc := lagClock{grain: 100 * time.Millisecond}
			for _, l := range c.learns {
				lc.learn(l.pos, l.applied, at(l.at))
			}
			if got := lc.lag(c.applied, at(c.now)); got != c.want {
				t.Fatalf("lag %s, want %s (stamps %v)", got, c.want, lc.stamps)
			}
		})
	}
	t.Run("full", func(t *testing.T) {
		lc := lagClock{grain: time.Millisecond}
		for i := range lagStamps + 10 {
			lc.learn(uint64(i+1), 0, at(time.Duration(i)*time.Second))
		}
		if len(lc.stamps) != lagStamps {
			t.Fatalf("%d stamps, want %d", len(lc.stamps), lagStamps)
		}
		// The positions past the full clock count from its newest stamp.
		newest := time.Duration(lagStamps-1) * time.Second
		if got := lc.lag(lagStamps+5, at(newest+time.Second)); got != time.Second {
			t.Fatalf("lag %s, want 1s (stamps %v)", got, lc.stamps)
		}
		if got := lc.lag(lagStamps+10, at(newest)); got != 0 || len(lc.stamps) != 0 {
			t.Fatalf("all applied: lag %s, %d stamps", got, len(lc.stamps))
		}
	})
}
