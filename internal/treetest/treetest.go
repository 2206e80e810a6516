// Package treetest is a small in-memory stand-in for the resource tree,
// for the tests of the tree's host service and its doors: a
// [plugins.Tree] that follows the contract of package channel's tree
// closely enough to check what a door sends it and what the door makes of
// the answers (replies with msg_id, notifications with seq to the
// subscribers of a resource, the reply queued after the notifications it
// caused, a bounded queue per client, Gone after a disconnect). It is not
// a second tree: no children listing, permissions or history.
package treetest

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/reso-project/reso/plugins"
)

// QueueLimit is how many frames a client of a Tree may have queued before
// it is disconnected as a slow consumer.
const QueueLimit = 64

// Epoch is the epoch of every stand-in tree's history, in its SUBSCRIBE
// replies.
const Epoch = "7e57"

// Call is a message a Tree received through Call.
type Call struct {
	From, Identity string
	Msg            string
}

// Tree is the stand-in tree. The zero value is not usable; see New.
type Tree struct {
	mu          sync.Mutex
	seq         uint64
	entities    map[string]json.RawMessage
	types       map[string]string
	subs        map[string]map[*Client]bool
	clients     map[string]*Client
	calls       []Call
	disconnects map[string]int
	nextID      int
}

// New returns an empty tree.
func New() *Tree {
	return &Tree{
		entities:    make(map[string]json.RawMessage),
		types:       make(map[string]string),
		subs:        make(map[string]map[*Client]bool),
		clients:     make(map[string]*Client),
		disconnects: make(map[string]int),
	}
}

// Client is a client of the stand-in tree.
type Client struct {
	t        *Tree
	id       string
	identity string
	wake     chan struct{} // one token: frames or gone arrived
	queue    []plugins.TreeFrame
	gone     *plugins.TreeGone
}

// Connect attaches a client; an id in use is an error.
func (t *Tree) Connect(_ context.Context, id, identity string) (plugins.TreeClient, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.clients[id]; ok || id == "" {
		return nil, errors.New("treetest: client id in use")
	}
	c := &Client{t: t, id: id, identity: identity, wake: make(chan struct{}, 1)}
	t.clients[id] = c
	return c, nil
}

// Call executes msg for a caller without a connection.
func (t *Tree) Call(_ context.Context, from, identity string, msg []byte) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls = append(t.calls, Call{From: from, Identity: identity, Msg: string(msg)})
	return t.exec(nil, from, msg), nil
}

// Calls returns the messages Call received, in order.
func (t *Tree) Calls() []Call {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Call(nil), t.calls...)
}

// Disconnects returns how many times the client id was disconnected (a
// Disconnect of a client already gone does not count).
func (t *Tree) Disconnects(id string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.disconnects[id]
}

// Connected returns the ids of the attached clients and their identities.
func (t *Tree) Connected() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := make(map[string]string, len(t.clients))
	for id, c := range t.clients {
		m[id] = c.identity
	}
	return m
}

// Exec executes msg and queues its reply after its notifications.
func (c *Client) Exec(_ context.Context, msg []byte) error {
	t := c.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.gone != nil {
		return c.gone
	}
	c.push(plugins.TreeFrame{Data: t.exec(c, c.id, msg)})
	return nil
}

// Next returns the queued frames, waiting for one.
func (c *Client) Next(ctx context.Context, buf []plugins.TreeFrame) ([]plugins.TreeFrame, error) {
	buf = buf[:0]
	for {
		c.t.mu.Lock()
		if len(c.queue) > 0 {
			buf = append(buf, c.queue...)
			c.queue = c.queue[:0]
			c.t.mu.Unlock()
			return buf, nil
		}
		if c.gone != nil {
			c.t.mu.Unlock()
			return buf, c.gone
		}
		c.t.mu.Unlock()
		select {
		case <-c.wake:
		case <-ctx.Done():
			return buf, ctx.Err()
		}
	}
}

// Disconnect detaches the client.
func (c *Client) Disconnect() {
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	c.t.drop(c, &plugins.TreeGone{Code: 1000, Reason: "disconnected"})
}

// drop ends c with g.
func (t *Tree) drop(c *Client, g *plugins.TreeGone) {
	if c.gone != nil {
		return
	}
	c.gone = g
	t.disconnects[c.id]++
	delete(t.clients, c.id)
	for _, s := range t.subs {
		delete(s, c)
	}
	c.signal()
}

// push queues f for c, or disconnects c as a slow consumer.
func (c *Client) push(f plugins.TreeFrame) {
	if c.gone != nil {
		return
	}
	if len(c.queue) >= QueueLimit {
		c.queue = c.queue[:0]
		c.t.drop(c, &plugins.TreeGone{Code: 1008, Reason: "slow consumer"})
		return
	}
	c.queue = append(c.queue, f)
	c.signal()
}

