package tests

import (
	"testing"
)

// TestChannelTransient: a resource PUT without persistent belongs to its
// connection and is deleted, with the UPDATE delete notification to the
// parent's subscribers exactly once, when the connection ends with a close
// frame or when its TCP connection drops without one; a persistent one, and
// a transient one taken over by another client, stay (docs/channel.md#lifecycle).
func TestChannelTransient(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		g := clients(t, cs)
		watcher := g.dial("$W")
		root := "/" + uniq("online-")
		R := jsonString(root)
		watcher.call(`{"method":"SUBSCRIBE","resource":` + R + `,"msg_id":1}`)

		// Closed with a close frame.
		a := g.dial("$A")
		a.call(`{"method":"PUT","resource":"` + root + `/a","entity":{"n":1},"msg_id":1}`)
		a.call(`{"method":"PUT","resource":"` + root + `/keep","persistent":true,"msg_id":2}`)
		a.call(`{"method":"PUT","resource":"` + root + `/later","msg_id":3}`)
		a.call(`{"method":"PUT","resource":"` + root + `/later","persistent":true,"msg_id":4}`)
		a.call(`{"method":"PUT","resource":"` + root + `/taken","entity":"a","msg_id":5}`)
		watcher.expect(
			`{"notify":"UPDATE","resource":`+R+`,"update":"a","type":"application/json","entity":{"n":1},"seq":N}`,
			`{"notify":"UPDATE","resource":`+R+`,"update":"keep","type":"application/json","entity":{},"seq":N}`,
			`{"notify":"UPDATE","resource":`+R+`,"update":"later","type":"application/json","entity":{},"seq":N}`,
			`{"notify":"UPDATE","resource":`+R+`,"update":"later","type":"application/json","entity":{},"seq":N}`,
			`{"notify":"UPDATE","resource":`+R+`,"update":"taken","type":"application/json","entity":"a","seq":N}`)
		b := g.dial("$B")
		b.call(`{"method":"PUT","resource":"` + root + `/taken","entity":"b","msg_id":1}`)
		watcher.expect(`{"notify":"UPDATE","resource":` + R + `,"update":"taken","type":"application/json","entity":"b","seq":N}`)
		a.closeNormal()
		watcher.expect(`{"notify":"UPDATE","resource":` + R + `,"delete":"a","type":null,"entity":null,"seq":N}`)
		watcher.quiet()
		if got, want := watcher.call(`{"method":"GET","resource":`+R+`,"msg_id":2}`),
			`{"msg_id":2,"code":"success","resource":`+R+`,"type":"application/json","entity":["keep","later","taken"]}`; got != want {
			t.Errorf("after the close\n got %s\nwant %s", got, want)
		}

		// The TCP connection dropped without a close frame: B's transient
		// resources (taken included) go.
		b.call(`{"method":"PUT","resource":"` + root + `/b","entity":[1],"msg_id":2}`)
		watcher.expect(`{"notify":"UPDATE","resource":` + R + `,"update":"b","type":"application/json","entity":[1],"seq":N}`)
		b.drop()
		f1, f2 := watcher.next(), watcher.next()
		got := map[string]bool{}
		for _, f := range []string{f1, f2} {
			s, _ := withoutSeq(f)
			got[s] = true
		}
		for _, child := range []string{"b", "taken"} {
			if w := `{"notify":"UPDATE","resource":` + R + `,"delete":"` + child + `","type":null,"entity":null,"seq":N}`; !got[w] {
				t.Errorf("after the drop: %s and %s, want %s among them", f1, f2, w)
			}
		}
		watcher.quiet()
		if got, want := watcher.call(`{"method":"GET","resource":`+R+`,"msg_id":3}`),
			`{"msg_id":3,"code":"success","resource":`+R+`,"type":"application/json","entity":["keep","later"]}`; got != want {
			t.Errorf("after the drop\n got %s\nwant %s", got, want)
		}
	})
}

// TestChannelSubscriptionsEnd: a subscription ends with its connection:
// after a subscriber drops, a NOTIFY finds no subscriber.
func TestChannelSubscriptionsEnd(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		g := clients(t, cs)
		a, b := g.dial("$A"), g.dial("$B")
		p := jsonString("/" + uniq("subs-"))
		b.call(`{"method":"SUBSCRIBE","resource":` + p + `,"msg_id":1}`)
		if got := a.call(`{"method":"NOTIFY","resource":` + p + `,"data":1,"msg_id":1}`); got != `{"msg_id":1,"code":"success","sent_count":1}` {
			t.Fatalf("NOTIFY: %s", got)
		}
		b.drop()
		// The server notices the drop when it reads the end of the TCP
		// connection; until then the NOTIFY may still count b.
		for i := 0; ; i++ {
			got := a.call(`{"method":"NOTIFY","resource":` + p + `,"data":1,"msg_id":2}`)
			if got == `{"msg_id":2,"code":"failed","reason":"no subscriber"}` {
				break
			}
			if got != `{"msg_id":2,"code":"success","sent_count":1}` || i == 1000 {
				t.Fatalf("NOTIFY after the drop: %s (try %d)", got, i)
			}
		}
	})
}

