package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSoakBack(t *testing.T) {
	start := soakSample{nodes: []nodeSample{{gor: 30, fds: 12}, {gor: 31, fds: 13}}}
	for _, tc := range []struct {
		name  string
		after []nodeSample
		want  bool
	}{
		{"same", []nodeSample{{gor: 30, fds: 12}, {gor: 31, fds: 13}}, true},
		{"within the margin", []nodeSample{{gor: 40, fds: 22}, {gor: 41, fds: 23}}, true},
		{"below the start", []nodeSample{{gor: 25, fds: 10}, {gor: 31, fds: 13}}, true},
		{"goroutines of the second node above", []nodeSample{{gor: 30, fds: 12}, {gor: 42, fds: 13}}, false},
		{"descriptors of the first node above", []nodeSample{{gor: 30, fds: 23}, {gor: 31, fds: 13}}, false},
		{"not read", []nodeSample{{gor: -1, fds: 12}, {gor: 31, fds: 13}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := soakResult{slack: 10}
			if got := r.back(start, soakSample{nodes: tc.after}); got != tc.want {
				t.Errorf("back = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSoakSummaryPerNode checks that a soak over several servers prints
// each one's figures, and says which did not come back.
func TestSoakSummaryPerNode(t *testing.T) {
	node := func(rss, gor, fds int64) nodeSample { return nodeSample{rss: rss, heap: 1024, gor: gor, fds: fds} }
	r := soakResult{slack: 10, loops: 100, measured: 10e9, samples: []soakSample{
		{start: true, nodes: []nodeSample{node(20480, 30, 12), node(20480, 30, 12)}},
		{measured: true, at: 5e9, nodes: []nodeSample{node(40960, 40, 17), node(40960, 40, 17)}},
		{measured: true, at: 10e9, nodes: []nodeSample{node(40960, 40, 17), node(40960, 40, 17)}},
		{afterChurn: true, nodes: []nodeSample{node(40960, 31, 12), node(40960, 90, 12)}},
	}}
	var b bytes.Buffer
	r.print(&b)
	out := b.String()
	for _, want := range []string{
		"measured: 100 loops in 10s = 10 loops/s; 0 errors\n",
		"n0 RSS (host + plugin processes): 20.0 MiB start, 40.0 MiB first measured, 40.0 MiB mid (10s), 40.0 MiB end, 40.0 MiB peak; mid to end +0.0 MiB\n",
		"n0 goroutines 30 before the churn, 31 after it; descriptors 12 before, 12 after: back (margin 10)\n",
		"n1 goroutines 30 before the churn, 90 after it; descriptors 12 before, 12 after: NOT back (margin 10)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}
