package tests

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/reso-project/reso/channel/fleet/natstest"
)

// TestFleetLB runs the load balancer configurations of docs/fleet.md
// (§14, "Behind a load balancer"), taken from the page with only the ports
// changed, with the real caddy and nginx binaries in front of a fleet of
// three nodes started as the page says (docFleet), and checks the three
// doors through each: /readyz through the balancer names every node
// (requests spread without stickiness); a WebSocket subscriber and two
// GETs kept open (Server-Sent Events and newline-delimited JSON),
// connected through the balancer, receive every change written through
// the balancer's HTTP door, whose writes the nodes' access logs show
// landing on every node; reconnected clients resume with since and
// Last-Event-ID; a GET kept open ends on its node when its client leaves,
// and the balancer stops while one is connected. A balancer that is not
// installed skips its subtest (fails it under CI=true).
func TestFleetLB(t *testing.T) {
	t.Parallel()
	// The fleet only where a balancer is installed; the subtests skip
	// (or fail under CI=true) with what to install.
	_, noCaddy := lbPath("caddy")
	_, noNginx := lbPath("nginx")
	var f *fleet
	ids := map[string]int{}
	if noCaddy == nil || noNginx == nil {
		f = docFleet(t)
		for i := range f.nodes {
			ids[f.nodeID(i)] = i
		}
	}
	t.Run("caddy", func(t *testing.T) {
		bin := lbTool(t, "caddy", "Caddy (Debian: apt-get install caddy)")
		conf := lbConfig(t, f, "caddyfile", ":8080")
		lb := startLB(t, syscall.SIGTERM, func(port int) (*exec.Cmd, string) {
			dir := t.TempDir()
			file := filepath.Join(dir, "Caddyfile")
			writeFile(t, file, strings.ReplaceAll(conf, ":8080", ":"+strconv.Itoa(port)))
			cmd := command(bin, "run", "--config", file, "--adapter", "caddyfile")
			// Caddy keeps its autosave and data under these; never in the
			// home directory of whoever runs the tests.
			cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_DATA_HOME="+filepath.Join(dir, "data"))
			return cmd, "127.0.0.1:" + strconv.Itoa(port)
		})
		checkLB(t, f, ids, lb)
		checkStop(t, lb)
	})
	t.Run("nginx", func(t *testing.T) {
		bin := lbTool(t, "nginx", "nginx (Debian: apt-get install nginx)")
		conf := lbConfig(t, f, "nginx", "listen 127.0.0.1:8080;")
		// SIGQUIT: nginx's graceful stop, which worker_shutdown_timeout
		// bounds (docs/fleet.md).
		lb := startLB(t, syscall.SIGQUIT, func(port int) (*exec.Cmd, string) {
			dir := t.TempDir()
			file := filepath.Join(dir, "nginx.conf")
			writeFile(t, file, nginxMain(dir, strings.ReplaceAll(conf, "listen 127.0.0.1:8080;", "listen 127.0.0.1:"+strconv.Itoa(port)+";")))
			return command(bin, "-p", dir, "-c", file, "-e", "stderr"), "127.0.0.1:" + strconv.Itoa(port)
		})
		checkLB(t, f, ids, lb)
		checkStop(t, lb)
	})
}

// lbWait bounds what waits for the balancer to pass requests to every
// node: a node that answers /readyz slowly on a loaded machine is left
// out for a while (Caddy's health_timeout, nginx's fail_timeout).
const lbWait = 60 * time.Second

// lbPath finds the program name on PATH or in /usr/sbin, where Debian
// puts nginx and which is not on every user's PATH.
func lbPath(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		if q, err2 := exec.LookPath(filepath.Join("/usr/sbin", name)); err2 == nil {
			return q, nil
		}
	}
	return p, err
}

// lbTool returns the path of the program name, or skips t with what to
// install (fails it under requireTools).
func lbTool(t *testing.T, name, what string) string {
	t.Helper()
	p, err := lbPath(name)
	if err != nil {
		msg := fmt.Sprintf("no %s on PATH or in /usr/sbin: install %s to run the load balancer test of docs/fleet.md", name, what)
		if requireTools() {
			t.Fatal(msg + " (CI=true)")
		}
		t.Skip(msg)
	}
	return p
}

