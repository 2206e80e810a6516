package app

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channel/fleet"
	chstore "github.com/reso-project/reso/channel/sqlitestore"
	"github.com/reso-project/reso/middleware"
	"github.com/reso-project/reso/websocket"
)

// metrics are the Prometheus metrics of -admin-addr: the requests (from
// middleware.Metrics, which knows nothing of Prometheus), logins, plugin
// processes, the SQLite store and the channel.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	bytes    *prometheus.CounterVec
	inFlight atomic.Int64 // reso_http_requests_in_flight
	logins   *prometheus.CounterVec

	batchesOnce sync.Once
	batches     *batchMetrics // of a node of a fleet; see fleetObserver

	// routes holds the series of each route that answered, looked up once
	// per route rather than by label values per request; copied on write
	// (the routes are the table's, a few).
	routes   atomic.Pointer[map[string]*routeSeries]
	routesMu sync.Mutex
}

// routeSeries are the request series of one route: its latency and bytes,
// and its count by status class, each created when first used so that
// /metrics shows the series that were used, as WithLabelValues does.
type routeSeries struct {
	latency prometheus.Observer
	bytes   prometheus.Counter
	codes   [len(statusClasses)]atomic.Pointer[prometheus.Counter]
}

// statusClasses are the code labels of statusClass, by code/100 (0 for
// codes out of range).
var statusClasses = [...]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx"}

// newMetrics returns the metrics of o, registered with the Go and process
// collectors.
func newMetrics(o *ops) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reso_http_requests_total",
			Help: "Requests answered, by route pattern and status class.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "reso_http_request_duration_seconds",
			Help:    "Time to answer a request, by route pattern (streams and sessions: their whole life).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"route"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reso_http_response_bytes_total",
			Help: "Body bytes written, by route pattern.",
		}, []string{"route"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "reso_auth_checks_total",
			Help: "Checks of requests with credentials, by scheme (basic, digest, route, cookie, other) and result (success, failure).",
		}, []string{"scheme", "result"}),
	}
	// A gauge read at scrape time: a request adds to an integer, not a
	// float64 gauge's compare-and-swap loop.
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "reso_http_requests_in_flight",
		Help: "Requests being answered now.",
	}, func() float64 { return float64(m.inFlight.Load()) })
	m.reg.MustRegister(m.requests, m.latency, m.bytes, inFlight, m.logins,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		pluginCollector{o})
	return m
}

// Start and Done make metrics a middleware.Recorder.
func (m *metrics) Start() { m.inFlight.Add(1) }

// Done counts one answered request.
func (m *metrics) Done(obs middleware.Observation) {
	m.inFlight.Add(-1)
	route := obs.Route
	if route == "" {
		route = "none"
	}
	rs := m.route(route)
	rs.requests(m, route, statusClassIndex(obs.Status)).Inc()
	rs.latency.Observe(obs.Duration.Seconds())
	rs.bytes.Add(float64(obs.Bytes))
}

// route returns the series of route, made at its first request.
func (m *metrics) route(route string) *routeSeries {
	if p := m.routes.Load(); p != nil {
		if rs, ok := (*p)[route]; ok {
			return rs
		}
	}
	m.routesMu.Lock()
	defer m.routesMu.Unlock()
	old := map[string]*routeSeries{}
	if p := m.routes.Load(); p != nil {
		if rs, ok := (*p)[route]; ok {
			return rs
		}
		old = *p
	}
	rs := &routeSeries{latency: m.latency.WithLabelValues(route), bytes: m.bytes.WithLabelValues(route)}
	next := make(map[string]*routeSeries, len(old)+1)
	maps.Copy(next, old)
	next[route] = rs
	m.routes.Store(&next)
	return rs
}

// requests returns the request counter of the route rs is for and the
// status class i (an index of statusClasses), made at its first use.
func (rs *routeSeries) requests(m *metrics, route string, i int) prometheus.Counter {
	if c := rs.codes[i].Load(); c != nil {
		return *c
	}
	// Racing first uses get the same series from the vector.
	c := m.requests.WithLabelValues(route, statusClasses[i])
	rs.codes[i].Store(&c)
	return c
}

