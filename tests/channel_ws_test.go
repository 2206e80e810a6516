package tests

import (
	"strconv"
	"strings"
	"testing"
)

// TestChannelMethods walks every method of the WebSocket door
// (docs/channel.md#the-websocket-door) with two clients, A subscribed to a resource and B to its parent,
// and checks every reply and notification byte for byte: private fields
// never sent, the sender notified of its own changes with its client id as
// "from", the reply after the notifications the request caused, UPDATE on
// the parent with create/update/delete after the method, DELETE with null
// type and entity, NOTIFY with sent_count, UNSUBSCRIBE ending
// notifications.
func TestChannelMethods(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		g := clients(t, cs)
		a, b := g.dial("$A"), g.dial("$B")
		root := "/" + uniq("methods-")
		p := root + "/p"
		P, R := jsonString(p), jsonString(root)

		if got := anyEpoch(a.call(`{"method":"SUBSCRIBE","resource":` + P + `,"msg_id":1}`)); got != `{"msg_id":1,"code":"success","epoch":"E"}` {
			t.Errorf("SUBSCRIBE to a path that does not exist yet: %s", got)
		}
		if got := anyEpoch(b.call(`{"method":"SUBSCRIBE","resource":` + R + `,"msg_id":"sub"}`)); got != `{"msg_id":"sub","code":"success","epoch":"E"}` {
			t.Errorf("SUBSCRIBE: %s", got)
		}

		// PUT: the sender's own notification comes before its reply.
		a.send(`{"method":"PUT","resource":` + P + `,"msg_id":2,"entity":{"z":1,"a":2,"_secret":3}}`)
		seqs := a.expect(
			`{"notify":"PUT","resource":`+P+`,"type":"application/json","entity":{"z":1,"a":2},"from":$A,"seq":N}`,
			`{"msg_id":2,"code":"success"}`)
		seqs = append(seqs, b.expect(
			`{"notify":"UPDATE","resource":`+R+`,"update":"p","type":"application/json","entity":{"z":1,"a":2},"seq":N}`)...)
		if len(seqs) == 2 && seqs[0] != seqs[1] {
			t.Errorf("one change, two seqs: %v", seqs)
		}

		// GET, [attr], private fields.
		for _, c := range []struct{ msg, want string }{
			{`{"method":"GET","resource":` + P + `,"msg_id":3}`,
				`{"msg_id":3,"code":"success","resource":` + P + `,"type":"application/json","entity":{"z":1,"a":2}}`},
			{`{"method":"GET","resource":` + jsonString(p+"[a]") + `,"msg_id":4}`,
				`{"msg_id":4,"code":"success","resource":` + jsonString(p+"[a]") + `,"entity":2}`},
			{`{"method":"GET","resource":` + jsonString(p+"[_secret]") + `,"msg_id":5}`,
				`{"msg_id":5,"code":"failed","reason":"not found"}`},
			{`{"method":"GET","resource":` + jsonString(root+"/none") + `,"msg_id":"x"}`,
				`{"msg_id":"x","code":"failed","reason":"not found"}`},
		} {
			if got := b.call(c.msg); got != c.want {
				t.Errorf("%s\n got %s\nwant %s", c.msg, got, c.want)
			}
		}

		// PUT of one field by B, then a partial PUT by A.
		b.send(`{"method":"PUT","resource":` + jsonString(p+"[a]") + `,"entity":5,"msg_id":6}`)
		b.expect(
			`{"notify":"UPDATE","resource":`+R+`,"update":"p","type":"application/json","entity":{"z":1,"a":5},"seq":N}`,
			`{"msg_id":6,"code":"success"}`)
		a.expect(`{"notify":"PUT","resource":` + P + `,"type":"application/json","entity":{"z":1,"a":5},"from":$B,"seq":N}`)
		a.send(`{"method":"PUT","resource":` + P + `,"partial":true,"entity":{"a":7,"n":[1,{"k":null}]},"msg_id":7}`)
		a.expect(
			`{"notify":"PUT","resource":`+P+`,"type":"application/json","entity":{"z":1,"a":7,"n":[1,{"k":null}]},"from":$A,"seq":N}`,
			`{"msg_id":7,"code":"success"}`)
		b.expect(`{"notify":"UPDATE","resource":` + R + `,"update":"p","type":"application/json","entity":{"z":1,"a":7,"n":[1,{"k":null}]},"seq":N}`)

		// PUT with a type and no entity stores {}.
		q := jsonString(root + "/q")
		b.send(`{"method":"PUT","resource":` + q + `,"type":"text/x-note","msg_id":8}`)
		b.expect(
			`{"notify":"UPDATE","resource":`+R+`,"update":"q","type":"text/x-note","entity":{},"seq":N}`,
			`{"msg_id":8,"code":"success"}`)

		// POST with a given id, again (exists), and with a fresh id.
		b.send(`{"method":"POST","resource":` + R + `,"id":"x","entity":{"t":"hi"},"msg_id":9}`)
		b.expect(
			`{"notify":"UPDATE","resource":`+R+`,"create":"x","type":"application/json","entity":{"t":"hi"},"seq":N}`,
			`{"msg_id":9,"code":"success","id":"x"}`)
		if got := b.call(`{"method":"POST","resource":` + R + `,"id":"x","msg_id":10}`); got != `{"msg_id":10,"code":"failed","reason":"exists"}` {
			t.Errorf("POST of an existing id: %s", got)
		}
		b.send(`{"method":"POST","resource":` + R + `,"entity":[true],"msg_id":11}`)
		note := b.next()
		reply := b.next()
		id := field(reply, "id")
		if !strings.HasPrefix(id, `"`) || id == `""` {
			t.Fatalf("POST without id: reply %s", reply)
		}
		if got, _ := withoutSeq(note); got != `{"notify":"UPDATE","resource":`+R+`,"create":`+id+`,"type":"application/json","entity":[true],"seq":N}` {
			t.Errorf("POST without id: notification %s", note)
		}
		if reply != `{"msg_id":11,"code":"success","id":`+id+`}` {
			t.Errorf("POST without id: reply %s", reply)
		}

		// The children of root, in creation order.
		if got, want := b.call(`{"method":"GET","resource":`+R+`,"msg_id":12}`),
			`{"msg_id":12,"code":"success","resource":`+R+`,"type":"application/json","entity":["p","q","x",`+id+`]}`; got != want {
			t.Errorf("GET of the parent\n got %s\nwant %s", got, want)
		}

		// NOTIFY reaches A (subscribed), not B (subscribed to the parent).
		b.send(`{"method":"NOTIFY","resource":` + P + `,"data":{"hello":["a",1]},"msg_id":13}`)
		b.expect(`{"msg_id":13,"code":"success","sent_count":1}`)
		a.expect(`{"notify":"NOTIFY","resource":` + P + `,"data":{"hello":["a",1]},"from":$B,"seq":N}`)
		if got := b.call(`{"method":"NOTIFY","resource":` + jsonString(root+"/nobody") + `,"data":1,"msg_id":14}`); got != `{"msg_id":14,"code":"failed","reason":"no subscriber"}` {
			t.Errorf("NOTIFY without subscribers: %s", got)
		}

		// DELETE: DELETE to the resource's subscribers, UPDATE delete to
		// the parent's; a second DELETE finds nothing.
		a.send(`{"method":"DELETE","resource":` + P + `,"msg_id":15}`)
		a.expect(
			`{"notify":"DELETE","resource":`+P+`,"type":null,"entity":null,"from":$A,"seq":N}`,
			`{"msg_id":15,"code":"success"}`)
		b.expect(`{"notify":"UPDATE","resource":` + R + `,"delete":"p","type":null,"entity":null,"seq":N}`)
		if got := a.call(`{"method":"DELETE","resource":` + P + `,"msg_id":16}`); got != `{"msg_id":16,"code":"failed","reason":"not found"}` {
			t.Errorf("second DELETE: %s", got)
		}

		// UNSUBSCRIBE: A hears no more of p.
		if got := a.call(`{"method":"UNSUBSCRIBE","resource":` + P + `,"msg_id":17}`); got != `{"msg_id":17,"code":"success"}` {
			t.Errorf("UNSUBSCRIBE: %s", got)
		}
		b.send(`{"method":"PUT","resource":` + P + `,"entity":1,"msg_id":18}`)
		b.expect(
			`{"notify":"UPDATE","resource":`+R+`,"update":"p","type":"application/json","entity":1,"seq":N}`,
			`{"msg_id":18,"code":"success"}`)
		a.quiet()
		b.quiet()
	})
}