// lbConfig returns the fenced block of language lang of docs/fleet.md's
// section "Behind a load balancer", with the three nodes' addresses of
// the page (127.0.0.1:8001 to 8003) replaced by f's; listen is the
// balancer's own address as the page writes it, which must be there.
func lbConfig(t *testing.T, f *fleet, lang, listen string) string {
	t.Helper()
	conf := lbBlock(t, lang)
	if !strings.Contains(conf, listen) {
		t.Fatalf("the %s configuration of docs/fleet.md does not have %q:\n%s", lang, listen, conf)
	}
	for i := range f.nodes {
		page := fmt.Sprintf("127.0.0.1:%d", 8001+i)
		if !strings.Contains(conf, page) {
			t.Fatalf("the %s configuration of docs/fleet.md does not name node %s:\n%s", lang, page, conf)
		}
		conf = strings.ReplaceAll(conf, page, f.node(i).Addr)
	}
	return conf
}

// lbSection returns the text of docs/fleet.md's section "Behind a load
// balancer".
func lbSection(t *testing.T) string {
	t.Helper()
	page, err := os.ReadFile("../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(page), "\n## 14. Behind a load balancer\n")
	if !ok {
		t.Fatal("docs/fleet.md has no section \"## 14. Behind a load balancer\"")
	}
	return section
}

// lbBlock returns the first fenced block of language lang of
// docs/fleet.md's section "Behind a load balancer", without the
// indentation of a list item.
func lbBlock(t *testing.T, lang string) string {
	t.Helper()
	m := regexp.MustCompile("(?s)\n( {0,3})```" + lang + "\n(.*?)\n {0,3}```\n").FindStringSubmatch(lbSection(t))
	if m == nil {
		t.Fatalf("docs/fleet.md §14 has no ```%s block", lang)
	}
	lines := strings.Split(m[2], "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, m[1])
	}
	return strings.Join(lines, "\n") + "\n"
}

// docFleet starts what docs/fleet.md §14 starts step by step, on free
// loopback ports instead of the page's: three NATS servers from the
// page's n1.conf and the n2.conf and n3.conf it describes (run by the
// nats-server module in this process, each with its store in a temporary
// directory), then three reso nodes with the page's command lines (and,
// for the test, a short -fleet-heartbeat and the access log).
func docFleet(t *testing.T) *fleet {
	t.Helper()
	n1 := lbBlock(t, "nats")
	stores := t.TempDir()
	var client, cluster []int
	var urls []string
	for range fleetNodes {
		client, cluster = append(client, freePort(t)), append(cluster, freePort(t))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", client[len(client)-1]))
	}
	for i := range fleetNodes {
		conf := n1
		// n2.conf and n3.conf: "the same with n2, 4223, 6223 and n3, 4224,
		// 6224 in server_name, listen, store_dir and cluster.listen".
		for _, r := range [][2]string{
			{"server_name: n1\n", fmt.Sprintf("server_name: n%d\n", i+1)},
			{"listen: 127.0.0.1:4222\n", fmt.Sprintf("listen: 127.0.0.1:%d\n", 4222+i)},
			{"store_dir: /var/lib/reso-nats/n1\n", fmt.Sprintf("store_dir: /var/lib/reso-nats/n%d\n", i+1)},
			{"listen: 127.0.0.1:6222\n", fmt.Sprintf("listen: 127.0.0.1:%d\n", 6222+i)},
		} {
			if strings.Count(conf, r[0]) != 1 {
				t.Fatalf("docs/fleet.md's n1.conf does not have %q once:\n%s", r[0], n1)
			}
			conf = strings.Replace(conf, r[0], r[1], 1)
		}
		// The ports and stores of this test.
		for j := range fleetNodes {
			conf = strings.ReplaceAll(conf, fmt.Sprintf("127.0.0.1:%d", 4222+j), fmt.Sprintf("127.0.0.1:%d", client[j]))
			conf = strings.ReplaceAll(conf, fmt.Sprintf("127.0.0.1:%d", 6222+j), fmt.Sprintf("127.0.0.1:%d", cluster[j]))
		}
		conf = strings.ReplaceAll(conf, "/var/lib/reso-nats/", stores+"/")
		file := filepath.Join(stores, fmt.Sprintf("n%d.conf", i+1))
		writeFile(t, file, conf)
		opts, err := natsserver.ProcessConfigFile(file)
		if err != nil {
			t.Fatalf("docs/fleet.md's n%d.conf: %v\n%s", i+1, err, conf)
		}
		opts.NoSigs = true
		ns, err := natstest.StartServer(opts)
		if err != nil {
			t.Fatalf("n%d.conf: %v", i+1, err)
		}
		t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	}

	// Step 4: the command lines differ in their ports only.
	lines := regexp.MustCompile(`(?m)^ *reso -addr 127\.0\.0\.1:800([1-3]) .*$`).FindAllStringSubmatch(lbSection(t), -1)
	if len(lines) != fleetNodes {
		t.Fatalf("docs/fleet.md §14 has %d command lines reso -addr 127.0.0.1:800N, want %d", len(lines), fleetNodes)
	}
	f := &fleet{t: t, name: uniq("lb-"), dir: t.TempDir()}
	for i, l := range lines {
		args := strings.Fields(l[0])[1:]
		for j, a := range args {
			switch {
			case a == "127.0.0.1:800"+l[1] || a == "127.0.0.1:900"+l[1]:
				args[j] = "127.0.0.1:0"
			case j > 0 && args[j-1] == "-fleet":
				args[j] = f.name
			case j > 0 && args[j-1] == "-nats":
				want := "nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224"
				if a != want {
					t.Fatalf("docs/fleet.md §14: -nats %s, want %s", a, want)
				}
				args[j] = strings.Join(urls, ",")
			}
		}
		if i > 0 && strings.Join(args, " ") != strings.Join(f.args[:len(args)], " ") {
			t.Fatalf("docs/fleet.md §14: the command lines of the nodes differ in more than their ports:\n%s", l[0])
		}
		if i == 0 {
			f.args = append(args, "-fleet-heartbeat", fleetHeartbeat, "-access-log")
		}
	}
	writeFixtures(t, f.dir)
	f.nodes = make([]*server, fleetNodes)
	for i := range f.nodes {
		f.launch(i)
	}
	return f
}

// nginxMain wraps the http-level configuration conf of the page in a
// main configuration that runs in the foreground and keeps its pid, logs
// and temporary files under dir.
func nginxMain(dir, conf string) string {
	user := ""
	if os.Geteuid() == 0 {
		// Workers would otherwise run as nobody, who cannot enter dir.
		user = "user root;\n"
	}
	var temps strings.Builder
	for _, k := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&temps, "    %s_temp_path %s;\n", k, filepath.Join(dir, k))
	}
	return fmt.Sprintf(`daemon off;
%sworker_processes 1;
worker_shutdown_timeout 10s;
pid %s;
error_log stderr warn;
events {
    worker_connections 256;
}
http {
    access_log off;
%s
%s}
`, user, filepath.Join(dir, "nginx.pid"), temps.String(), conf)
}

