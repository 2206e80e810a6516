package tests

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/reso-project/reso/internal/poll"
)

// adminRe finds the address of -admin-addr in the server's log.
var adminRe = regexp.MustCompile(`msg="reso admin listening" addr=(\S+)`)

// adminURL returns the base URL of s's admin listener.
func adminURL(t testing.TB, s *server) string {
	t.Helper()
	m := adminRe.FindStringSubmatch(s.Log())
	if m == nil {
		t.Fatalf("no admin listener in the log:\n%s", s.Log())
	}
	return "http://" + m[1]
}

// fetch GETs url and returns the status line and body.
func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return resp.StatusCode, b.String()
}

// scrape reads the metrics of the admin listener with the Prometheus text
// parser.
func scrape(t testing.TB, admin string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("metrics Content-Type %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the metrics do not parse: %v", err)
	}
	return fams
}

// value returns the value of the metric of family name whose labels
// include labels, and whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestHealthAndMetrics checks /healthz and /readyz on both listeners, and
// the metrics text after requests, a login and a channel subscription.
func TestHealthAndMetrics(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		cs := startApp(t, m, "-admin-addr", "127.0.0.1:0")
		s := cs.server
		admin := adminURL(t, s)
		for _, base := range []string{s.URL, admin} {
			if code, body := fetch(t, base+"/healthz"); code != 200 || body != "ok\n" {
				t.Errorf("%s/healthz: %d %q", base, code, body)
			}
			if code, body := fetch(t, base+"/readyz"); code != 200 || body != "ready\n" {
				t.Errorf("%s/readyz: %d %q", base, code, body)
			}
		}
		if code, _ := fetch(t, s.URL+"/metrics"); code != 404 {
			t.Errorf("/metrics on the server's own address: %d", code)
		}
		if code, _ := fetch(t, admin+"/debug/pprof/"); code != 404 {
			t.Errorf("pprof without -pprof: %d", code)
		}
		s.get(t, "/config")
		s.get(t, "/files/a?x=1")
		s.get(t, "/nothing/here")
		s.get(t, "/private/x", "Authorization: Basic dXNlckBleGFtcGxlLm9yZzpleGFtcGxl")
		s.get(t, "/private/x", "Authorization: Basic dXNlckBleGFtcGxlLm9yZzp3cm9uZw==")
		c := clients(t, cs).dial("ops")
		if r := anyEpoch(c.call(`{"method":"SUBSCRIBE","resource":"/ops","msg_id":1}`)); r != `{"msg_id":1,"code":"success","epoch":"E"}` {
			t.Fatalf("SUBSCRIBE: %s", r)
		}
		c.call(`{"method":"NOTIFY","resource":"/ops","msg_id":2,"data":1}`)

		fams := scrape(t, admin)
		for _, want := range []struct {
			name   string
			labels []string
			min    float64
		}{
			{"reso_http_requests_total", []string{"route", `GET,PUT,POST /config(?:$|\?)`, "code", "2xx"}, 1},
			{"reso_http_requests_total", []string{"route", "none", "code", "4xx"}, 1},
			{"reso_http_request_duration_seconds", []string{"route", `GET /files(?:/|$|\?)`}, 1},
			{"reso_http_response_bytes_total", []string{"route", `GET,PUT,POST /config(?:$|\?)`}, 1},
			{"reso_auth_checks_total", []string{"scheme", "basic", "result", "success"}, 1},
			{"reso_auth_checks_total", []string{"scheme", "basic", "result", "failure"}, 1},
			{"reso_channel_connections", nil, 1},
			{"reso_channel_subscriptions", nil, 1},
			{"reso_channel_notifications_delivered_total", nil, 1},
		} {
			if v, ok := value(fams, want.name, want.labels...); !ok || v < want.min {
				t.Errorf("%s%v = %v (found %v), want at least %v", want.name, want.labels, v, ok, want.min)
			}
		}
		for _, name := range []string{"reso_channel_queue_depth", "reso_channel_slow_consumer_disconnects_total", "reso_sqlite_errors_total", "reso_sqlite_busy_total", "reso_http_requests_in_flight", "go_goroutines"} {
			if _, ok := value(fams, name); !ok {
				t.Errorf("no %s", name)
			}
		}
		// Route labels are patterns, never request paths.
		for _, m := range fams["reso_http_requests_total"].Metric {
			for _, l := range m.Label {
				if l.GetName() == "route" && (strings.Contains(l.GetValue(), "/files/a") || strings.Contains(l.GetValue(), "nothing")) {
					t.Errorf("a route label holds a path: %q", l.GetValue())
				}
			}
		}
		if m.name == "isolated" {
			for _, p := range []string{"represent", "config", "files", "users", "private", "channel", "call"} {
				if v, ok := value(fams, "reso_plugin_up", "plugin", p); !ok || v != 1 {
					t.Errorf("reso_plugin_up{plugin=%q} = %v, %v", p, v, ok)
				}
			}
		}
	})
}

