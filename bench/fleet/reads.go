package main

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/reso-project/reso/bench/internal/latency"
)

// readResult is what a read load measured.
type readResult struct {
	rate     float64
	p50, p99 time.Duration
	max      time.Duration
}

func (r readResult) String() string {
	return fmt.Sprintf("%.0f GET/s, p50 %v, p99 %v, max %v", r.rate,
		r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.max.Round(10*time.Microsecond))
}

// reads runs conns connections to addr, each sending a GET of one
// resource (written first) and the next once its reply is in, for d; it
// returns successful GETs per second and their latencies. Every GET of a
// fleet node waits for the read barrier (docs/fleet.md §2).
func reads(addr string, conns int, d time.Duration) (readResult, error) {
	id := runID.Add(1)
	path := fmt.Sprintf("/r%d", id)
	w, err := dial(addr)
	if err != nil {
		return readResult{}, err
	}
	defer w.Close()
	put := `{"method":"PUT","resource":"` + path + `","entity":{"v":1},"persistent":true,"msg_id":1}`
	if err := w.WriteMessage(websocket.TextMessage, []byte(put)); err != nil {
		return readResult{}, err
	}
	if _, data, err := w.ReadMessage(); err != nil || !strings.Contains(string(data), `"success"`) {
		return readResult{}, fmt.Errorf("PUT %s: %s %v", path, data, err)
	}
	cs := make([]*websocket.Conn, conns)
	for i := range cs {
		if cs[i], err = dial(addr); err != nil {
			return readResult{}, err
		}
	}
	var ok atomic.Int64
	var firstErr atomic.Value
	var mu sync.Mutex
	var all latency.Hist
	var wg sync.WaitGroup
	get := []byte(`{"method":"GET","resource":"` + path + `","msg_id":1}`)
	start := time.Now()
	deadline := start.Add(d)
	for _, c := range cs {
		wg.Go(func() {
			defer c.Close()
			var h latency.Hist
			defer func() {
				mu.Lock()
				all.Merge(&h)
				mu.Unlock()
			}()
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := c.WriteMessage(websocket.TextMessage, get); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				_, data, err := c.ReadMessage()
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if !strings.Contains(string(data), `"success"`) {
					firstErr.CompareAndSwap(nil, fmt.Errorf("GET %s: %s", path, data))
					return
				}
				h.Add(time.Since(t0))
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return readResult{}, err
	}
	return readResult{
		rate: float64(ok.Load()) / time.Since(start).Seconds(),
		p50:  all.Quantile(0.5), p99: all.Quantile(0.99), max: all.Max(),
	}, nil
}

// appliedPosition reads reso_fleet_applied_position from the metrics of
// the node whose admin listener is admin.
func appliedPosition(admin string) (uint64, error) {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "reso_fleet_applied_position "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return uint64(f), err
		}
	}
	return 0, fmt.Errorf("no reso_fleet_applied_position in the metrics of %s", admin)
}