// writeFile writes content to path or fails t.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// balancer is a load balancer process of a test, its address that of
// the fleet's clients.
type balancer struct {
	*server
	stop os.Signal // the signal that stops it gracefully
}

// startLB starts the balancer that command returns for a free loopback
// port (again on another port when that one was taken meanwhile: Caddy and nginx both say "address already in use"), waits
// until /readyz answers 200 through it, and stops it with the signal stop
// when t ends.
func startLB(t *testing.T, stop os.Signal, command func(port int) (*exec.Cmd, string)) *balancer {
	t.Helper()
	for attempt := 1; ; attempt++ {
		cmd, addr := command(freePort(t))
		s := &balancer{server: &server{Addr: addr, URL: "http://" + addr, cmd: cmd, log: &syncBuffer{}, done: make(chan struct{})}, stop: stop}
		cmd.Stdout, cmd.Stderr = s.log, s.log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { cmd.Wait(); close(s.done) }()
		err := waitLB(s)
		if err == nil {
			t.Cleanup(func() {
				stopLB(s)
				if t.Failed() {
					t.Logf("%s log:\n%s", filepath.Base(cmd.Path), s.Log())
				}
			})
			return s
		}
		stopLB(s)
		if attempt < 3 && strings.Contains(strings.ToLower(s.Log()), "address already in use") {
			continue
		}
		t.Fatalf("%s: %v\n%s", filepath.Base(cmd.Path), err, s.Log())
	}
}

