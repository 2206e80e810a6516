package call

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/plugins"
)

func TestExpires(t *testing.T) {
	for _, c := range []struct {
		body string
		max  time.Duration
		want int64
		err  bool
	}{
		{`{}`, 24 * time.Hour, 3600, false},
		{`{}`, time.Second, 1, false},
		{`{"expires": 60}`, 24 * time.Hour, 60, false},
		{`{"expires": 7200}`, time.Hour, 3600, false},
		{`{"expires": 1e30}`, time.Hour, 3600, false},
		{`{"expires": 2.0}`, time.Hour, 2, false},
		{`{"expires": 1e1}`, time.Hour, 10, false},
		{`{"expires": 1E+1}`, time.Hour, 10, false},
		{`{"expires": 60.000}`, 24 * time.Hour, 60, false},
		{`{"expires": 9.2e18}`, time.Hour, 3600, false},
		{`{"expires": 0.5e1}`, time.Hour, 5, false},
		{`{"expires": 1.0e-1}`, time.Hour, 0, true},
		{`{"expires": true}`, time.Hour, 0, true},
		{`{"expires": 0}`, time.Hour, 0, true},
		{`{"expires": -5}`, time.Hour, 0, true},
		{`{"expires": 1.5}`, time.Hour, 0, true},
		{`{"expires": "60"}`, time.Hour, 0, true},
		{`{"expires": null}`, time.Hour, 0, true},
	} {
		v, err := core.DecodeJSON([]byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		got, err := expires(v.(core.Record), c.max)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s max %v: %d, %v", c.body, c.max, got, err)
		}
	}
}

func TestSegments(t *testing.T) {
	for p, want := range map[string]string{"": "", "a@b": "a@b", "/a/b": "a|b", "a//b": "!", "a/../b": "!", "a%b": "!", "a/": "!"} {
		segs, err := segments(p)
		got := strings.Join(segs, "|")
		if err != nil {
			got = "!"
		}
		if got != want {
			t.Errorf("segments(%q) = %q, want %q", p, got, want)
		}
	}
}

// fixture is the plugin's handlers on a tree in memory.
type fixture struct {
	p      *Plugin
	tr     *channel.Tree
	routes map[string]core.Handler // by the first segment of the route: login, call, user
}

