package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// hub holds the rooms, one per resource with subscribers, and the
// entities PUT by the connections.
type hub struct {
	epoch      string
	queueBytes int
	upgrader   websocket.Upgrader

	mu    sync.RWMutex
	rooms map[string]*room

	// kept are the entities PUT, by resource, each dropped when the
	// connection that PUT it last closes (as a transient resource of
	// reso's dies with its connection): the simplest server that keeps
	// what it is sent, for bench/channel-writes.sh's transient phase.
	keptMu sync.Mutex
	kept   map[string]keptEntity
}

// keptEntity is an entity PUT and the connection that PUT it.
type keptEntity struct {
	entity []byte
	owner  *client
}

// room is the subscribers of one resource and the seq of its last
// notification.
type room struct {
	path string
	mu   sync.Mutex
	seq  uint64
	subs []*client
}

func newHub(epoch string, queueBytes int) *hub {
	return &hub{
		epoch:      epoch,
		queueBytes: queueBytes,
		rooms:      map[string]*room{},
		kept:       map[string]keptEntity{},
		// reso's sizes (websocket/transport.go); the default
		// origin check (the request's own host), as reso's default.
		upgrader: websocket.Upgrader{
			ReadBufferSize:  512,
			WriteBufferSize: 4 << 10,
			WriteBufferPool: &sync.Pool{},
		},
	}
}

// ServeHTTP upgrades the request and serves the connection on goroutines
// of its own, so that net/http's goroutine and buffers go.
func (h *hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hj := &hijacker{ResponseWriter: w}
	ws, err := h.upgrader.Upgrade(hj, r, nil)
	if err != nil {
		return // the library answered
	}
	ws.SetReadLimit(64 << 10)
	c := &client{h: h, ws: ws, nc: hj.conn, id: randomHex()}
	go c.readLoop()
}

// request is the part of a client message the broadcaster reads.
type request struct {
	Method   string          `json:"method"`
	Resource string          `json:"resource"`
	MsgID    json.RawMessage `json:"msg_id"`
	Data     json.RawMessage `json:"data"`
	Entity   json.RawMessage `json:"entity"`
}

// exec executes one message of c.
func (h *hub) exec(c *client, typ int, msg []byte) {
	var m request
	if typ == websocket.TextMessage && !utf8.Valid(msg) || json.Unmarshal(msg, &m) != nil {
		c.send([]byte(`{"code":"failed","reason":"invalid JSON"}`))
		return
	}
	switch {
	case m.Method == "":
		c.send(failed(m.MsgID, "missing method"))
	case m.Resource == "":
		c.send(failed(m.MsgID, "missing resource"))
	case m.Resource[0] != '/':
		c.send(failed(m.MsgID, "invalid resource"))
	case m.Method == "SUBSCRIBE":
		h.subscribe(c, m.Resource)
		b := replyStart(m.MsgID, 32)
		b = append(b, `,"epoch":"`...)
		b = append(b, h.epoch...)
		c.send(append(b, `"}`...))
	case m.Method == "UNSUBSCRIBE":
		h.unsubscribe(c, m.Resource)
		c.send(append(replyStart(m.MsgID, 1), '}'))
	case m.Method == "NOTIFY":
		if len(m.Data) == 0 {
			c.send(failed(m.MsgID, "invalid entity"))
			return
		}
		n := h.notify(c, m.Resource, m.Data)
		if n == 0 {
			c.send(failed(m.MsgID, "no subscriber"))
			return
		}
		b := replyStart(m.MsgID, 32)
		b = append(b, `,"sent_count":`...)
		b = strconv.AppendInt(b, int64(n), 10)
		c.send(append(b, '}'))
	case m.Method == "PUT":
		if len(m.Entity) == 0 || m.Entity[0] != '{' {
			c.send(failed(m.MsgID, "invalid entity"))
			return
		}
		h.put(c, m.Resource, m.Entity)
		c.send(append(replyStart(m.MsgID, 1), '}'))
	default:
		c.send(failed(m.MsgID, "unknown method"))
	}
}

// put keeps entity (a copy of the message's, as encoding/json makes
// it) at path for c, which owns it from then on.
func (h *hub) put(c *client, path string, entity []byte) {
	h.keptMu.Lock()
	h.kept[path] = keptEntity{entity, c}
	h.keptMu.Unlock()
	c.puts = append(c.puts, path) // the reader's own
}

// dropKept drops the entities c owns still.
func (h *hub) dropKept(c *client) {
	h.keptMu.Lock()
	for _, path := range c.puts {
		if k, ok := h.kept[path]; ok && k.owner == c {
			delete(h.kept, path)
		}
	}
	h.keptMu.Unlock()
	c.puts = nil
}

// subscribe adds c to the room of path.
func (h *hub) subscribe(c *client, path string) {
	h.mu.Lock()
	r := h.rooms[path]
	if r == nil {
		r = &room{path: path}
		h.rooms[path] = r
	}
	r.mu.Lock()
	h.mu.Unlock()
	for _, s := range r.subs {
		if s == c {
			r.mu.Unlock()
			return
		}
	}
	r.subs = append(r.subs, c)
	r.mu.Unlock()
	c.rooms = append(c.rooms, r) // the reader's own
}

// unsubscribe removes c from the room of path.
func (h *hub) unsubscribe(c *client, path string) {
	for i, r := range c.rooms {
		if r.path == path {
			h.leave(c, r)
			c.rooms = append(c.rooms[:i], c.rooms[i+1:]...)
			return
		}
	}
}

// leave removes c from r, and r from the hub once it is empty.
func (h *hub) leave(c *client, r *room) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, s := range r.subs {
		if s == c {
			last := len(r.subs) - 1
			r.subs[i], r.subs[last] = r.subs[last], nil
			r.subs = r.subs[:last]
			break
		}
	}
	if len(r.subs) == 0 && h.rooms[r.path] == r {
		delete(h.rooms, r.path)
	}
}

// notify queues one notification, encoded once, for every subscriber of
// path and returns how many there were.
func (h *hub) notify(from *client, path string, data []byte) int {
	h.mu.RLock()
	r := h.rooms[path]
	h.mu.RUnlock()
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.subs) == 0 {
		return 0
	}
	r.seq++
	b := make([]byte, 0, 96+len(path)+len(data))
	b = append(b, `{"notify":"NOTIFY","resource":`...)
	b = appendString(b, path)
	b = append(b, `,"data":`...)
	b = append(b, data...)
	b = append(b, `,"from":"`...)
	b = append(b, from.id...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, r.seq, 10)
	b = append(b, '}')
	f := textFrame(b)
	for _, s := range r.subs {
		s.sendFrame(f)
	}
	return len(r.subs)
}

// replyStart begins a success reply, {"msg_id":ID,"code":"success"
// (without msg_id when the message had none).
func replyStart(id json.RawMessage, extra int) []byte {
	b := make([]byte, 0, 32+len(id)+extra)
	b = append(b, '{')
	if len(id) > 0 && string(id) != "null" {
		b = append(b, `"msg_id":`...)
		b = append(b, id...)
		b = append(b, ',')
	}
	return append(b, `"code":"success"`...)
}

// failed returns a failed reply with one of the fixed reasons.
func failed(id json.RawMessage, reason string) []byte {
	b := make([]byte, 0, 48+len(id)+len(reason))
	b = append(b, '{')
	if len(id) > 0 && string(id) != "null" {
		b = append(b, `"msg_id":`...)
		b = append(b, id...)
		b = append(b, ',')
	}
	b = append(b, `"code":"failed","reason":"`...)
	b = append(b, reason...)
	return append(b, `"}`...)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