// TestChannelMsgIDs: any JSON scalar is echoed as it was sent, and a
// message without msg_id gets no reply (its notifications still come).
func TestChannelMsgIDs(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		a := clients(t, cs).dial("$A")
		p := jsonString("/" + uniq("ids-"))
		for _, id := range []string{`0`, `-1.5`, `"é\"x"`, `true`, `12345678901234567890`} {
			if got, want := a.call(`{"method":"GET","resource":`+p+`,"msg_id":`+id+`}`), `{"msg_id":`+id+`,"code":"failed","reason":"not found"}`; got != want {
				t.Errorf("msg_id %s: %s, want %s", id, got, want)
			}
		}
		a.call(`{"method":"SUBSCRIBE","resource":` + p + `,"msg_id":1}`)
		a.send(`{"method":"PUT","resource":` + p + `,"entity":"v"}`)
		a.expect(`{"notify":"PUT","resource":` + p + `,"type":"application/json","entity":"v","from":$A,"seq":N}`)
		a.quiet()
	})
}

// TestChannelQuery: children listed with ?deep, like, limit, offset and
// order (docs/channel.md#the-websocket-door), in creation order, private fields removed.
func TestChannelQuery(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		a := clients(t, cs).dial("$A")
		l := "/" + uniq("list-")
		a.call(`{"method":"PUT","resource":"` + l + `/apple","msg_id":1}`)
		a.call(`{"method":"PUT","resource":"` + l + `/banana","entity":{"_p":1,"v":2},"msg_id":2}`)
		a.call(`{"method":"PUT","resource":"` + l + `/avocado","type":"text/x-a","entity":3,"msg_id":3}`)
		for _, c := range []struct{ query, entity string }{
			{"", `["apple","banana","avocado"]`},
			{"?deep=0", `{"count":3}`},
			{"?deep=1", `["apple","banana","avocado"]`},
			{"?order=desc", `["avocado","banana","apple"]`},
			{"?order=desc&offset=1", `["banana","apple"]`},
			{"?order=asc&offset=1&limit=1", `["banana"]`},
			{"?limit=1", `["apple"]`},
			{"?like=a%25", `["apple","avocado"]`},
			{"?like=%an%", `["banana"]`},
			{"?deep=2&like=a%25&limit=5", `[{"rid":"apple","type":"application/json","entity":{}},{"rid":"avocado","type":"text/x-a","entity":3}]`},
			{"?deep=2&like=%an%", `[{"rid":"banana","type":"application/json","entity":{"v":2}}]`},
		} {
			r := jsonString(l + c.query)
			want := `{"msg_id":"q","code":"success","resource":` + r + `,"type":"application/json","entity":` + c.entity + `}`
			if got := a.call(`{"method":"GET","resource":` + r + `,"msg_id":"q"}`); got != want {
				t.Errorf("GET %s\n got %s\nwant %s", l+c.query, got, want)
			}
		}
	})
}

