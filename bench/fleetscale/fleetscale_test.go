package main

import (
	"testing"
	"time"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		nodes, per, conns, perProc, procs int
	}{
		{nodes: 6, per: 16_667, perProc: 18_000, procs: 6},
		{nodes: 7, per: 14_286, perProc: 18_000, procs: 6},
		{nodes: 1, per: 19_000, perProc: 18_000, procs: 2},
		{nodes: 3, per: 1000, perProc: 18_000, procs: 1},
		{nodes: 4, per: 10_000, perProc: 100, procs: 417},
	} {
		var targets []target
		for i := range tc.nodes {
			targets = append(targets, target{Addr: string(rune('a' + i)), N: tc.per})
		}
		shares := split(targets, tc.perProc)
		if len(shares) != tc.procs {
			t.Errorf("%d nodes of %d, %d per process: %d processes, want %d", tc.nodes, tc.per, tc.perProc, len(shares), tc.procs)
		}
		perNode := map[string]int{}
		for _, s := range shares {
			n := 0
			for _, x := range s {
				n += x.N
				perNode[x.Addr] += x.N
			}
			if n > tc.perProc {
				t.Errorf("%d nodes of %d: a process of %d connections, above %d", tc.nodes, tc.per, n, tc.perProc)
			}
		}
		for _, tg := range targets {
			if perNode[tg.Addr] != tc.per {
				t.Errorf("%d nodes of %d: node %s got %d connections", tc.nodes, tc.per, tg.Addr, perNode[tg.Addr])
			}
		}
	}
}

func TestStartAt(t *testing.T) {
	c := &loadClient{cfg: clientConfig{Rate: 1000, Ramp: 10}}
	// The ramp takes 10 s for (100+1000)/2*10 = 5,500 connections, then
	// 1,000 a second.
	var prev time.Duration
	for i := 0; i < 20_000; i += 7 {
		at := c.startAt(i)
		if at < prev {
			t.Fatalf("connection %d starts at %v, before connection %d's %v", i, at, i-7, prev)
		}
		prev = at
	}
	for _, tc := range []struct {
		i    int
		want time.Duration
	}{
		{0, 0},
		{5500, 10 * time.Second},
		{15_500, 20 * time.Second},
	} {
		if got := c.startAt(tc.i); got < tc.want-time.Millisecond || got > tc.want+time.Millisecond {
			t.Errorf("connection %d starts at %v, want %v", tc.i, got, tc.want)
		}
	}
}

func TestQuantile(t *testing.T) {
	var ds []time.Duration
	for i := 20; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 10 * time.Millisecond}, {0.99, 20 * time.Millisecond}, {1, 20 * time.Millisecond}} {
		if got := quantile(ds, tc.q); got != tc.want {
			t.Errorf("quantile %v: %v, want %v", tc.q, got, tc.want)
		}
	}
}