func (c *Client) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// message is the part of a channel message the stand-in reads.
type message struct {
	Method   string          `json:"method"`
	Resource string          `json:"resource"`
	MsgID    json.RawMessage `json:"msg_id"`
	Type     string          `json:"type"`
	Entity   json.RawMessage `json:"entity"`
	Data     json.RawMessage `json:"data"`
	ID       string          `json:"id"`
	Since    *uint64         `json:"since"`
	Epoch    *string         `json:"epoch"`
}

// exec executes msg for c (nil for Call) and returns its reply.
func (t *Tree) exec(c *Client, from string, raw []byte) []byte {
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		return failed(nil, "invalid JSON")
	}
	if m.Method == "" || m.Resource == "" {
		return failed(m.MsgID, "invalid JSON")
	}
	path, _, _ := strings.Cut(m.Resource, "?")
	path, _, _ = strings.Cut(path, "[")
	if !strings.HasPrefix(path, "/") || strings.Contains(path, "..") || strings.Contains(path, "//") || len(path) > 1 && strings.HasSuffix(path, "/") {
		return failed(m.MsgID, "invalid resource")
	}
	if strings.HasPrefix(path, "/forbidden") {
		return failed(m.MsgID, "forbidden")
	}
	typ := m.Type
	if typ == "" {
		typ = "application/json"
	}
	switch m.Method {
	case "GET":
		e, ok := t.entities[path]
		if !ok {
			return failed(m.MsgID, "not found")
		}
		return reply(m.MsgID, `"resource":`+quote(path)+`,"type":`+quote(t.types[path])+`,"entity":`+string(e))
	case "PUT":
		entity := m.Entity
		if len(entity) == 0 {
			entity = json.RawMessage(`{}`)
		}
		t.entities[path], t.types[path] = entity, typ
		t.notify(path, `"notify":"PUT","resource":`+quote(path)+`,"type":`+quote(typ)+`,"entity":`+string(entity)+`,"from":`+quote(from))
		return reply(m.MsgID, "")
	case "POST":
		id := m.ID
		if id == "" {
			t.nextID++
			id = "n" + strconv.Itoa(t.nextID)
		}
		child := strings.TrimSuffix(path, "/") + "/" + id
		if _, ok := t.entities[child]; ok {
			return failed(m.MsgID, "exists")
		}
		entity := m.Entity
		if len(entity) == 0 {
			entity = json.RawMessage(`{}`)
		}
		t.entities[child], t.types[child] = entity, typ
		t.notify(child, `"notify":"POST","resource":`+quote(child)+`,"type":`+quote(typ)+`,"entity":`+string(entity)+`,"from":`+quote(from))
		return reply(m.MsgID, `"id":`+quote(id))
	case "DELETE":
		if _, ok := t.entities[path]; !ok {
			return failed(m.MsgID, "not found")
		}
		delete(t.entities, path)
		t.notify(path, `"notify":"DELETE","resource":`+quote(path)+`,"type":null,"entity":null,"from":`+quote(from))
		return reply(m.MsgID, "")
	case "SUBSCRIBE":
		if c == nil {
			return failed(m.MsgID, "unknown method")
		}
		if t.subs[path] == nil {
			t.subs[path] = make(map[*Client]bool)
		}
		t.subs[path][c] = true
		if m.Since != nil {
			same := m.Epoch == nil || *m.Epoch == Epoch
			return reply(m.MsgID, `"recovered":`+strconv.FormatBool(same && *m.Since == t.seq)+`,"epoch":"`+Epoch+`"`)
		}
		return reply(m.MsgID, `"epoch":"`+Epoch+`"`)
	case "UNSUBSCRIBE":
		if c != nil {
			delete(t.subs[path], c)
		}
		return reply(m.MsgID, "")
	case "RULES":
		return reply(m.MsgID, `"resource":`+quote(path))
	case "NOTIFY":
		n := t.notify(path, `"notify":"NOTIFY","resource":`+quote(path)+`,"data":`+orNull(m.Data)+`,"from":`+quote(from))
		if n == 0 {
			return failed(m.MsgID, "no subscriber")
		}
		return reply(m.MsgID, `"sent_count":`+strconv.Itoa(n))
	}
	return failed(m.MsgID, "unknown method")
}

// notify sends one notification, serialized once, to the subscribers of
// path and returns how many got it.
func (t *Tree) notify(path, fields string) int {
	t.seq++
	f := plugins.TreeFrame{Seq: t.seq, Data: []byte("{" + fields + `,"seq":` + strconv.FormatUint(t.seq, 10) + "}")}
	n := 0
	for c := range t.subs[path] {
		c.push(f)
		n++
	}
	return n
}

func reply(id json.RawMessage, fields string) []byte {
	s := `{"msg_id":` + orNull(id) + `,"code":"success"`
	if fields != "" {
		s += "," + fields
	}
	return []byte(s + "}")
}

func failed(id json.RawMessage, reason string) []byte {
	return []byte(`{"msg_id":` + orNull(id) + `,"code":"failed","reason":` + quote(reason) + "}")
}

func orNull(b json.RawMessage) string {
	if len(b) == 0 {
		return "null"
	}
	return string(b)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var (
	_ plugins.Tree       = (*Tree)(nil)
	_ plugins.TreeClient = (*Client)(nil)
)
