package tests

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The flags of cmd/reso that the channel tests use, in one place.
const (
	// flagChannelOrigin allows cross-origin WebSocket handshakes from the
	// hosts it names (a comma-separated list of host patterns).
	flagChannelOrigin = "-channel-origin"
)

// Limits of the channel with the default flags (docs/channel.md#limits-and-faults).
const (
	// chanReadLimit is the largest message a client may send.
	chanReadLimit = 64 << 10
	// closeGoingAway, closePolicy and closeTooBig are the WebSocket close
	// codes of a shutdown, a slow consumer and an oversized message.
	closeGoingAway = 1001
	closePolicy    = 1008
	closeTooBig    = 1009
)

// wait is how long a test waits for something the server should do at
// once: a hang guard, never a timing assertion.
const wait = 15 * time.Second

// chanServer is a reso started for a channel test, with what it takes to
// start it again on the same database.
type chanServer struct {
	*server
	t    *testing.T
	m    mode
	args []string // the flags after the mode's, -db included
	DB   string   // the -db file
	// fleet is the fleet behind server in fleetMode (server is then its
	// round-robin proxy); nil otherwise.
	fleet *fleet
	// shared says that other tests use the server too (sharedChannel).
	shared bool
}

// startChannel starts reso in mode m with a fresh -db file in its own
// temporary directory and the given flags, in a directory holding the
// standard fixtures (the directory /file/ serves), and stops it when t
// ends. In the isolated mode, the plugins of channelIsolated run in child
// processes.
func startChannel(t *testing.T, m mode, args ...string) *chanServer {
	t.Helper()
	return startApp(t, m.isolating(channelIsolated), args...)
}

// startApp is startChannel with every bundled plugin isolated in the
// isolated mode: for a test of the whole example application.
func startApp(t *testing.T, m mode, args ...string) *chanServer {
	t.Helper()
	if m.name == fleetMode.name {
		f := startFleet(t, fleetNodes, args...)
		return &chanServer{server: f.front(), t: t, m: m, args: args, fleet: f}
	}
	db := filepath.Join(t.TempDir(), "reso.db")
	cs := &chanServer{t: t, m: m, args: append([]string{"-db", db}, args...), DB: db}
	cs.launch()
	return cs
}

// channelIsolated are the plugins that the channel's suites (and call
// control's, the console's, the sessions') run in child processes in the
// isolated mode: those they reach, the channel's door, call control, the
// console and the private resource their sessions log in with. The
// others (configuration, files, users, representations, www) stay
// compiled in there; their own suites run them isolated. A race-built
// plugin process costs about 0.3 CPU-seconds to start and stop: these
// suites' isolated runs took 354 CPU-seconds with -isolate all (eight
// plugin processes a server), 275 with these four.
const channelIsolated = "channel,call,console,private"

// launch starts the server in its directory with its flags.
func (cs *chanServer) launch() {
	cs.t.Helper()
	dir := ""
	if cs.server != nil {
		dir = cs.server.Dir
	} else {
		dir = cs.t.TempDir()
		writeFixtures(cs.t, dir)
	}
	s, err := startIn(cs.t, dir, cs.m, cs.args...)
	if err != nil {
		cs.t.Fatal(err)
	}
	cs.server = s
	cs.t.Cleanup(func() {
		s.stop()
		if cs.t.Failed() {
			cs.t.Logf("server log (%s):\n%s", s.Addr, s.log.String())
		}
	})
}

// restart stops the server with SIGTERM, checks that it exited 0, and
// starts it again with the same flags, directory and database (on a new
// port: Addr and URL change).
func (cs *chanServer) restart() {
	cs.t.Helper()
	if cs.shared {
		cs.t.Fatal("a shared server is not restarted: start one of the test's own (startChannel)")
	}
	if f := cs.fleet; f != nil {
		// Every node, one after the other: the fleet keeps the state.
		for i := range f.nodes {
			s := f.node(i)
			s.stop()
			if code := s.cmd.ProcessState.ExitCode(); code != 0 {
				cs.t.Fatalf("node %d: exit status %d before the restart:\n%s", i, code, s.Log())
			}
			f.launch(i)
		}
		return
	}
	cs.server.stop()
	if code := cs.server.cmd.ProcessState.ExitCode(); code != 0 {
		cs.t.Fatalf("exit status %d before the restart:\n%s", code, cs.server.Log())
	}
	cs.launch()
}