// TestChannelBadFrames: a frame that is not a JSON object, lacks method or
// resource, names an unknown method or an invalid resource gets a failed
// reply (with its msg_id when it could be read), and the connection stays
// usable.
func TestChannelBadFrames(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		a := clients(t, cs).dial("$A")
		for _, c := range []struct{ frame, want string }{
			{`not json`, `{"code":"failed","reason":"invalid JSON"}`},
			{`[1,2]`, `{"code":"failed","reason":"invalid JSON"}`},
			{`{"method":"PUT","resource":"/x","entity":{"a":}}`, `{"code":"failed","reason":"invalid JSON"}`},
			{`{"msg_id":1,"method":"FROB","resource":"/x"}`, `{"msg_id":1,"code":"failed","reason":"unknown method"}`},
			{`{"msg_id":2,"method":"GET","resource":"x"}`, `{"msg_id":2,"code":"failed","reason":"invalid resource"}`},
			{`{"msg_id":3,"method":"PUT","resource":"/a/../b"}`, `{"msg_id":3,"code":"failed","reason":"invalid resource"}`},
			{`{"msg_id":4,"method":"PUT","resource":"/a/"}`, `{"msg_id":4,"code":"failed","reason":"invalid resource"}`},
			{`{"msg_id":5,"method":"PUT","resource":"/a#b"}`, `{"msg_id":5,"code":"failed","reason":"invalid resource"}`},
			{`{"msg_id":6,"method":"PUT","resource":"/` + strings.Repeat("s/", 32) + `s"}`, `{"msg_id":6,"code":"failed","reason":"invalid resource"}`},
			{`{"msg_id":7,"method":"PUT","resource":"/` + strings.Repeat("é", 128) + `"}`, `{"msg_id":7,"code":"failed","reason":"invalid resource"}`},
			{`{"msg_id":"<script>","method":"<script>","resource":"/x"}`, `{"msg_id":"<script>","code":"failed","reason":"unknown method"}`},
		} {
			a.send(c.frame)
			a.expect(c.want)
		}
		// Without method or resource: failed with the msg_id; the reason
		// is the server's to word.
		for i, frame := range []string{`{"msg_id":8}`, `{"msg_id":9,"method":"GET"}`} {
			a.send(frame)
			prefix := `{"msg_id":` + strconv.Itoa(8+i) + `,"code":"failed","reason":"`
			if got := a.next(); !strings.HasPrefix(got, prefix) {
				t.Errorf("%s: %s, want %s...", frame, got, prefix)
			}
		}
		// Still usable, and the longest valid segment works.
		long := jsonString("/" + strings.Repeat("é", 127))
		if got := a.call(`{"method":"PUT","resource":` + long + `,"msg_id":10}`); got != `{"msg_id":10,"code":"success"}` {
			t.Errorf("PUT after bad frames: %s", got)
		}
		a.quiet()
	})
}

