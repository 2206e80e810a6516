package channel

import (
	"context"
	"regexp"
	"testing"
)

// epochStore is a memStore with an epoch (an Epocher).
type epochStore struct {
	*memStore
	epoch string
}

func (s epochStore) Epoch() string { return s.epoch }

// TestSubscribeEpoch checks the epoch in SUBSCRIBE's reply
// (docs/channel.md#replay-after-a-reconnect): after the other fields of
// every successful reply; a since that comes with another epoch, or that
// is beyond the tree's seq, is not recovered and replays nothing; the
// epoch of this tree, or none, replays; an epoch that is not a string is
// an invalid field, and one without since is ignored.
func TestSubscribeEpoch(t *testing.T) {
	tr := newTree(t, nil, Options{Epoch: "3f9a0c1d2e4b5a69"})
	pub, sub := connect(t, tr, "p", ""), connect(t, tr, "s", "")
	// seq 1..3 in the history: a NOTIFY that reaches nobody fails with
	// no subscriber, but takes its seq and enters the history.
	for _, e := range []string{"1", "2", "3"} {
		if got := ex(t, pub, `{"method":"NOTIFY","resource":"/r","data":`+e+`,"msg_id":0}`); got != `{"msg_id":0,"code":"failed","reason":"no subscriber"}` {
			t.Fatalf("NOTIFY %s: %s", e, got)
		}
	}
	cases := []struct {
		name, msg, want string
	}{
		{"without since", `{"method":"SUBSCRIBE","resource":"/a","msg_id":1}`,
			`{"msg_id":1,"code":"success","epoch":"3f9a0c1d2e4b5a69"}`},
		{"a string msg_id", `{"method":"SUBSCRIBE","resource":"/a","msg_id":"x"}`,
			`{"msg_id":"x","code":"success","epoch":"3f9a0c1d2e4b5a69"}`},
		{"since, this epoch", `{"method":"SUBSCRIBE","resource":"/r","since":1,"epoch":"3f9a0c1d2e4b5a69","msg_id":2}`,
			`{"notify":"NOTIFY","resource":"/r","data":2,"from":"p","seq":2}` + "\n" +
				`{"notify":"NOTIFY","resource":"/r","data":3,"from":"p","seq":3}` + "\n" +
				`{"msg_id":2,"code":"success","recovered":true,"epoch":"3f9a0c1d2e4b5a69"}`},
		{"since, no epoch", `{"method":"SUBSCRIBE","resource":"/r","since":2,"msg_id":3}`,
			`{"notify":"NOTIFY","resource":"/r","data":3,"from":"p","seq":3}` + "\n" +
				`{"msg_id":3,"code":"success","recovered":true,"epoch":"3f9a0c1d2e4b5a69"}`},
		{"since, another epoch", `{"method":"SUBSCRIBE","resource":"/r","since":1,"epoch":"3f9a0c1d2e4b5a6a","msg_id":4}`,
			`{"msg_id":4,"code":"success","recovered":false,"epoch":"3f9a0c1d2e4b5a69"}`},
		{"since, an epoch no tree has", `{"method":"SUBSCRIBE","resource":"/r","since":1,"epoch":"Not An Epoch!","msg_id":5}`,
			`{"msg_id":5,"code":"success","recovered":false,"epoch":"3f9a0c1d2e4b5a69"}`},
		{"since beyond the seq", `{"method":"SUBSCRIBE","resource":"/r","since":4,"epoch":"3f9a0c1d2e4b5a69","msg_id":6}`,
			`{"msg_id":6,"code":"success","recovered":false,"epoch":"3f9a0c1d2e4b5a69"}`},
		{"since beyond the seq, bare", `{"method":"SUBSCRIBE","resource":"/r","since":99,"msg_id":7}`,
			`{"msg_id":7,"code":"success","recovered":false,"epoch":"3f9a0c1d2e4b5a69"}`},
		{"epoch without since", `{"method":"SUBSCRIBE","resource":"/b","epoch":"other","msg_id":8}`,
			`{"msg_id":8,"code":"success","epoch":"3f9a0c1d2e4b5a69"}`},
		{"epoch null", `{"method":"SUBSCRIBE","resource":"/r","since":2,"epoch":null,"msg_id":9}`,
			`{"notify":"NOTIFY","resource":"/r","data":3,"from":"p","seq":3}` + "\n" +
				`{"msg_id":9,"code":"success","recovered":true,"epoch":"3f9a0c1d2e4b5a69"}`},
		{"epoch a number", `{"method":"SUBSCRIBE","resource":"/r","since":1,"epoch":5,"msg_id":10}`,
			`{"msg_id":10,"code":"failed","reason":"invalid field"}`},
		{"epoch an array", `{"method":"SUBSCRIBE","resource":"/r","epoch":["e"],"msg_id":11}`,
			`{"msg_id":11,"code":"failed","reason":"invalid field"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ex(t, sub, tc.msg); got != tc.want {
				t.Errorf("%s:\n%s\nwant\n%s", tc.msg, got, tc.want)
			}
		})
	}
	if got := tr.Epoch(); got != "3f9a0c1d2e4b5a69" {
		t.Errorf("Epoch() = %q", got)
	}
}

// TestTreeEpochSource checks where a tree's epoch comes from: its
// store's (an Epocher) before Options.Epoch; a fresh random one of 16
// hex digits for each tree that has neither; an invalid one refused.
func TestTreeEpochSource(t *testing.T) {
	ctx := context.Background()
	if tr := newTree(t, epochStore{newMemStore(), "fromstore"}, Options{Epoch: "fromoptions"}); tr.Epoch() != "fromstore" {
		t.Errorf("with a store's epoch: %q", tr.Epoch())
	}
	if tr := newTree(t, newMemStore(), Options{Epoch: "fromoptions"}); tr.Epoch() != "fromoptions" {
		t.Errorf("a store without epoch, Options.Epoch: %q", tr.Epoch())
	}
	hex16 := regexp.MustCompile(`^[0-9a-f]{16}$`)
	a, err := New(ctx, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := New(ctx, newMemStore(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !hex16.MatchString(a.Epoch()) || !hex16.MatchString(b.Epoch()) || a.Epoch() == b.Epoch() {
		t.Errorf("drawn epochs %q and %q: want two different ones of 16 hex digits", a.Epoch(), b.Epoch())
	}
	for _, bad := range []string{"UPPER", "a-b", "a:b", "0123456789abcdef0123456789abcdefg"} {
		if _, err := New(ctx, epochStore{newMemStore(), bad}, Options{}); err == nil {
			t.Errorf("a store's epoch %q accepted", bad)
		}
		if _, err := New(ctx, nil, Options{Epoch: bad}); err == nil {
			t.Errorf("Options.Epoch %q accepted", bad)
		}
	}
	for _, ok := range []string{"0", "z", "0123456789abcdef0123456789abcdef"} {
		if !ValidEpoch(ok) {
			t.Errorf("ValidEpoch(%q) false", ok)
		}
	}
	if ValidEpoch("") {
		t.Error(`ValidEpoch("") true`)
	}
}
