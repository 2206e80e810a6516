package latency

import (
	"testing"
	"time"
)

func TestHistBuckets(t *testing.T) {
	for i := 0; i < histBuckets; i++ {
		if got := bucketOf(bucketLow(i)); got != i {
			t.Fatalf("bucketOf(bucketLow(%d) = %d) = %d", i, bucketLow(i), got)
		}
	}
	for _, v := range []int64{0, 1, 127, 128, 129, 255, 256, 1000, 12345, 1 << 20, 1<<30 - 1} {
		i := bucketOf(v)
		lo := bucketLow(i)
		if lo > v || (i+1 < histBuckets && bucketLow(i+1) <= v) {
			t.Errorf("%d in bucket %d [%d, %d)", v, i, lo, bucketLow(i+1))
		}
		if float64(v-lo) > 0.016*float64(v) {
			t.Errorf("%d in bucket from %d: error over 1.6%%", v, lo)
		}
	}
	if bucketOf(-5) != 0 || bucketOf(1<<40) != histBuckets-1 {
		t.Errorf("out of range values: bucketOf(-5) = %d, bucketOf(2^40) = %d", bucketOf(-5), bucketOf(1<<40))
	}
}

func TestHistQuantiles(t *testing.T) {
	var a, b Hist
	for v := 1; v <= 10_000; v++ { // 1..10,000 µs, split over two histograms
		h := &a
		if v%2 == 0 {
			h = &b
		}
		h.Add(time.Duration(v) * time.Microsecond)
	}
	a.Merge(&b)
	if a.Count() != 10_000 || a.Max() != 10_000*time.Microsecond {
		t.Fatalf("n %d max %v, want 10000 and 10ms", a.Count(), a.Max())
	}
	for _, tt := range []struct {
		q    float64
		want int64 // µs
	}{{0.5, 5000}, {0.99, 9900}, {0.001, 10}, {1, 10_000}} {
		got := a.Quantile(tt.q).Microseconds()
		if got > tt.want || float64(tt.want-got) > 0.016*float64(tt.want) {
			t.Errorf("quantile(%v) = %d µs, want %d within 1.6%% below", tt.q, got, tt.want)
		}
	}
	var empty Hist
	if empty.Quantile(0.5) != 0 {
		t.Error("empty histogram: quantile not 0")
	}
}