// TestReadyDuringPluginRestart checks that /readyz fails while a plugin's
// process is down, saying which, and recovers when it is back: the
// plugin's program is taken away before its process is killed, so that
// its restarts fail until it is put back. The plugin is a third-party one,
// a process in both modes.
func TestReadyDuringPluginRestart(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) { readyDuringPluginRestart(t, m) })
}

func readyDuringPluginRestart(t *testing.T, m mode) {
	hello := filepath.Join(t.TempDir(), "hello")
	copyFile(t, helloPlugin(t), hello)
	s := start(t, m, "-admin-addr", "127.0.0.1:0", "-plugin", "hello="+hello)
	admin := adminURL(t, s)
	pid := 0
	for _, k := range children(t, s.cmd.Process.Pid) {
		if b, err := os.ReadFile("/proc/" + itoa(k) + "/cmdline"); err == nil && strings.HasPrefix(string(b), hello) {
			pid = k
		}
	}
	if pid == 0 {
		t.Fatal("no hello process")
	}
	if err := os.Rename(hello, hello+".away"); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	poll.Until(t, 10*time.Second, "/readyz to answer 503 with the plugin not running", func() bool {
		code, body := fetch(t, s.URL+"/readyz")
		return code == 503 && body == "plugin hello: process not running\n"
	})
	if v, _ := value(scrape(t, admin), "reso_plugin_up", "plugin", "hello"); v != 0 {
		t.Errorf("reso_plugin_up of the plugin down: %v", v)
	}
	if err := os.Rename(hello+".away", hello); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 15*time.Second, "/readyz to answer 200 again", func() bool {
		code, _ := fetch(t, s.URL+"/readyz")
		return code == 200
	})
	if v, _ := value(scrape(t, admin), "reso_plugin_restarts_total", "plugin", "hello"); v < 1 {
		t.Errorf("reso_plugin_restarts_total of hello: %v", v)
	}
}

// TestReadyDuringShutdown checks that readiness fails as soon as shutdown
// begins, while a request still drains.
func TestReadyDuringShutdown(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s := start(t, m, "-admin-addr", "127.0.0.1:0", "-shutdown-timeout", "20s")
		admin := adminURL(t, s)
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A request whose body is still coming keeps the drain going.
		if _, err := c.Write([]byte("PUT /config HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n.")); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 10*time.Second, "a request in flight in the metrics", func() bool {
			v, _ := value(scrape(t, admin), "reso_http_requests_in_flight")
			return v >= 1
		})
		s.cmd.Process.Signal(syscall.SIGTERM)
		poll.Until(t, 10*time.Second, "/readyz to answer 503 shutting down", func() bool {
			code, body := fetch(t, admin+"/readyz")
			return code == 503 && strings.Contains(body, "shutting down\n")
		})
		if code, body := fetch(t, admin+"/healthz"); code != 200 || body != "ok\n" {
			t.Errorf("healthz while draining: %d %q", code, body)
		}
		c.Write([]byte("."))
		br := bufio.NewReader(c)
		if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Errorf("the drained request: %q %v", line, err)
		}
	})
}

// copyFile copies the file src to dst, executable.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
