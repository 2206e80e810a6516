package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/middleware"
)

// recorder keeps what Metrics reports.
type recorder struct {
	mu       sync.Mutex
	inFlight int
	peak     int
	done     []middleware.Observation
}

func (r *recorder) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight++
	r.peak = max(r.peak, r.inFlight)
}

func (r *recorder) Done(o middleware.Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight--
	r.done = append(r.done, o)
}

// TestMetrics checks the route pattern, status and bytes Metrics reports,
// alone and under Log, which shares its route recorder.
func TestMetrics(t *testing.T) {
	router, err := core.NewRouter([]core.Route{{Match: "GET /a(?:/|$)", Handler: core.HTTP(core.HandlerFunc(func(_ context.Context, req *core.Request) (*core.Response, error) {
		return &core.Response{Body: []byte("hello")}, nil
	}))}})
	if err != nil {
		t.Fatal(err)
	}
	for _, withLog := range []bool{false, true} {
		rec := &recorder{}
		var h http.Handler = middleware.Metrics(rec)(router)
		if withLog {
			h = middleware.Log(nil)(h)
		}
		for _, target := range []string{"/a/x?q=1", "/b"} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		}
		want := []middleware.Observation{
			{Method: "GET", Route: "GET /a(?:/|$)", Status: 200, Bytes: 5},
			{Method: "GET", Route: "", Status: 404},
		}
		if len(rec.done) != 2 || rec.inFlight != 0 || rec.peak != 1 {
			t.Fatalf("log %v: %+v in flight %d", withLog, rec.done, rec.inFlight)
		}
		for i, o := range rec.done {
			o.Duration = 0
			if i == 1 {
				o.Bytes = 0 // the 404 body is the router's
			}
			if o != want[i] {
				t.Errorf("log %v: observation %d = %+v, want %+v", withLog, i, o, want[i])
			}
		}
	}
}