// statusClassIndex is the index in statusClasses of code's class: 2
// ("2xx") for 200 and so on, 0 ("other") out of 100 to 599.
func statusClassIndex(code int) int {
	if code < 100 || code > 599 {
		return 0
	}
	return code / 100
}

// loginChecked counts the outcome of a check with credentials.
func (m *metrics) loginChecked(scheme string, ok bool) {
	result := "failure"
	if ok {
		result = "success"
	}
	m.logins.WithLabelValues(scheme, result).Inc()
}

// channel registers the metrics of the channel: its tree, the store and
// the WebSocket door.
func (m *metrics) channel(tree interface{ Stats() channel.Stats }, st *chstore.Store, ws *websocket.Transport) {
	gauge := func(name, help string, f func() float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	counter := func(name, help string, f func() float64) {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f))
	}
	gauge("reso_channel_connections", "Open WebSocket connections of the channel.", func() float64 { return float64(ws.Open()) })
	gauge("reso_channel_clients", "Clients of the tree: WebSocket sessions and GETs kept open.", func() float64 { return float64(tree.Stats().Clients) })
	gauge("reso_channel_subscriptions", "Subscriptions of all clients.", func() float64 { return float64(tree.Stats().Subscriptions) })
	gauge("reso_channel_queue_depth", "Messages queued for all clients and not yet written.", func() float64 { return float64(tree.Stats().Queued) })
	counter("reso_channel_notifications_delivered_total", "Notifications queued to a subscriber.", func() float64 { return float64(tree.Stats().Delivered) })
	counter("reso_channel_slow_consumer_disconnects_total", "Clients disconnected because their queue was full (1008 slow consumer).", func() float64 { return float64(tree.Stats().SlowConsumers) })
	if st == nil {
		return // a node of a fleet: no SQLite store
	}
	counter("reso_sqlite_errors_total", "Failed operations of the channel's SQLite store.", func() float64 { n, _ := st.Errors(); return float64(n) })
	counter("reso_sqlite_busy_total", "Failed operations of the channel's SQLite store that found the database busy past its busy timeout.", func() float64 { _, n := st.Errors(); return float64(n) })
}

// fleetView is what the metrics read of a node of a fleet.
type fleetView interface {
	Node() string
	Name() string
	Position() (applied, last uint64)
	Lag() time.Duration
	Live() []string
	Divergent() bool
}

// fleetInfoDesc describes reso_fleet_info.
var fleetInfoDesc = prometheus.NewDesc("reso_fleet_info", "1, with this node's id and its fleet's name as labels.", []string{"node", "fleet"}, nil)

// fleetInfo reports reso_fleet_info with the node's current id (a node
// that rejoins the fleet takes a new one).
type fleetInfo struct{ fl fleetView }

// Describe sends the description of reso_fleet_info.
func (c fleetInfo) Describe(ch chan<- *prometheus.Desc) { ch <- fleetInfoDesc }

// Collect sends reso_fleet_info now.
func (c fleetInfo) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(fleetInfoDesc, prometheus.GaugeValue, 1, c.fl.Node(), c.fl.Name())
}

