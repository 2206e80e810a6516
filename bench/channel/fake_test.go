package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gorilla/websocket"
)

// fake is a tiny stand-in for reso's WebSocket door, enough to check the
// load client's counting: SUBSCRIBE, UNSUBSCRIBE, NOTIFY (with sent_count
// or "no subscriber"), PUT (transient resources die with their
// connection, with an UPDATE to the parent's subscribers), GET ?deep=0,
// metrics with a goroutine count of 10 plus 2 per live connection, and a
// sketch of permissions: identities from Basic credentials or the cookies
// of a login (GET /channel/ with Basic; user_id 0 is the administrator),
// and RULES that leave a resource to its group (SUBSCRIBE forbidden and no
// notification for the others) unless ignoreRules is set.
type fake struct {
	mu       sync.Mutex
	subs     map[string]map[*fconn]bool
	children map[string]map[string]*fconn // parent -> child id -> owner (nil: persistent)
	seq      int64
	live     atomic.Int64
	puts     atomic.Int64
	persist  atomic.Int64
	overflow atomic.Int64               // notifications dropped on a full queue
	groups   map[string]map[string]bool // path -> its group, for a path with a rule
	users    map[string]string          // user_id -> e-mail, of the logins
	logins   atomic.Int64               // logins over HTTP
	basic    atomic.Int64               // handshakes with Basic credentials
	// ignoreRules makes RULES succeed and change nothing.
	ignoreRules bool
	srv         *httptest.Server
	debug       *httptest.Server
}

type fconn struct {
	ws    *websocket.Conn
	out   chan []byte
	email string // "": anonymous
}

func newFake(t *testing.T) *fake {
	f := &fake{subs: map[string]map[*fconn]bool{}, children: map[string]map[string]*fconn{},
		groups: map[string]map[string]bool{}, users: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/channel", f.serve)
	mux.HandleFunc("/channel/", f.login)
	f.srv = httptest.NewServer(mux)
	f.debug = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			fmt.Fprintf(w, "# HELP go_goroutines Number of goroutines that currently exist.\n# TYPE go_goroutines gauge\ngo_goroutines %d\n", 10+2*f.live.Load())
		case "/debug/pprof/heap":
			fmt.Fprintf(w, "heap profile: ...\n# runtime.MemStats\n# HeapInuse = %d\n", 1<<20+f.live.Load()*4096)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() { f.srv.Close(); f.debug.Close() })
	return f
}

