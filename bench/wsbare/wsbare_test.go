package main

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func serve(t *testing.T, queueBytes int) (*hub, string) {
	h := newHub("00112233445566ff", queueBytes)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, "ws" + strings.TrimPrefix(srv.URL, "http") + "/channel"
}

func dial(t *testing.T, url string) *websocket.Conn {
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends msg and reads the next frame.
func roundTrip(t *testing.T, c *websocket.Conn, msg string) string {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	return next(t, c)
}

func next(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The frames are reso's, byte for byte (docs/channel.md), and a NOTIFY
// reaches every subscriber of its resource and no other.
func TestFrames(t *testing.T) {
	_, url := serve(t, 1<<20)
	a, b, other, pub := dial(t, url), dial(t, url), dial(t, url), dial(t, url)
	for _, c := range []*websocket.Conn{a, b} {
		if got, want := roundTrip(t, c, `{"method":"SUBSCRIBE","resource":"/r","msg_id":1}`),
			`{"msg_id":1,"code":"success","epoch":"00112233445566ff"}`; got != want {
			t.Fatalf("SUBSCRIBE: %s, want %s", got, want)
		}
	}
	if got, want := roundTrip(t, other, `{"method":"SUBSCRIBE","resource":"/o","msg_id":"x"}`),
		`{"msg_id":"x","code":"success","epoch":"00112233445566ff"}`; got != want {
		t.Fatalf("SUBSCRIBE: %s, want %s", got, want)
	}
	if got, want := roundTrip(t, pub, `{"method":"NOTIFY","resource":"/r","data":{"typing":true},"msg_id":7}`),
		`{"msg_id":7,"code":"success","sent_count":2}`; got != want {
		t.Errorf("NOTIFY: %s, want %s", got, want)
	}
	note := regexp.MustCompile(`^\{"notify":"NOTIFY","resource":"/r","data":\{"typing":true\},"from":"[0-9a-f]{16}","seq":1\}$`)
	for _, c := range []*websocket.Conn{a, b} {
		if got := next(t, c); !note.MatchString(got) {
			t.Errorf("notification %s, want %s", got, note)
		}
	}
	for _, tt := range []struct{ msg, want string }{
		{`{"method":"NOTIFY","resource":"/none","data":1,"msg_id":8}`, `{"msg_id":8,"code":"failed","reason":"no subscriber"}`},
		{`{"method":"NOTIFY","resource":"/r","msg_id":9}`, `{"msg_id":9,"code":"failed","reason":"invalid entity"}`},
		{`{"method":"GET","resource":"/r","msg_id":10}`, `{"msg_id":10,"code":"failed","reason":"unknown method"}`},
		{`{"method":"NOTIFY","resource":"r","data":1,"msg_id":11}`, `{"msg_id":11,"code":"failed","reason":"invalid resource"}`},
		{`{"method":"NOTIFY","msg_id":12}`, `{"msg_id":12,"code":"failed","reason":"missing resource"}`},
		{`{"method":`, `{"code":"failed","reason":"invalid JSON"}`},
	} {
		if got := roundTrip(t, pub, tt.msg); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.msg, got, tt.want)
		}
	}
	// The other subscriber got nothing: its next frame is the reply to
	// its own next message.
	if got, want := roundTrip(t, other, `{"method":"UNSUBSCRIBE","resource":"/o","msg_id":2}`), `{"msg_id":2,"code":"success"}`; got != want {
		t.Errorf("UNSUBSCRIBE: %s, want %s", got, want)
	}
	// A subscriber that leaves is no longer counted.
	a.Close()
	deadline := time.Now().Add(10 * time.Second)
	for i := 20; ; i++ {
		got := roundTrip(t, pub, fmt.Sprintf(`{"method":"NOTIFY","resource":"/r","data":2,"msg_id":%d}`, i))
		if got == fmt.Sprintf(`{"msg_id":%d,"code":"success","sent_count":1}`, i) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sent_count still not 1 after the subscriber left: %s", got)
		}
	}
}