func newFixture(t *testing.T, settings map[string]string) *fixture {
	tr, err := channel.New(context.Background(), nil, channel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	p := &Plugin{}
	rs, err := p.Routes(context.Background(), plugins.Services{Settings: pluginhost.NewSettings(settings), Tree: channelhost.TreeOf(tr)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	f := &fixture{p: p, tr: tr, routes: make(map[string]core.Handler)}
	for _, r := range rs {
		for _, name := range []string{"login", "call", "user"} {
			if strings.Contains(r.Match, " /"+name) {
				f.routes[name] = r.Handler
			}
		}
	}
	return f
}

// do sends one request as who and returns the status and body.
func (f *fixture) do(t *testing.T, who, method, route, path, body string) (int, string) {
	t.Helper()
	req := &core.Request{Method: method, Path: path, Identity: &core.Identity{Email: who}, Body: strings.NewReader(body)}
	resp, err := f.routes[route].Handle(context.Background(), req)
	if err != nil {
		var se core.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return se.Code(), se.Reason()
	}
	code := resp.Code
	if code == 0 {
		code = 200
	}
	return code, string(resp.Body)
}

// TestWaiting checks the life of an invitation no session has taken: it
// waits, goes to the first subscriber, and CANCEL tells which happened.
func TestWaiting(t *testing.T) {
	f := newFixture(t, map[string]string{SettingWait: "1h"})
	if code, _ := f.do(t, "bob@x", "POST", "login", "bob@x", `{"contact": "sip:bob"}`); code != 201 {
		t.Fatalf("register: %d", code)
	}
	id := func(body string) string { return body[strings.Index(body, `"id": "`)+7 : strings.LastIndex(body, `"`)] }

	code, body := f.do(t, "ann@x", "SEND", "login", "bob@x", `{"command": "invite", "url": "/call/1"}`)
	if code != 202 {
		t.Fatalf("SEND with no session: %d %s", code, body)
	}
	first := id(body)
	if code, reason := f.do(t, "cat@x", "CANCEL", "login", "bob@x/"+first, ""); code != 403 {
		t.Errorf("CANCEL by another: %d %s", code, reason)
	}
	if code, _ := f.do(t, "ann@x", "CANCEL", "login", "bob@x/"+first, ""); code != 200 {
		t.Errorf("CANCEL before delivery: %d", code)
	}
	if code, reason := f.do(t, "ann@x", "CANCEL", "login", "bob@x/"+first, ""); code != 404 {
		t.Errorf("CANCEL again: %d %s", code, reason)
	}
	_, body = f.do(t, "ann@x", "SEND", "login", "bob@x", `{"command": "invite", "url": "/call/2"}`)
	second := id(body)

	// bob's session subscribes: the retry loop delivers the second only.
	c, err := f.tr.Connect("bob-ws", "bob@x")
	if err != nil {
		t.Fatal(err)
	}
	c.Exec(context.Background(), []byte(`{"method":"SUBSCRIBE","resource":"/login/bob@x"}`))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fs, err := c.Next(ctx, nil)
	if err != nil || len(fs) != 1 || !strings.Contains(string(fs[0].Data), `"data":{"command":"invite","url":"/call/2"},"from":"ann@x"`) {
		t.Fatalf("delivered %v %v", fs, err)
	}
	if code, reason := f.do(t, "ann@x", "CANCEL", "login", "bob@x/"+second, ""); code != 409 || reason != "Already Delivered" {
		t.Errorf("CANCEL after delivery: %d %s", code, reason)
	}
	if code, body := f.do(t, "ann@x", "SEND", "login", "bob@x", `{"command": "reject", "reason": "busy"}`); code != 200 {
		t.Errorf("SEND with a session: %d %s", code, body)
	}
	if code, reason := f.do(t, "ann@x", "SEND", "login", "nobody@x", `{"command": "invite"}`); code != 404 || reason != "Not Logged In" {
		t.Errorf("SEND to nobody: %d %s", code, reason)
	}
}

// TestWaitingBounds checks that the waiting invitations of one target are
// bounded in count.
func TestWaitingBounds(t *testing.T) {
	f := newFixture(t, nil)
	f.do(t, "bob@x", "POST", "login", "bob@x", `{"contact": "sip:bob"}`)
	for i := range DefaultWaitCount {
		if code, _ := f.do(t, "ann@x", "SEND", "login", "bob@x", `{"command": "invite"}`); code != 202 {
			t.Fatalf("SEND %d: %d", i, code)
		}
	}
	if code, reason := f.do(t, "ann@x", "SEND", "login", "bob@x", `{"command": "invite"}`); code != 503 || reason != "Too Many Waiting Messages" {
		t.Errorf("one more: %d %s", code, reason)
	}
}

// TestDeliveredDoNotCrowd checks that the delivered messages CANCEL must
// remember neither refuse new waiting ones nor are forgotten early:
// 2*maxWaiting deliveries, then a message waits and the last delivered
// still answers 409.
func TestDeliveredDoNotCrowd(t *testing.T) {
	f := newFixture(t, nil)
	f.do(t, "bob@x", "POST", "login", "bob@x", `{"contact": "sip:bob"}`)
	f.do(t, "cat@x", "POST", "login", "cat@x", `{"contact": "sip:cat"}`)
	c, err := f.tr.Connect("bob-ws", "bob@x")
	if err != nil {
		t.Fatal(err)
	}
	c.Exec(context.Background(), []byte(`{"method":"SUBSCRIBE","resource":"/login/bob@x"}`))
	var last string
	for i := range 2*maxWaiting + 10 {
		code, body := f.do(t, "ann@x", "SEND", "login", "bob@x", `{"command": "invite"}`)
		if code != 200 {
			t.Fatalf("SEND %d: %d %s", i, code, body)
		}
		last = body[strings.Index(body, `"id": "`)+7 : strings.LastIndex(body, `"`)]
		if i%1000 == 0 {
			c.TryNext(nil) // keep bob's queue short
		}
	}
	if code, reason := f.do(t, "ann@x", "SEND", "login", "cat@x", `{"command": "invite"}`); code != 202 {
		t.Errorf("a waiting message after many deliveries: %d %s", code, reason)
	}
	if code, reason := f.do(t, "ann@x", "CANCEL", "login", "bob@x/"+last, ""); code != 409 {
		t.Errorf("CANCEL of the last delivered: %d %s", code, reason)
	}
}

// TestWaitingBytes checks that the waiting invitations of one target are
// bounded in bytes, the others' bound apart, and that a withdrawn one
// gives its bytes back.
func TestWaitingBytes(t *testing.T) {
	body := `{"command": "invite", "url": "` + strings.Repeat("x", 20) + `"}`
	v, err := core.DecodeJSON([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	size := len(core.AppendJSON(nil, v)) // as it waits
	f := newFixture(t, map[string]string{SettingWaitBytes: strconv.Itoa(2*size + size/2), SettingWaitCount: "1000"})
	f.do(t, "bob@x", "POST", "login", "bob@x", `{"contact": "sip:bob"}`)
	f.do(t, "cat@x", "POST", "login", "cat@x", `{"contact": "sip:cat"}`)
	var ids []string
	for range 2 {
		code, b := f.do(t, "ann@x", "SEND", "login", "bob@x", body)
		if code != 202 {
			t.Fatalf("SEND: %d %s", code, b)
		}
		ids = append(ids, b[strings.Index(b, `"id": "`)+7:strings.LastIndex(b, `"`)])
	}
	if code, reason := f.do(t, "ann@x", "SEND", "login", "bob@x", body); code != 503 || reason != "Waiting Messages Too Large" {
		t.Errorf("past the bytes: %d %s", code, reason)
	}
	if code, reason := f.do(t, "ann@x", "SEND", "login", "cat@x", body); code != 202 {
		t.Errorf("another target: %d %s", code, reason)
	}
	if code, reason := f.do(t, "ann@x", "CANCEL", "login", "bob@x/"+ids[0], ""); code != 200 {
		t.Fatalf("CANCEL: %d %s", code, reason)
	}
	if code, reason := f.do(t, "ann@x", "SEND", "login", "bob@x", body); code != 202 {
		t.Errorf("after a CANCEL: %d %s", code, reason)
	}
}

// TestCloseStopsRetry checks that Close stops the retry loop of the
// invitations waiting, and waits for it.
func TestCloseStopsRetry(t *testing.T) {
	f := newFixture(t, map[string]string{SettingWait: "1h"})
	f.do(t, "bob@x", "POST", "login", "bob@x", `{"contact": "sip:bob"}`)
	if code, _ := f.do(t, "ann@x", "SEND", "login", "bob@x", `{"command": "invite"}`); code != 202 {
		t.Fatalf("SEND: %d", code)
	}
	w := f.p.waiting[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if code, _ := f.do(t, "ann@x", "SEND", "login", "bob@x", `{"command": "invite"}`); code != 202 {
		t.Fatalf("SEND after Close: %d", code)
	}
	w.mu.Lock()
	running := w.running
	w.mu.Unlock()
	if running {
		t.Error("the retry loop runs after Close")
	}
}

// TestRetryTurns checks that the retry loop offers at most
// maxTargetsPerRound targets a round, each in turn.
func TestRetryTurns(t *testing.T) {
	w := newWaiting(store{}, time.Hour, 1, 1)
	n := 2*maxTargetsPerRound + maxTargetsPerRound/2
	for i := range n {
		target := "u" + strconv.Itoa(i)
		w.pending[target] = &queue{msgs: []*message{{target: target}}}
	}
	seen := map[string]int{}
	for round := range 6 {
		got := w.turn()
		if want := min(maxTargetsPerRound, n); len(got) != want {
			t.Fatalf("round %d: %d targets, want %d", round, len(got), want)
		}
		for _, msgs := range got {
			seen[msgs[0].target]++
		}
		if round == 2 {
			if len(seen) != n {
				t.Fatalf("after 3 rounds %d targets had their turn, want %d", len(seen), n)
			}
		}
	}
	for target, k := range seen {
		if k < 2 || k > 3 {
			t.Errorf("%s offered %d times in 6 rounds", target, k)
		}
	}
}

// TestHolder: the tag of a message id is its first 8 hex digits; an id
// that no plugin made has none (and stays on the node asked).
func TestHolder(t *testing.T) {
	for id, want := range map[string]string{
		"0123abcd4567ef89":  "0123abcd",
		"0123ABCD4567ef89":  "",
		"0123abcd4567ef8":   "",
		"0123abcd4567ef890": "",
		"../..abcd4567ef89": "",
		"0123abc/4567ef89":  "",
	} {
		if got := holder(id); got != want {
			t.Errorf("holder(%q) = %q, want %q", id, got, want)
		}
	}
	r := &relay{tag: "0123abcd"}
	if id := r.newMessageID(); holder(id) != r.tag {
		t.Errorf("newMessageID %q: holder %q, want %q", id, holder(id), r.tag)
	}
}