func (f *fake) url() string       { return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/channel" }
func (f *fake) debugAddr() string { return strings.TrimPrefix(f.debug.URL, "http://") }

// login answers 404 to a GET with Basic credentials, with session
// cookies, and 401 without.
func (f *fake) login(w http.ResponseWriter, r *http.Request) {
	email, _, ok := r.BasicAuth()
	if !ok {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	uid := strconv.Itoa(len(f.users) + 1)
	f.users[uid] = email
	f.mu.Unlock()
	f.logins.Add(1)
	http.SetCookie(w, &http.Cookie{Name: "user_id", Value: uid})
	http.SetCookie(w, &http.Cookie{Name: "token", Value: "t" + uid})
	http.NotFound(w, r)
}

// identity is the e-mail of a handshake's credentials, "" for none.
func (f *fake) identity(r *http.Request) string {
	if email, _, ok := r.BasicAuth(); ok {
		f.basic.Add(1)
		return email
	}
	ck, err := r.Cookie("user_id")
	if err != nil {
		return ""
	}
	if ck.Value == "0" {
		return "admin"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.users[ck.Value]
}

// allowed tells whether c may read and subscribe to p; f.mu is held.
func (f *fake) allowed(c *fconn, p string) bool {
	g := f.groups[p]
	return g == nil || c.email == "admin" || g[c.email]
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{CheckOrigin: func(r *http.Request) bool {
		return r.Header.Get("Origin") == "http://"+r.Host
	}}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	f.live.Add(1)
	defer f.live.Add(-1)
	c := &fconn{ws: ws, out: make(chan []byte, 1<<14), email: f.identity(r)}
	done := make(chan struct{})
	go func() { // the writer
		defer close(done)
		for b := range c.out {
			if ws.WriteMessage(websocket.TextMessage, b) != nil {
				ws.Close()
				for range c.out {
				}
				return
			}
		}
	}()
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			break
		}
		f.exec(c, b)
	}
	f.drop(c)
	close(c.out)
	<-done
	ws.Close()
}

// send queues b for c, or drops it when c's queue is full.
func (f *fake) send(c *fconn, b []byte) {
	select {
	case c.out <- b:
	default:
		f.overflow.Add(1)
	}
}

func (f *fake) exec(c *fconn, b []byte) {
	var m struct {
		Method     string
		Resource   string
		MsgID      json.RawMessage `json:"msg_id"`
		Entity     json.RawMessage
		Data       json.RawMessage
		Persistent bool
		Rules      *string
		Group      []string
	}
	if err := json.Unmarshal(b, &m); err != nil {
		c.out <- []byte(`{"code":"failed","reason":"invalid JSON"}`)
		return
	}
	reply := func(fields string) {
		c.out <- []byte(`{"msg_id":` + string(m.MsgID) + `,` + fields + `}`)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch m.Method {
	case "RULES":
		if !f.ignoreRules && m.Rules != nil && *m.Rules != "" {
			g := map[string]bool{}
			for _, e := range m.Group {
				g[e] = true
			}
			f.groups[m.Resource] = g
		}
		reply(`"code":"success","effective":"self:- group:rs auth:- anon:-"`)
	case "SUBSCRIBE":
		if !f.allowed(c, m.Resource) {
			reply(`"code":"failed","reason":"forbidden"`)
			return
		}
		if f.subs[m.Resource] == nil {
			f.subs[m.Resource] = map[*fconn]bool{}
		}
		f.subs[m.Resource][c] = true
		reply(`"code":"success"`)
	case "UNSUBSCRIBE":
		delete(f.subs[m.Resource], c)
		reply(`"code":"success"`)
	case "NOTIFY":
		f.seq++
		n := f.notify(m.Resource, fmt.Sprintf(`{"notify":"NOTIFY","resource":%q,"data":%s,"from":"c","seq":%d}`, m.Resource, m.Data, f.seq))
		if n == 0 {
			reply(`"code":"failed","reason":"no subscriber"`)
			return
		}
		reply(fmt.Sprintf(`"code":"success","sent_count":%d`, n))
	case "PUT":
		f.puts.Add(1)
		parent, id := path.Split(m.Resource)
		parent = path.Clean(parent)
		if f.children[parent] == nil {
			f.children[parent] = map[string]*fconn{}
		}
		owner := c
		if m.Persistent {
			owner = nil
			f.persist.Add(1)
		}
		f.children[parent][id] = owner
		f.seq++
		f.notify(parent, fmt.Sprintf(`{"notify":"UPDATE","resource":%q,"update":%q,"entity":%s,"seq":%d}`, parent, id, m.Entity, f.seq))
		reply(`"code":"success"`)
	case "GET":
		p, q, _ := strings.Cut(m.Resource, "?")
		if q != "deep=0" {
			reply(`"code":"failed","reason":"unknown method"`)
			return
		}
		kids, ok := f.children[p]
		if !ok {
			reply(`"code":"failed","reason":"not found"`)
			return
		}
		reply(fmt.Sprintf(`"code":"success","resource":%q,"entity":{"count":%d}`, p, len(kids)))
	default:
		reply(`"code":"failed","reason":"unknown method"`)
	}
}

// notify queues one serialized notification for every subscriber of p and
// says how many there were; f.mu is held.
func (f *fake) notify(p, msg string) int {
	b := []byte(msg)
	n := 0
	for s := range f.subs[p] {
		if f.allowed(s, p) {
			f.send(s, b)
			n++
		}
	}
	return n
}

// drop ends c's subscriptions and deletes the transient resources it owns.
func (f *fake) drop(c *fconn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.subs {
		delete(s, c)
	}
	for parent, kids := range f.children {
		for id, owner := range kids {
			if owner == c {
				delete(kids, id)
				f.seq++
				f.notify(parent, fmt.Sprintf(`{"notify":"UPDATE","resource":%q,"delete":%q,"entity":null,"seq":%d}`, parent, id, f.seq))
			}
		}
		if len(kids) == 0 {
			delete(f.children, parent)
		}
	}
}
