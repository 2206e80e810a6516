// Package latency is the latency histogram of reso's load clients
// (bench/channel, bench/callload).
package latency

import (
	"math/bits"
	"time"
)

// Hist is a latency histogram in microseconds: exact below 128 µs, then 64
// buckets per power of two (at most 1.6% error), up to 2^30 µs (18 min;
// larger values land in the last bucket). It is not safe for concurrent
// use: each subscriber keeps its own and they are merged at the end.
type Hist struct {
	counts [histBuckets]uint32
	n      int64
	max    int64 // µs
}

const (
	histExact   = 128
	histSub     = 64
	histMaxBits = 30
	histBuckets = histExact + (histMaxBits-7)*histSub
)

// bucketOf is the bucket index of v µs.
func bucketOf(v int64) int {
	if v < histExact {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - 7 // leaves the top 7 bits: 64..127
	i := histExact + (shift-1)*histSub + int(v>>shift) - histSub
	if i >= histBuckets {
		return histBuckets - 1
	}
	return i
}

// bucketLow is the smallest value of bucket i, in µs.
func bucketLow(i int) int64 {
	if i < histExact {
		return int64(i)
	}
	j := i - histExact
	shift := j/histSub + 1
	return int64(j%histSub+histSub) << shift
}

// Add records one latency.
func (h *Hist) Add(d time.Duration) {
	us := d.Microseconds()
	h.counts[bucketOf(us)]++
	h.n++
	if us > h.max {
		h.max = us
	}
}

// Merge adds o's counts to h.
func (h *Hist) Merge(o *Hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// Quantile is the value at quantile q (0 < q <= 1): the lower bound of the
// bucket holding the ceil(q*n)-th smallest value.
func (h *Hist) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(q*float64(h.n) + 0.999999)
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i, c := range h.counts {
		seen += int64(c)
		if seen >= rank {
			return time.Duration(bucketLow(i)) * time.Microsecond
		}
	}
	return time.Duration(h.max) * time.Microsecond
}

// Count returns how many latencies h holds.
func (h *Hist) Count() int64 { return h.n }

// Max returns the largest latency h holds.
func (h *Hist) Max() time.Duration { return time.Duration(h.max) * time.Microsecond }