// fleet registers the metrics of a node of a fleet: its id and fleet as
// labels of reso_fleet_info, its place in the log, the live nodes and
// whether its tree diverged (docs/fleet.md#what-to-watch).
func (m *metrics) fleet(fl fleetView) {
	m.reg.MustRegister(fleetInfo{fl})
	gauge := func(name, help string, f func() float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
	}
	gauge("reso_fleet_applied_position", "Position in the fleet's log (stream sequence) of the last message this node applied.", func() float64 {
		applied, _ := fl.Position()
		return float64(applied)
	})
	gauge("reso_fleet_log_last_position", "Last position of the fleet's log (stream sequence) as this node last knew it (at most 2 s old while NATS answers).", func() float64 {
		_, last := fl.Position()
		return float64(last)
	})
	gauge("reso_fleet_lag_messages", "Messages of the fleet's log this node has not applied yet: reso_fleet_log_last_position minus reso_fleet_applied_position.", func() float64 {
		applied, last := fl.Position()
		return float64(last - applied)
	})
	gauge("reso_fleet_lag_seconds", "How long this node has known of the oldest entry of the fleet's log it has not applied; past -fleet-max-lag it is behind the log: not ready, and it refuses new WebSockets and GETs kept open.", func() float64 {
		return fl.Lag().Seconds()
	})
	gauge("reso_fleet_live_nodes", "Members of the fleet not taken for dead, less those this node watches and finds silent.", func() float64 { return float64(len(fl.Live())) })
	gauge("reso_fleet_divergent", "1 once this node found its tree differs from the other nodes' at the same position of the log (it reports not ready), else 0.", func() float64 {
		if fl.Divergent() {
			return 1
		}
		return 0
	})
}

// fleetObserver returns the histograms of the batches of the log a node
// applies and stores, registered at the first call: a node that joins
// its fleet again (with a new fleet.Fleet) goes on with the same ones.
func (m *metrics) fleetObserver() fleet.Observer {
	m.batchesOnce.Do(func() { m.batches = m.newBatchMetrics() })
	return m.batches
}

// newBatchMetrics registers the histograms of fleetObserver.
func (m *metrics) newBatchMetrics() *batchMetrics {
	entries := prometheus.ExponentialBuckets(1, 2, 12) // 1 to 2048
	o := &batchMetrics{
		applied: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "reso_fleet_applied_batch_entries",
			Help:    "Entries per message of the fleet's log this node applied (a message is one node's batch).",
			Buckets: entries,
		}),
		proposed: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "reso_fleet_proposed_batch_entries",
			Help:    "Entries per batch of this node stored in the fleet's log.",
			Buckets: entries,
		}),
		took: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "reso_fleet_apply_duration_seconds",
			Help:    "Time to apply one message of the fleet's log to this node's tree.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
	}
	m.reg.MustRegister(o.applied, o.proposed, o.took)
	return o
}

// batchMetrics is the fleet.Observer of the metrics.
type batchMetrics struct {
	applied, proposed, took prometheus.Histogram
}

// Applied observes one message of the log applied.
func (b *batchMetrics) Applied(entries int, took time.Duration) {
	b.applied.Observe(float64(entries))
	b.took.Observe(took.Seconds())
}

// Proposed observes one batch of this node stored in the log.
func (b *batchMetrics) Proposed(entries int) { b.proposed.Observe(float64(entries)) }

// pluginCollector reports the isolated plugins' processes: up or not, and
// their restarts.
type pluginCollector struct{ o *ops }

var (
	pluginUpDesc       = prometheus.NewDesc("reso_plugin_up", "1 while the plugin's process runs, 0 while it is restarted.", []string{"plugin"}, nil)
	pluginRestartsDesc = prometheus.NewDesc("reso_plugin_restarts_total", "Times the plugin's process was started again after it exited.", []string{"plugin"}, nil)
)

// Describe sends the descriptions of the plugin metrics.
func (c pluginCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pluginUpDesc
	ch <- pluginRestartsDesc
}

// Collect sends the plugin metrics now.
func (c pluginCollector) Collect(ch chan<- prometheus.Metric) {
	c.o.mu.Lock()
	clients := slices.Clone(c.o.plugins)
	c.o.mu.Unlock()
	for _, p := range clients {
		up := 0.0
		if p.Running() {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(pluginUpDesc, prometheus.GaugeValue, up, p.Name())
		ch <- prometheus.MustNewConstMetric(pluginRestartsDesc, prometheus.CounterValue, float64(p.Restarts()), p.Name())
	}
}

var _ fleet.Observer = (*batchMetrics)(nil)