// processes returns the reso processes behind cs: one, or the nodes of
// its fleet.
func (cs *chanServer) processes() []*server {
	if f := cs.fleet; f != nil {
		var ss []*server
		for i := range f.nodes {
			ss = append(ss, f.node(i))
		}
		return ss
	}
	return []*server{cs.server}
}

// uniq returns a path segment no other test uses, so that tests on one
// server never see each other's resources.
func uniq(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// seqRe finds the seq of a notification: always its last field.
var seqRe = regexp.MustCompile(`,"seq":([0-9]+)\}$`)

// withoutSeq returns a notification with its seq replaced by N, and the
// seq (0 and the frame unchanged when it has none).
func withoutSeq(frame string) (string, uint64) {
	m := seqRe.FindStringSubmatchIndex(frame)
	if m == nil {
		return frame, 0
	}
	n, _ := strconv.ParseUint(frame[m[2]:m[3]], 10, 64)
	return frame[:m[0]] + `,"seq":N}`, n
}

// epochRe finds the epoch of a SUBSCRIBE reply: always its last field,
// 1 to 32 characters from [0-9a-z] (docs/channel.md#replay-after-a-reconnect).
var epochRe = regexp.MustCompile(`,"epoch":"([0-9a-z]{1,32})"\}$`)

// withoutEpoch returns a SUBSCRIBE reply with its epoch replaced by E,
// and the epoch ("" and the frame unchanged when it has none): the epoch
// is drawn for each server's state directory.
func withoutEpoch(frame string) (string, string) {
	m := epochRe.FindStringSubmatchIndex(frame)
	if m == nil {
		return frame, ""
	}
	return frame[:m[0]] + `,"epoch":"E"}`, frame[m[2]:m[3]]
}

// anyEpoch returns frame with the epoch of a SUBSCRIBE reply replaced by
// E (see withoutEpoch).
func anyEpoch(frame string) string {
	f, _ := withoutEpoch(frame)
	return f
}

// eventIDRe is the id of an event of a GET kept open: "<epoch>:<seq>".
var eventIDRe = regexp.MustCompile(`^[0-9a-z]{1,32}:([0-9]+)$`)

// eventIDSeq returns the seq of an event id "<epoch>:<seq>", 0 when the
// id has another form.
func eventIDSeq(id string) uint64 {
	m := eventIDRe.FindStringSubmatch(id)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	return n
}

// increasing fails t unless every seq is greater than the one before it
// (and none is 0).
func increasing(t testing.TB, seqs []uint64) {
	t.Helper()
	for i, s := range seqs {
		if s == 0 || i > 0 && s <= seqs[i-1] {
			t.Errorf("seqs %v are not increasing", seqs)
			return
		}
	}
}

// jsonString returns s as a JSON string, with & < > as they are (the
// server writes them so; encoding/json would escape them for HTML).
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// field returns the raw JSON value of a top-level field of a JSON object
// ("" when absent or not an object).
func field(frame, name string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(frame), &m) != nil {
		return ""
	}
	return string(m[name])
}

// writePage writes a file into the directory the server serves under
// /file/ and returns its URL path.
func (cs *chanServer) writePage(name, content string) string {
	cs.t.Helper()
	if err := os.WriteFile(filepath.Join(cs.Dir, name), []byte(content), 0o644); err != nil {
		cs.t.Fatal(err)
	}
	return "/file/" + name
}

// httpJSON sends method target with a JSON body (none when body is "")
// over a raw connection, so the exact status line can be checked.
func (cs *chanServer) httpJSON(method, target, body string, headers ...string) response {
	cs.t.Helper()
	if body != "" {
		headers = append(headers, "Content-Type: application/json")
	}
	return cs.do(cs.t, method, target, body, headers...)
}

// wantHTTP checks the status line and, unless body is "-", the exact body.
func wantHTTP(t testing.TB, r response, status, body string) {
	t.Helper()
	if r.StatusLine != "HTTP/1.1 "+status {
		t.Errorf("status %q, want %q (body %q)", r.StatusLine, "HTTP/1.1 "+status, r.Body)
	}
	if body != "-" && r.Body != body {
		t.Errorf("body %q, want %q", r.Body, body)
	}
}

// describe shortens a frame for an error message.
func describe(frame string) string {
	if len(frame) > 200 {
		return fmt.Sprintf("%s... (%d bytes)", frame[:200], len(frame))
	}
	return frame
}

// repeat returns a JSON string value of n bytes of x.
func repeat(n int) string {
	return `"` + strings.Repeat("x", n) + `"`
}
