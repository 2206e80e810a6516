package app

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestFleetObserverOnce: a node that joins its fleet again asks for the
// batch histograms again and goes on with the same ones (registering
// them twice panicked).
func TestFleetObserverOnce(t *testing.T) {
	m := newMetrics(&ops{})
	a := m.fleetObserver()
	a.Applied(3, time.Millisecond)
	b := m.fleetObserver()
	b.Applied(5, time.Millisecond)
	b.Proposed(2)
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*dto.Histogram{}
	for _, f := range fams {
		if len(f.Metric) == 1 && f.Metric[0].Histogram != nil {
			got[f.GetName()] = f.Metric[0].Histogram
		}
	}
	for name, want := range map[string][2]float64{
		"reso_fleet_applied_batch_entries":  {2, 8},
		"reso_fleet_apply_duration_seconds": {2, 0.002},
		"reso_fleet_proposed_batch_entries": {1, 2},
	} {
		h := got[name]
		if h == nil || float64(h.GetSampleCount()) != want[0] || h.GetSampleSum() != want[1] {
			t.Errorf("%s: %v, want count %v and sum %v", name, h, want[0], want[1])
		}
	}
}
