package app

import (
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/reso-project/reso/middleware"
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

// TestRequestSeries: the request metrics count by route and status class
// from series looked up once per route, and /metrics shows only the series
// that were used, as with WithLabelValues per request.
func TestRequestSeries(t *testing.T) {
	m := newMetrics(&ops{})
	const files = `GET /files(?:/|$|\?)`
	for _, obs := range []middleware.Observation{
		{Route: files, Status: 200, Bytes: 5, Duration: time.Millisecond},
		{Route: files, Status: 204, Bytes: 0, Duration: time.Millisecond},
		{Route: files, Status: 700, Bytes: 1, Duration: time.Millisecond},
		{Route: "", Status: 404, Bytes: 3, Duration: time.Millisecond},
		{Route: files, Status: 499, Bytes: 0, Duration: time.Millisecond},
	} {
		m.Start()
		m.Done(obs)
	}
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, mt := range f.Metric {
			key := f.GetName()
			for _, l := range mt.Label {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case mt.Counter != nil:
				got[key] = mt.Counter.GetValue()
			case mt.Histogram != nil:
				got[key] = float64(mt.Histogram.GetSampleCount())
			case mt.Gauge != nil && f.GetName() == "reso_http_requests_in_flight":
				got[key] = mt.Gauge.GetValue()
			}
		}
	}
	want := map[string]float64{
		"reso_http_requests_total code=2xx route=" + files:   2,
		"reso_http_requests_total code=other route=" + files: 1,
		"reso_http_requests_total code=4xx route=" + files:   1,
		"reso_http_requests_total code=4xx route=none":       1,
		"reso_http_request_duration_seconds route=" + files:  4,
		"reso_http_request_duration_seconds route=none":      1,
		"reso_http_response_bytes_total route=" + files:      6,
		"reso_http_response_bytes_total route=none":          3,
		"reso_http_requests_in_flight":                       0,
	}
	for k, v := range got {
		if strings.HasPrefix(k, "reso_http_") && want[k] != v {
			t.Errorf("%s = %v, want %v", k, v, want[k])
		}
	}
	for k, v := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("%s missing, want %v", k, v)
		}
	}
}
