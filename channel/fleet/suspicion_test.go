package fleet

import (
	"math"
	"testing"
	"time"
)

// TestSuspicion feeds synthetic arrival times (no sleeping) and checks
// when a silence becomes a death.
func TestSuspicion(t *testing.T) {
	const floor = 10 * time.Second
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	// beats returns a suspicion that heard heartbeats at the given
	// offsets from t0.
	beats := func(offsets ...time.Duration) *suspicion {
		s := newSuspicion(floor, ceilingOf(floor), t0)
		for _, o := range offsets {
			s.heard(at(o))
		}
		return s
	}
	regular := func(every time.Duration, n int) []time.Duration {
		var os []time.Duration
		for i := 1; i <= n; i++ {
			os = append(os, time.Duration(i)*every)
		}
		return os
	}
	const third = floor / 3
	tests := []struct {
		name  string
		s     *suspicion
		after time.Duration // silence since the last heartbeat
		dead  bool
	}{
		{"never heard, within the timeout", beats(), floor, false},
		{"never heard, past the timeout", beats(), floor + time.Millisecond, true},
		{"regular, three missed", beats(regular(third, 20)...), floor - time.Millisecond, false},
		{"regular, past the timeout", beats(regular(third, 20)...), floor + time.Millisecond, true},
		// Starved: heartbeats come in late bursts (8 s, then two at once);
		// the threshold grows, bounded by the ceiling.
		{"irregular, past the timeout", beats(8*time.Second, 8100*time.Millisecond, 16*time.Second, 16100*time.Millisecond,
			24*time.Second, 24100*time.Millisecond), floor + 2*time.Second, false},
		{"irregular, past the ceiling", beats(8*time.Second, 8100*time.Millisecond, 16*time.Second, 16100*time.Millisecond,
			24*time.Second, 24100*time.Millisecond), ceilingOf(floor) + time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.s.last.Add(tt.after)
			if got := tt.s.dead(now); got != tt.dead {
				t.Fatalf("dead after %v of silence: %v, want %v (threshold %v, phi %.2f)", tt.after, got, tt.dead, tt.s.threshold(), tt.s.phi(now))
			}
		})
	}
}

// TestSuspicionPhi: phi grows with the silence, and reaches phiDead at
// the threshold the detector computes when that lies between the floor
// and the ceiling.
func TestSuspicionPhi(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := newSuspicion(time.Second, time.Minute, t0)
	// Intervals of 1 s and 3 s alternately: mean 2 s, deviation 1 s.
	at := t0
	for i := range 10 {
		at = at.Add(time.Second + time.Duration(i%2)*2*time.Second)
		s.heard(at)
	}
	prev := -1.0
	for d := time.Second; d <= 12*time.Second; d += time.Second {
		p := s.phi(at.Add(d))
		if p <= prev && !math.IsInf(p, 1) {
			t.Fatalf("phi at %v: %.3f, not above %.3f", d, p, prev)
		}
		prev = p
	}
	th := s.threshold()
	if want := 2*time.Second + time.Duration(zDead*float64(time.Second)); th < want-time.Millisecond || th > want+time.Millisecond {
		t.Fatalf("threshold %v, want %v", th, want)
	}
	if p := s.phi(at.Add(th)); math.Abs(p-phiDead) > 0.05 {
		t.Fatalf("phi at the threshold: %.3f, want %v", p, float64(phiDead))
	}
}

// TestSuspicionResume: a silence is timed from when the watcher could
// hear again, and the blind time is no interval.
func TestSuspicionResume(t *testing.T) {
	const floor = 2 * time.Second
	t0 := time.Unix(1000, 0)
	s := newSuspicion(floor, ceilingOf(floor), t0)
	s.heard(t0.Add(time.Second))
	s.resume(t0.Add(time.Minute)) // NATS back after a minute
	if s.dead(t0.Add(time.Minute + floor)) {
		t.Fatal("dead within the timeout of the watcher's return")
	}
	if !s.dead(t0.Add(time.Minute + floor + time.Millisecond)) {
		t.Fatal("not dead past the timeout of the watcher's return")
	}
	if len(s.window) != 1 {
		t.Fatalf("intervals %v, want only the one heard", s.window)
	}
	s.resume(t0) // earlier than the last heartbeat: nothing changes
	if !s.last.Equal(t0.Add(time.Minute)) {
		t.Fatalf("last %v moved back", s.last)
	}
}

// TestCeilingOf: half the timeout more, at most ceilingMost.
func TestCeilingOf(t *testing.T) {
	for _, c := range []struct{ timeout, want time.Duration }{
		{2 * time.Second, 3 * time.Second},
		{10 * time.Second, 13 * time.Second},
		{time.Minute, time.Minute + ceilingMost},
	} {
		if got := ceilingOf(c.timeout); got != c.want {
			t.Errorf("ceilingOf(%v) = %v, want %v", c.timeout, got, c.want)
		}
	}
}

// TestStarved: a watcher whose own heartbeat or own tick is late accuses
// nobody.
func TestStarved(t *testing.T) {
	const every, tick = 3 * time.Second, time.Second
	now := time.Unix(1000, 0)
	tests := []struct {
		name      string
		own, prev time.Duration // how long ago its own heartbeat came, its previous tick
		starved   bool
	}{
		{"on time", every, tick, false},
		{"first tick", every, -1, false},
		{"own heartbeat missed twice", 2*every + time.Millisecond, tick, true},
		{"tick late", every, 2*tick + time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prev time.Time
			if tt.prev >= 0 {
				prev = now.Add(-tt.prev)
			}
			got, why := starved(now, now.Add(-tt.own), prev, every, tick)
			if got != tt.starved || got == (why == "") {
				t.Fatalf("starved %v (%q), want %v", got, why, tt.starved)
			}
		})
	}
}