// TestChannelReplay: SUBSCRIBE with since replays, before its reply, the
// notifications of that resource after that seq, and the reply says
// recovered; without since nothing is replayed (docs/channel.md#replay-after-a-reconnect).
func TestChannelReplay(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		g := clients(t, cs)
		a, b := g.dial("$A"), g.dial("$B")
		r := jsonString("/" + uniq("replay-"))
		other := jsonString("/" + uniq("other-"))
		a.call(`{"method":"SUBSCRIBE","resource":` + r + `,"msg_id":1}`)
		a.call(`{"method":"PUT","resource":` + r + `,"entity":1,"msg_id":2}`)
		first := a.expect(`{"notify":"PUT","resource":` + r + `,"type":"application/json","entity":1,"from":$A,"seq":N}`)
		a.call(`{"method":"PUT","resource":` + r + `,"entity":2,"msg_id":3}`)
		a.call(`{"method":"PUT","resource":` + other + `,"entity":3,"msg_id":4}`)
		a.call(`{"method":"NOTIFY","resource":` + r + `,"data":4,"msg_id":5}`)
		a.expect(
			`{"notify":"PUT","resource":`+r+`,"type":"application/json","entity":2,"from":$A,"seq":N}`,
			`{"notify":"NOTIFY","resource":`+r+`,"data":4,"from":$A,"seq":N}`)

		b.send(`{"method":"SUBSCRIBE","resource":` + r + `,"since":` + strconv.FormatUint(first[0], 10) + `,"msg_id":6}`)
		b.expect(
			`{"notify":"PUT","resource":`+r+`,"type":"application/json","entity":2,"from":$A,"seq":N}`,
			`{"notify":"NOTIFY","resource":`+r+`,"data":4,"from":$A,"seq":N}`,
			`{"msg_id":6,"code":"success","recovered":true,"epoch":"E"}`)
		b.quiet()

		c := g.dial("$C")
		if got := anyEpoch(c.call(`{"method":"SUBSCRIBE","resource":` + r + `,"msg_id":7}`)); got != `{"msg_id":7,"code":"success","epoch":"E"}` {
			t.Errorf("SUBSCRIBE without since: %s", got)
		}
		c.quiet()
	})
}