// waitLB waits until GET /readyz answers 200 through s, for at most 30 s.
func waitLB(s *balancer) error {
	c := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	last := "no answer"
	for {
		select {
		case <-s.done:
			return fmt.Errorf("exited before it served")
		default:
		}
		if r, err := c.Get(s.URL + "/readyz"); err != nil {
			last = err.Error()
		} else {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return nil
			}
			last = r.Status
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GET /readyz through it did not answer 200 within 30 s (last: %s)", last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopLB stops the balancer and waits, killing it after 30 s.
func stopLB(s *balancer) {
	s.cmd.Process.Signal(s.stop)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.kill()
	}
}

// checkStop stops the balancer while a GET kept open is connected through
// it: the configuration of docs/fleet.md bounds the wait, so the process
// exits and the stream ends (its client then resumes elsewhere).
func checkStop(t *testing.T, lb *balancer) {
	cs := &chanServer{server: lb.server, t: t, m: fleetMode}
	s := cs.openStream("/channel/"+uniq("stop-"), "Accept: text/event-stream")
	if s.Resp.StatusLine != "HTTP/1.1 200 OK" {
		t.Fatalf("GET kept open through the balancer: %s", s.Resp.StatusLine)
	}
	s.event()
	lb.cmd.Process.Signal(lb.stop)
	select {
	case <-lb.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not exit within 60 s of %v while a GET kept open was connected", filepath.Base(lb.cmd.Path), lb.stop)
	}
	s.conn.SetReadDeadline(time.Now().Add(wait))
	if e, err := readEvent(s.body); err == nil {
		t.Fatalf("the GET kept open goes on after the balancer stopped: %s", e)
	}
}

// checkLB checks the three doors of f through the balancer lb; ids maps
// the nodes' ids to their index.
func checkLB(t *testing.T, f *fleet, ids map[string]int, lb *balancer) {
	// Spread: /readyz through the balancer names every node in turn (a
	// node may answer 503 for a moment, "fleet: catching up", on a loaded
	// machine; the balancer then passes that on).
	seen := map[string]bool{}
	deadline := time.Now().Add(lbWait)
	for len(seen) < len(ids) {
		r := lb.get(t, "/readyz")
		if r.StatusLine == "HTTP/1.1 200 OK" {
			id, ok := strings.CutPrefix(r.Body, "ready\nnode ")
			id = strings.TrimSuffix(id, "\n")
			if _, known := ids[id]; !ok || !known {
				t.Fatalf("GET /readyz through the balancer: %q, not one of the nodes %v", r.Body, ids)
			}
			seen[id] = true
		}
		if len(seen) < len(ids) && time.Now().After(deadline) {
			t.Fatalf("GET /readyz through the balancer for %v named only the nodes %v of %v (last: %s %q)", lbWait, seen, ids, r.StatusLine, r.Body)
		}
	}

	cs := &chanServer{server: lb.server, t: t, m: fleetMode}
	room := "/" + uniq("lb-")
	// A browser's handshake: its Origin is the balancer's address, which
	// the node accepts only when the balancer passed Host unchanged.
	w := clients(t, cs).dial("$W", wsOptions{header: http.Header{"Origin": {lb.URL}}})
	r, epoch := withoutEpoch(w.call(`{"method":"SUBSCRIBE","resource":"` + room + `","msg_id":1}`))
	if r != `{"msg_id":1,"code":"success","epoch":"E"}` {
		t.Fatalf("SUBSCRIBE through the balancer: %s", r)
	}
	sse := cs.openStream("/channel"+room, "Accept: text/event-stream")
	nd := cs.openStream("/channel" + room + "?watch=diff")
	for _, s := range []*stream{sse, nd} {
		if s.Resp.StatusLine != "HTTP/1.1 200 OK" {
			t.Fatalf("GET kept open through the balancer: %s", s.Resp.StatusLine)
		}
	}
	first := `{"resource":"` + room + `","type":null,"entity":null}`
	if e := sse.event(); e.Data != first {
		t.Fatalf("SSE through the balancer: first event %s, want data %s", e, first)
	}
	if l := nd.line(); l != first {
		t.Fatalf("watch=diff through the balancer: first line %s, want %s", l, first)
	}

	// Writes through the HTTP door until the nodes' access logs show
	// writes on every node: at least two of them landed on a node other
	// than the subscribers'.
	served := map[int]int{} // node -> writes it served
	var last uint64         // the seq of the last change
	n := 1
	deadline = time.Now().Add(lbWait)
	for ; len(served) < len(ids); n++ {
		if n > 1000 || time.Now().After(deadline) {
			t.Fatalf("%d PUTs through the balancer were served by the nodes %v only", n-1, served)
		}
		child := fmt.Sprintf("x%d", n)
		wantHTTP(t, cs.httpJSON("PUT", "/channel"+room+"/"+child, fmt.Sprintf(`{"n":%d}`, n)), "200 OK", "{}")
		served[whoServed(t, f, "method=PUT path=/channel"+room+"/"+child+" status=200 ")]++

		note := fmt.Sprintf(`{"notify":"UPDATE","resource":%q,"update":%q,"type":"application/json","entity":{"n":%d},"seq":N}`, room, child, n)
		seq := w.expect(note)
		if len(seq) != 1 {
			t.Fatalf("the WebSocket's notification of %s had no seq", child)
		}
		// The same seq and epoch on every door, whichever node each uses.
		if e := sse.event(); e.Data != strings.Replace(note, `"seq":N`, fmt.Sprintf(`"seq":%d`, seq[0]), 1) || e.ID != fmt.Sprintf("%s:%d", epoch, seq[0]) {
			t.Fatalf("SSE through the balancer: %s, want id %s:%d and data %s (seq %d)", e, epoch, seq[0], note, seq[0])
		}
		if got, s := withoutSeq(nd.line()); got != note || s != seq[0] {
			t.Fatalf("watch=diff through the balancer: %s (seq %d), want %s (seq %v)", got, s, note, seq)
		}
		last = seq[0]
	}
	t.Logf("writes served per node: %v", served)

	// A GET kept open whose client goes away ends on its node too: the
	// balancer passes the end on (a node logs a request when it ends).
	sse.conn.Close()
	nd.conn.Close()
	ended := "method=GET path=/channel" + room + " status=200 "
	deadline = time.Now().Add(wait)
	for n := 0; n < 2; {
		n = 0
		for i := range f.nodes {
			n += strings.Count(f.node(i).Log(), ended)
		}
		if n < 2 && time.Now().After(deadline) {
			t.Fatalf("%d of the 2 GETs kept open ended on their nodes %v after their clients closed through the balancer", n, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Reconnects through the balancer, to whichever node it chooses,
	// resume: two changes made while no client is connected come back
	// once, with their seqs, to a SUBSCRIBE with since and epoch and to an
	// EventSource's Last-Event-ID.
	w.closeNormal()
	var missed []string
	for i := range 2 {
		child := fmt.Sprintf("x%d", n+i)
		wantHTTP(t, cs.httpJSON("PUT", "/channel"+room+"/"+child, fmt.Sprintf(`{"n":%d}`, n+i)), "200 OK", "{}")
		missed = append(missed, fmt.Sprintf(`{"notify":"UPDATE","resource":%q,"update":%q,"type":"application/json","entity":{"n":%d},"seq":N}`, room, child, n+i))
	}
	w2 := clients(t, cs).dial("$W2", wsOptions{header: http.Header{"Origin": {lb.URL}}})
	r, _ = withoutEpoch(w2.call(fmt.Sprintf(`{"method":"SUBSCRIBE","resource":%q,"since":%d,"epoch":%q,"msg_id":2}`, room, last, epoch)))
	if r != `{"msg_id":2,"code":"success","recovered":true,"epoch":"E"}` {
		t.Fatalf("SUBSCRIBE with since through the balancer: %s", r)
	}
	seqs := w2.expect(missed...)
	if len(seqs) != 2 || seqs[0] != last+1 {
		t.Fatalf("replayed seqs %v after %d", seqs, last)
	}
	w2.quiet()
	resumed := cs.openStream("/channel"+room, "Accept: text/event-stream", fmt.Sprintf("Last-Event-ID: %s:%d", epoch, last))
	for i, want := range missed {
		if e := resumed.event(); e.Data != strings.Replace(want, `"seq":N`, fmt.Sprintf(`"seq":%d`, seqs[i]), 1) || e.ID != fmt.Sprintf("%s:%d", epoch, seqs[i]) {
			t.Fatalf("SSE resumed with Last-Event-ID through the balancer: %s, want id %s:%d and data %s", e, epoch, seqs[i], want)
		}
	}
}

// whoServed returns the index of the node whose access log has the line
// with part, waiting for it (a node logs a request once it answered).
func whoServed(t *testing.T, f *fleet, part string) int {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		for i := range f.nodes {
			if strings.Contains(f.node(i).Log(), part) {
				return i
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no node logged %q within %v", part, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
