package channel

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// newTree returns a tree over store (nil: none) closed with the test.
func newTree(t testing.TB, store Store, opt Options) *Tree {
	t.Helper()
	if opt.Epoch == "" {
		opt.Epoch = "e" // the epoch the replies of the tests show
	}
	tr, err := New(context.Background(), store, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// connect attaches a client or fails the test.
func connect(t testing.TB, tr *Tree, id, identity string) *Client {
	t.Helper()
	c, err := tr.Connect(id, identity)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// drain returns the frames queued for c without waiting, as strings.
func drain(t testing.TB, c *Client) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fs, err := c.Next(ctx, nil)
	if err != nil && !errors.Is(err, context.Canceled) {
		var g *Gone
		if !errors.As(err, &g) {
			t.Fatalf("next: %v", err)
		}
	}
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Data))
	}
	return out
}

// step is one message of a scenario and the frames every client holds
// after it.
type step struct {
	from string            // client that sends msg
	msg  string            // the message
	want map[string]string // client -> its frames joined by "\n" ("" none)
}

// scenarios are the rules of docs/channel.md: each starts on an empty tree
// with clients c1 and c2 (identities u1 and u2).
var scenarios = []struct {
	name  string
	steps []step
}{
	{"put get self-notify", []step{
		{"c1", `{"method":"SUBSCRIBE","resource":"/p","msg_id":1}`, map[string]string{"c1": `{"msg_id":1,"code":"success","epoch":"e"}`}},
		{"c1", `{"method":"PUT","resource":"/p","msg_id":"a","entity":{"z":1,"a":2,"_secret":3}}`, map[string]string{
			"c1": `{"notify":"PUT","resource":"/p","type":"application/json","entity":{"z":1,"a":2},"from":"c1","seq":1}` + "\n" +
				`{"msg_id":"a","code":"success"}`}},
		{"c2", `{"method":"GET","resource":"/p","msg_id":2}`, map[string]string{
			"c2": `{"msg_id":2,"code":"success","resource":"/p","type":"application/json","entity":{"z":1,"a":2}}`}},
	}},
	{"update on parent", []step{
		{"c2", `{"method":"SUBSCRIBE","resource":"/room"}`, nil},
		{"c1", `{"method":"PUT","resource":"/room/u1","type":"text/x","entity":[1, 2]}`, map[string]string{
			"c2": `{"notify":"UPDATE","resource":"/room","update":"u1","type":"text/x","entity":[1,2],"seq":1}`}},
		{"c1", `{"method":"DELETE","resource":"/room/u1","msg_id":null}`, map[string]string{
			"c2": `{"notify":"UPDATE","resource":"/room","delete":"u1","type":null,"entity":null,"seq":2}`}},
		{"c1", `{"method":"DELETE","resource":"/room/u1","msg_id":3}`, map[string]string{"c1": `{"msg_id":3,"code":"failed","reason":"not found"}`}},
	}},
	{"top-level update goes to root", []step{
		{"c2", `{"method":"SUBSCRIBE","resource":"/"}`, nil},
		{"c1", `{"method":"PUT","resource":"/a"}`, map[string]string{
			"c2": `{"notify":"UPDATE","resource":"/","update":"a","type":"application/json","entity":{},"seq":1}`}},
	}},
	{"post fresh and given id", []step{
		{"c2", `{"method":"SUBSCRIBE","resource":"/chat/x"}`, nil},
		{"c2", `{"method":"SUBSCRIBE","resource":"/chat"}`, nil},
		{"c1", `{"method":"POST","resource":"/chat","id":"x","entity":{"t":"hi"},"msg_id":1}`, map[string]string{
			"c1": `{"msg_id":1,"code":"success","id":"x"}`,
			"c2": `{"notify":"POST","resource":"/chat/x","type":"application/json","entity":{"t":"hi"},"from":"c1","seq":1}` + "\n" +
				`{"notify":"UPDATE","resource":"/chat","create":"x","type":"application/json","entity":{"t":"hi"},"seq":1}`}},
		{"c1", `{"method":"POST","resource":"/chat","id":"x","msg_id":2}`, map[string]string{"c1": `{"msg_id":2,"code":"failed","reason":"exists"}`}},
		{"c1", `{"method":"POST","resource":"/chat","id":"a/b","msg_id":3}`, map[string]string{"c1": `{"msg_id":3,"code":"failed","reason":"invalid id"}`}},
	}},
	{"delete keeps children", []step{
		{"c1", `{"method":"PUT","resource":"/a","entity":1}`, nil},
		{"c1", `{"method":"PUT","resource":"/a/c2","entity":2}`, nil},
		{"c1", `{"method":"PUT","resource":"/a/b1","entity":3}`, nil},
		{"c1", `{"method":"DELETE","resource":"/a","msg_id":1}`, map[string]string{"c1": `{"msg_id":1,"code":"success"}`}},
		{"c1", `{"method":"GET","resource":"/a","msg_id":2}`, map[string]string{
			"c1": `{"msg_id":2,"code":"success","resource":"/a","type":"application/json","entity":["c2","b1"]}`}},
		{"c1", `{"method":"DELETE","resource":"/a/c2"}`, nil},
		{"c1", `{"method":"DELETE","resource":"/a/b1"}`, nil},
		{"c1", `{"method":"GET","resource":"/a","msg_id":3}`, map[string]string{"c1": `{"msg_id":3,"code":"failed","reason":"not found"}`}},
	}},
	{"attr and partial", []step{
		{"c1", `{"method":"PUT","resource":"/p","entity":{"b":1,"a":2,"_k":0}}`, nil},
		{"c1", `{"method":"PUT","resource":"/p","partial":true,"entity":{"a":5,"n":{"x":[1]}}}`, nil},
		{"c1", `{"method":"PUT","resource":"/p[b]","entity":"s"}`, nil},
		{"c1", `{"method":"GET","resource":"/p","msg_id":1}`, map[string]string{
			"c1": `{"msg_id":1,"code":"success","resource":"/p","type":"application/json","entity":{"b":"s","a":5,"n":{"x":[1]}}}`}},
		{"c1", `{"method":"GET","resource":"/p[n]","msg_id":2}`, map[string]string{
			"c1": `{"msg_id":2,"code":"success","resource":"/p[n]","entity":{"x":[1]}}`}},
		{"c1", `{"method":"GET","resource":"/p[_k]","msg_id":3}`, map[string]string{"c1": `{"msg_id":3,"code":"failed","reason":"not found"}`}},
		{"c1", `{"method":"PUT","resource":"/q","entity":[1]}`, nil},
		{"c1", `{"method":"PUT","resource":"/q","partial":true,"entity":{"a":1},"msg_id":4}`, map[string]string{"c1": `{"msg_id":4,"code":"failed","reason":"invalid entity"}`}},
	}},
	{"listing", []step{
		{"c1", `{"method":"PUT","resource":"/l/apple"}`, nil},
		{"c1", `{"method":"PUT","resource":"/l/banana","entity":{"_p":1,"v":2}}`, nil},
		{"c1", `{"method":"PUT","resource":"/l/avocado","type":"t/x","entity":3}`, nil},
		{"c1", `{"method":"GET","resource":"/l?deep=0","msg_id":1}`, map[string]string{
			"c1": `{"msg_id":1,"code":"success","resource":"/l?deep=0","type":"application/json","entity":{"count":3}}`}},
		{"c1", `{"method":"GET","resource":"/l?order=desc&offset=1","msg_id":2}`, map[string]string{
			"c1": `{"msg_id":2,"code":"success","resource":"/l?order=desc&offset=1","type":"application/json","entity":["banana","apple"]}`}},
		{"c1", `{"method":"GET","resource":"/l?deep=2&like=a%25&limit=5","msg_id":3}`, map[string]string{
			"c1": `{"msg_id":3,"code":"success","resource":"/l?deep=2&like=a%25&limit=5","type":"application/json","entity":[{"rid":"apple","type":"application/json","entity":{}},{"rid":"avocado","type":"t/x","entity":3}]}`}},
		{"c1", `{"method":"GET","resource":"/l?like=%an%&deep=2","msg_id":4}`, map[string]string{
			"c1": `{"msg_id":4,"code":"success","resource":"/l?like=%an%&deep=2","type":"application/json","entity":[{"rid":"banana","type":"application/json","entity":{"v":2}}]}`}},
		{"c1", `{"method":"GET","resource":"/l?deep=3","msg_id":5}`, map[string]string{"c1": `{"msg_id":5,"code":"failed","reason":"invalid query"}`}},
		{"c1", `{"method":"GET","resource":"/l?limit=1","msg_id":6}`, map[string]string{
			"c1": `{"msg_id":6,"code":"success","resource":"/l?limit=1","type":"application/json","entity":["apple"]}`}},
	}},
	{"notify", []step{
		{"c1", `{"method":"NOTIFY","resource":"/n","data":{"x":1},"msg_id":1}`, map[string]string{"c1": `{"msg_id":1,"code":"failed","reason":"no subscriber"}`}},
		{"c2", `{"method":"SUBSCRIBE","resource":"/n"}`, nil},
		{"c1", `{"method":"SUBSCRIBE","resource":"/n"}`, nil},
		{"c1", `{"method":"NOTIFY","resource":"/n","data":{"x":1},"msg_id":2}`, map[string]string{
			"c1": `{"notify":"NOTIFY","resource":"/n","data":{"x":1},"from":"c1","seq":2}` + "\n" + `{"msg_id":2,"code":"success","sent_count":2}`,
			"c2": `{"notify":"NOTIFY","resource":"/n","data":{"x":1},"from":"c1","seq":2}`}},
		{"c2", `{"method":"UNSUBSCRIBE","resource":"/n","msg_id":3}`, map[string]string{"c2": `{"msg_id":3,"code":"success"}`}},
		{"c1", `{"method":"NOTIFY","resource":"/n","msg_id":4}`, map[string]string{
			"c1": `{"notify":"NOTIFY","resource":"/n","data":null,"from":"c1","seq":3}` + "\n" + `{"msg_id":4,"code":"success","sent_count":1}`}},
	}},
	{"bad frames", []step{
		{"c1", `not json`, map[string]string{"c1": `{"code":"failed","reason":"invalid JSON"}`}},
		{"c1", `[1,2]`, map[string]string{"c1": `{"code":"failed","reason":"invalid JSON"}`}},
		{"c1", `{"msg_id":7}`, map[string]string{"c1": `{"msg_id":7,"code":"failed","reason":"missing method"}`}},
		{"c1", `{"msg_id":8,"method":"GET"}`, map[string]string{"c1": `{"msg_id":8,"code":"failed","reason":"missing resource"}`}},
		{"c1", `{"msg_id":9,"method":"FROB","resource":"/x"}`, map[string]string{"c1": `{"msg_id":9,"code":"failed","reason":"unknown method"}`}},
		{"c1", `{"msg_id":10,"method":"GET","resource":5}`, map[string]string{"c1": `{"msg_id":10,"code":"failed","reason":"invalid field"}`}},
		{"c1", `{"method":"FROB","resource":"/x"}`, nil},
		{"c1", `{"msg_id":11,"method":"PUT","resource":"/x","entity":{"a":}}`, map[string]string{"c1": `{"msg_id":11,"code":"failed","reason":"invalid JSON"}`}},
		{"c1", `{"method":"PUT","resource":"/x","entity":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `,"msg_id":12}`, map[string]string{"c1": `{"msg_id":12,"code":"failed","reason":"invalid JSON"}`}},
		{"c1", `{"msg_id":"a","msg_id":13,"method":"PUT","resource":"/x","entity":[1,}`, map[string]string{"c1": `{"msg_id":13,"code":"failed","reason":"invalid JSON"}`}},
		{"c1", `{"msg_id":[1],"method":"GET","resource":"/x"}`, map[string]string{"c1": `{"code":"failed","reason":"invalid msg_id"}`}},
		{"c1", `{"msg_id":{"a":1},"method":"GET","resource":5}`, map[string]string{"c1": `{"code":"failed","reason":"invalid msg_id"}`}},
		{"c1", `{"msg_id":{"a":1},"method":"GET","resource":"/x","entity":{"a":}}`, map[string]string{"c1": `{"code":"failed","reason":"invalid msg_id"}`}},
	}},
	{"invalid resources", []step{
		{"c1", `{"msg_id":1,"method":"GET","resource":"a"}`, map[string]string{"c1": `{"msg_id":1,"code":"failed","reason":"invalid resource"}`}},
		{"c1", `{"msg_id":2,"method":"PUT","resource":"/a/"}`, map[string]string{"c1": `{"msg_id":2,"code":"failed","reason":"invalid resource"}`}},
		{"c1", `{"msg_id":3,"method":"PUT","resource":"/a/../b"}`, map[string]string{"c1": `{"msg_id":3,"code":"failed","reason":"invalid resource"}`}},
		{"c1", `{"msg_id":4,"method":"PUT","resource":"/a#b"}`, map[string]string{"c1": `{"msg_id":4,"code":"failed","reason":"invalid resource"}`}},
		{"c1", `{"msg_id":5,"method":"PUT","resource":"/a\u0001"}`, map[string]string{"c1": `{"msg_id":5,"code":"failed","reason":"invalid resource"}`}},
		{"c1", `{"msg_id":6,"method":"PUT","resource":"/"}`, map[string]string{"c1": `{"msg_id":6,"code":"failed","reason":"invalid resource"}`}},
		{"c1", `{"msg_id":7,"method":"PUT","resource":"/` + strings.Repeat("a/", 32) + `a"}`, map[string]string{"c1": `{"msg_id":7,"code":"failed","reason":"invalid resource"}`}},
		{"c1", `{"msg_id":8,"method":"PUT","resource":"/` + strings.Repeat("é", 128) + `"}`, map[string]string{"c1": `{"msg_id":8,"code":"failed","reason":"invalid resource"}`}},
		{"c1", `{"msg_id":9,"method":"PUT","resource":"/` + strings.Repeat("é", 127) + `"}`, map[string]string{"c1": `{"msg_id":9,"code":"success"}`}},
		{"c1", `{"msg_id":10,"method":"PUT","resource":"/a\"b"}`, map[string]string{"c1": `{"msg_id":10,"code":"success"}`}},
		{"c1", `{"msg_id":11,"method":"GET","resource":"/a\"b"}`, map[string]string{"c1": `{"msg_id":11,"code":"success","resource":"/a\"b","type":"application/json","entity":{}}`}},
	}},
	{"transient removed on disconnect", []step{
		{"c2", `{"method":"SUBSCRIBE","resource":"/online"}`, nil},
		{"c1", `{"method":"PUT","resource":"/online/u1","entity":{"n":1}}`, map[string]string{
			"c2": `{"notify":"UPDATE","resource":"/online","update":"u1","type":"application/json","entity":{"n":1},"seq":1}`}},
		{"c1", `{"method":"PUT","resource":"/online/keep","persistent":true}`, map[string]string{
			"c2": `{"notify":"UPDATE","resource":"/online","update":"keep","type":"application/json","entity":{},"seq":2}`}},
		{"c1", "disconnect", map[string]string{
			"c2": `{"notify":"UPDATE","resource":"/online","delete":"u1","type":null,"entity":null,"seq":3}`}},
		{"c2", `{"method":"GET","resource":"/online","msg_id":1}`, map[string]string{
			"c2": `{"msg_id":1,"code":"success","resource":"/online","type":"application/json","entity":["keep"]}`}},
	}},
	{"takeover by another client", []step{
		{"c1", `{"method":"PUT","resource":"/t","entity":1}`, nil},
		{"c2", `{"method":"PUT","resource":"/t","entity":2}`, nil},
		{"c1", "disconnect", nil},
		{"c2", `{"method":"GET","resource":"/t","msg_id":1}`, map[string]string{
			"c2": `{"msg_id":1,"code":"success","resource":"/t","type":"application/json","entity":2}`}},
	}},
	{"persistent makes it stay", []step{
		{"c1", `{"method":"PUT","resource":"/t","entity":1}`, nil},
		{"c1", `{"method":"PUT","resource":"/t","entity":2,"persistent":true}`, nil},
		{"c1", "disconnect", nil},
		{"c2", `{"method":"GET","resource":"/t","msg_id":1}`, map[string]string{
			"c2": `{"msg_id":1,"code":"success","resource":"/t","type":"application/json","entity":2}`}},
	}},
	{"replay", []step{
		{"c1", `{"method":"PUT","resource":"/r","entity":1}`, nil},
		{"c1", `{"method":"PUT","resource":"/r","entity":2}`, nil},
		{"c1", `{"method":"PUT","resource":"/s","entity":3}`, nil},
		{"c1", `{"method":"NOTIFY","resource":"/r","data":4}`, nil},
		{"c2", `{"method":"SUBSCRIBE","resource":"/r","since":1,"msg_id":1}`, map[string]string{
			"c2": `{"notify":"PUT","resource":"/r","type":"application/json","entity":2,"from":"c1","seq":2}` + "\n" +
				`{"notify":"NOTIFY","resource":"/r","data":4,"from":"c1","seq":4}` + "\n" +
				`{"msg_id":1,"code":"success","recovered":true,"epoch":"e"}`}},
		{"c2", `{"method":"SUBSCRIBE","resource":"/s","since":99,"msg_id":2}`, map[string]string{
			"c2": `{"msg_id":2,"code":"success","recovered":false,"epoch":"e"}`}},
	}},
}

func TestScenarios(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			tr := newTree(t, nil, Options{})
			clients := map[string]*Client{"c1": connect(t, tr, "c1", "u1"), "c2": connect(t, tr, "c2", "u2")}
			for i, s := range sc.steps {
				if s.msg == "disconnect" {
					clients[s.from].Disconnect()
				} else {
					clients[s.from].Exec(context.Background(), []byte(s.msg))
				}
				for name, c := range clients {
					got := strings.Join(drain(t, c), "\n")
					if got != s.want[name] {
						t.Errorf("step %d %s: %s got\n%s\nwant\n%s", i, s.msg, name, got, s.want[name])
					}
				}
			}
		})
	}
}

// TestPostFreshID checks that POST without id creates a child with a
// fresh id and answers it.
func TestPostFreshID(t *testing.T) {
	tr := newTree(t, nil, Options{})
	ctx := context.Background()
	ids := map[string]bool{}
	for i := 0; i < 20; i++ {
		got := tr.Call(ctx, "", "", []byte(`{"method":"POST","resource":"/m","entity":{"i":1},"msg_id":1}`))
		var r struct {
			Code, ID string
		}
		if err := json.Unmarshal(got, &r); err != nil || r.Code != "success" || len(r.ID) != 16 || ids[r.ID] {
			t.Fatalf("reply %s", got)
		}
		ids[r.ID] = true
		got = tr.Call(ctx, "", "", []byte(`{"method":"GET","resource":"/m/`+r.ID+`","msg_id":2}`))
		if want := `{"msg_id":2,"code":"success","resource":"/m/` + r.ID + `","type":"application/json","entity":{"i":1}}`; string(got) != want {
			t.Fatalf("get %s, want %s", got, want)
		}
	}
	got := tr.Call(ctx, "", "", []byte(`{"method":"GET","resource":"/m?deep=0"}`))
	if string(got) != `{"code":"success","resource":"/m?deep=0","type":"application/json","entity":{"count":20}}` {
		t.Fatalf("count: %s", got)
	}
	if got := tr.Call(ctx, "", "", []byte(`{"method":"SUBSCRIBE","resource":"/m"}`)); string(got) != `{"code":"failed","reason":"not supported without a connection"}` {
		t.Fatalf("subscribe by Call: %s", got)
	}
}