// TestChannelRestart: persistent resources (created over the WebSocket
// with persistent:true, or over HTTP) survive a restart on the same -db
// file with their type, entity (private fields still hidden) and
// children, in creation order; transient
// ones do not (docs/channel.md#lifecycle).
func TestChannelRestart(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := startChannel(t, m)
		root := "/" + uniq("restart-")
		R := jsonString(root)
		a := clients(t, cs).dial("$A")
		for _, msg := range []string{
			`{"method":"PUT","resource":"` + root + `/keep","persistent":true,"type":"text/x-k","entity":{"v":"x","_p":2},"msg_id":1}`,
			`{"method":"PUT","resource":"` + root + `/keep/child","persistent":true,"entity":[1,2.5,null],"msg_id":2}`,
			`{"method":"PUT","resource":"` + root + `/gone","entity":1,"msg_id":3}`,
			`{"method":"PUT","resource":"` + root + `/made","entity":1,"msg_id":4}`,
			`{"method":"PUT","resource":"` + root + `/made","persistent":true,"entity":2,"msg_id":5}`,
			`{"method":"POST","resource":"` + root + `","id":"posted","persistent":true,"entity":{"t":1},"msg_id":6}`,
		} {
			if got := a.call(msg); field(got, "code") != `"success"` {
				t.Fatalf("%s: %s", msg, got)
			}
		}
		wantHTTP(t, cs.httpJSON("PUT", "/channel"+root+"/http", `{"h":true}`), "200 OK", "-")

		cs.restart()
		a = clients(t, cs).dial("$A")
		for _, c := range []struct{ msg, want string }{
			{`{"method":"GET","resource":` + R + `,"msg_id":1}`,
				`{"msg_id":1,"code":"success","resource":` + R + `,"type":"application/json","entity":["keep","made","posted","http"]}`},
			{`{"method":"GET","resource":"` + root + `/keep","msg_id":2}`,
				`{"msg_id":2,"code":"success","resource":"` + root + `/keep","type":"text/x-k","entity":{"v":"x"}}`},
			{`{"method":"GET","resource":"` + root + `/keep/child","msg_id":3}`,
				`{"msg_id":3,"code":"success","resource":"` + root + `/keep/child","type":"application/json","entity":[1,2.5,null]}`},
			{`{"method":"GET","resource":"` + root + `/gone","msg_id":4}`,
				`{"msg_id":4,"code":"failed","reason":"not found"}`},
			{`{"method":"GET","resource":"` + root + `/made","msg_id":5}`,
				`{"msg_id":5,"code":"success","resource":"` + root + `/made","type":"application/json","entity":2}`},
			{`{"method":"GET","resource":"` + root + `/http","msg_id":6}`,
				`{"msg_id":6,"code":"success","resource":"` + root + `/http","type":"application/json","entity":{"h":true}}`},
		} {
			if got := a.call(c.msg); got != c.want {
				t.Errorf("after the restart: %s\n got %s\nwant %s", c.msg, got, c.want)
			}
		}
		// A partial PUT after a restart merges into the stored entity, and
		// the private field is still never sent.
		a.call(`{"method":"PUT","resource":"` + root + `/keep","partial":true,"persistent":true,"entity":{"w":1},"msg_id":7}`)
		cs.restart()
		a = clients(t, cs).dial("$A")
		if got, want := a.call(`{"method":"GET","resource":"`+root+`/keep[_p]","msg_id":8}`), `{"msg_id":8,"code":"failed","reason":"not found"}`; got != want {
			t.Errorf("private field by [attr]: %s", got)
		}
		if got, want := a.call(`{"method":"GET","resource":"`+root+`/keep","msg_id":9}`),
			`{"msg_id":9,"code":"success","resource":"`+root+`/keep","type":"text/x-k","entity":{"v":"x","w":1}}`; got != want {
			t.Errorf("after the second restart\n got %s\nwant %s", got, want)
		}
	})
}