// A subscriber that does not read is dropped once its queue passes the
// bound, and the hub forgets it.
func TestSlowConsumer(t *testing.T) {
	h, url := serve(t, 64<<10)
	slow, pub := dial(t, url), dial(t, url)
	roundTrip(t, slow, `{"method":"SUBSCRIBE","resource":"/r","msg_id":1}`)
	data := `"` + strings.Repeat("x", 60_000) + `"`
	for i := 1; ; i++ {
		if i > 5000 {
			t.Fatal("the subscriber that does not read was not dropped after 5000 NOTIFYs of 60 kB")
		}
		got := roundTrip(t, pub, fmt.Sprintf(`{"method":"NOTIFY","resource":"/r","data":%s,"msg_id":%d}`, data, i))
		if got == fmt.Sprintf(`{"msg_id":%d,"code":"failed","reason":"no subscriber"}`, i) {
			break
		}
	}
	h.mu.RLock()
	n := len(h.rooms)
	h.mu.RUnlock()
	if n != 0 {
		t.Errorf("%d rooms left, want 0", n)
	}
}

// Notifications of every frame length encoding (7-bit, 16-bit and 64-bit:
// the last notification is past 65,535 bytes, its NOTIFY within the read
// limit of 64 KiB) arrive whole.
func TestFrameLengths(t *testing.T) {
	_, url := serve(t, 1<<20)
	sub, pub := dial(t, url), dial(t, url)
	roundTrip(t, sub, `{"method":"SUBSCRIBE","resource":"/r","msg_id":1}`)
	for i, n := range []int{1, 60, 200, 65_470} {
		data := `"` + strings.Repeat("x", n) + `"`
		want := fmt.Sprintf(`{"msg_id":%d,"code":"success","sent_count":1}`, i+2)
		if got := roundTrip(t, pub, fmt.Sprintf(`{"method":"NOTIFY","resource":"/r","data":%s,"msg_id":%d}`, data, i+2)); got != want {
			t.Fatalf("NOTIFY of %d bytes: %s, want %s", n, got, want)
		}
		got := next(t, sub)
		if !strings.Contains(got, `"data":`+data+`,`) {
			t.Fatalf("notification of %d bytes: %d bytes received, without the data", n, len(got))
		}
	}
}

// A PUT keeps its entity until the connection that PUT it last closes.
func TestPut(t *testing.T) {
	h, url := serve(t, 1<<20)
	a, b := dial(t, url), dial(t, url)
	kept := func(path string) string {
		h.keptMu.Lock()
		defer h.keptMu.Unlock()
		return string(h.kept[path].entity)
	}
	for _, tc := range []struct {
		c         *websocket.Conn
		msg, want string
	}{
		{a, `{"method":"PUT","resource":"/p/1","msg_id":1,"entity":{"n":1}}`, `{"msg_id":1,"code":"success"}`},
		{a, `{"method":"PUT","resource":"/p/2","msg_id":2,"entity":{"n":2}}`, `{"msg_id":2,"code":"success"}`},
		{b, `{"method":"PUT","resource":"/p/2","msg_id":3,"entity":{"n":3}}`, `{"msg_id":3,"code":"success"}`},
		{b, `{"method":"PUT","resource":"/p/3","msg_id":4,"entity":7}`, `{"msg_id":4,"code":"failed","reason":"invalid entity"}`},
		{b, `{"method":"PUT","resource":"/p/3","msg_id":5}`, `{"msg_id":5,"code":"failed","reason":"invalid entity"}`},
	} {
		if got := roundTrip(t, tc.c, tc.msg); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.msg, got, tc.want)
		}
	}
	if kept("/p/1") != `{"n":1}` || kept("/p/2") != `{"n":3}` || kept("/p/3") != "" {
		t.Fatalf("kept %q %q %q", kept("/p/1"), kept("/p/2"), kept("/p/3"))
	}
	// a's /p/1 goes with it; /p/2 is b's since b PUT it last.
	a.Close()
	for deadline := time.Now().Add(10 * time.Second); kept("/p/1") != ""; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("/p/1 kept after its connection closed")
		}
	}
	if kept("/p/2") != `{"n":3}` {
		t.Errorf("/p/2 dropped with a connection that no longer owned it")
	}
	b.Close()
	for deadline := time.Now().Add(10 * time.Second); kept("/p/2") != ""; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("/p/2 kept after its connection closed")
		}
	}
}
