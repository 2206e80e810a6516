package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channel/fleet/natstest"
)

// natsServers is a NATS cluster of the tests: in process
// ([natstest.Cluster]) or processes ([natstest.Procs]).
type natsServers interface{ URLs() string }

var (
	_ natsServers = (*natstest.Cluster)(nil)
	_ natsServers = (*natstest.Procs)(nil)
)

// node is one reso node of a test fleet: its NATS connection, its
// membership and its tree.
type node struct {
	nc   *nats.Conn
	f    *Fleet
	tree *channel.Tree
}

// startNode starts a node of the fleet cfg names on the cluster. Its log
// is printed when the test fails.
func startNode(t testing.TB, cl natsServers, cfg Config) *node {
	t.Helper()
	if cfg.Logger == nil {
		var buf logBuffer
		cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
		// Registered before the node's stop, so it runs after it.
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("log of a node:\n%s", buf.String())
			}
		})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	nc, err := nats.Connect(cl.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(ctx, nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := channel.New(ctx, nil, channel.Options{Log: f, Node: f.Node()})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Run(ctx, tree); err != nil {
		t.Fatal(err)
	}
	n := &node{nc: nc, f: f, tree: tree}
	t.Cleanup(n.stop)
	return n
}

// logBuffer keeps a node's log; it is written from the node's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// stop stops the node as a clean shutdown does.
func (n *node) stop() {
	n.tree.Close()
	n.f.Close()
	n.nc.Close()
}

// kill stops the node as kill -9 does: nothing more reaches NATS from it.
func (n *node) kill() {
	n.nc.Close()
	n.f.Close()
}

// client is a connection to a node's tree.
type client struct {
	t     testing.TB
	c     *channel.Client
	next  int
	queue [][]byte
	// notes holds the notifications received, in order.
	notes []map[string]any
	// err is why the last read returned nil.
	err error
}

var clientSeq struct {
	sync.Mutex
	n int
}

// connect attaches a new client to n's tree.
func connect(t testing.TB, n *node, identity string) *client {
	t.Helper()
	clientSeq.Lock()
	clientSeq.n++
	id := fmt.Sprintf("c%d", clientSeq.n)
	clientSeq.Unlock()
	c, err := n.tree.Connect(id, identity)
	if err != nil {
		t.Fatal(err)
	}
	return &client{t: t, c: c}
}

// do sends msg (a JSON object without msg_id) and returns its reply; the
// notifications queued before the reply are kept in notes.
func (c *client) do(msg string) map[string]any {
	c.t.Helper()
	c.next++
	id := c.next
	full := strings.TrimSuffix(strings.TrimSpace(msg), "}") + fmt.Sprintf(`,"msg_id":%d}`, id)
	c.c.Exec(c.t.Context(), []byte(full))
	for {
		f := c.read()
		if f == nil {
			c.t.Fatalf("no reply to %s: %v", msg, c.err)
		}
		if v, ok := f["msg_id"]; ok && v == float64(id) {
			return f
		}
		c.notes = append(c.notes, f)
	}
}

// read returns the next frame, or nil (why in err) once the client ended
// or after 30 s without one (a hang guard: a write answers within 15 s,
// unavailable at worst).
func (c *client) read() map[string]any {
	c.t.Helper()
	if len(c.queue) == 0 {
		ctx, cancel := context.WithTimeout(c.t.Context(), 30*time.Second)
		defer cancel()
		fs, err := c.c.Next(ctx, nil)
		if err != nil {
			c.err = err
			return nil
		}
		for _, f := range fs {
			c.queue = append(c.queue, append([]byte(nil), f.Data...))
		}
	}
	data := c.queue[0]
	c.queue = c.queue[1:]
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

// expect reads until it has n notifications in notes.
func (c *client) expect(n int) {
	c.t.Helper()
	for len(c.notes) < n {
		f := c.read()
		if f == nil {
			c.t.Fatalf("%d notifications, want %d (%v): %v", len(c.notes), n, c.err, c.notes)
		}
		c.notes = append(c.notes, f)
	}
}

// seqs returns the seq of each notification in notes.
func (c *client) seqs() []uint64 {
	var s []uint64
	for _, n := range c.notes {
		s = append(s, uint64(n["seq"].(float64)))
	}
	return s
}

// code returns the code of a reply, with its reason when it failed.
func code(r map[string]any) string {
	if r["code"] == "failed" {
		return "failed: " + fmt.Sprint(r["reason"])
	}
	return fmt.Sprint(r["code"])
}

// natsName turns a test's name into a fleet name.
func natsName(s string) string {
	return strings.NewReplacer("/", "-", "_", "-").Replace(s)
}

// fleet starts n nodes of a fresh fleet on cl, named after the test.
func fleet(t testing.TB, cl natsServers, n int, cfg Config) []*node {
	t.Helper()
	cfg.Name = natsName(t.Name())
	var ns []*node
	for range n {
		ns = append(ns, startNode(t, cl, cfg))
	}
	return ns
}
