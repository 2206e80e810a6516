package channel

import (
	"context"
	"errors"
	"testing"
)

// TestEndIdentity checks that EndIdentity ends every client of one user
// with 1008 "session ended", deleting their transient resources with the
// usual notifications, and no one else's; the anonymous identity ends
// nobody.
func TestEndIdentity(t *testing.T) {
	tr := newTree(t, nil, Options{})
	ctx := context.Background()
	w := connect(t, tr, "w", "bob@example.com")
	must(t, w, `{"method":"SUBSCRIBE","resource":"/p","msg_id":0}`)
	a1 := connect(t, tr, "a1", "alice@example.com")
	a2 := connect(t, tr, "a2", "alice@example.com")
	anon := connect(t, tr, "n", "")
	must(t, a1, `{"method":"PUT","resource":"/p/a","msg_id":0}`)
	drain(t, w)
	tr.EndIdentity("")
	tr.EndIdentity("carol@example.com")
	tr.EndIdentity("alice@example.com")
	for _, c := range []*Client{a1, a2} {
		_, err := c.Next(ctx, nil)
		var g *Gone
		if !errors.As(err, &g) || g.Code != 1008 || g.Reason != "session ended" {
			t.Errorf("%s: Next: %v", c.id, err)
		}
	}
	if got := drain(t, w); len(got) != 1 || got[0] != `{"notify":"UPDATE","resource":"/p","delete":"a","type":null,"entity":null,"seq":2}` {
		t.Errorf("watcher got %q", got)
	}
	for _, c := range []*Client{w, anon} {
		must(t, c, `{"method":"GET","resource":"/","msg_id":0}`)
	}
}

// TestEndSession checks that EndSession ends the one client named with
// 1008 "session ended", and not the other clients of its user; an
// unknown id is ignored.
func TestEndSession(t *testing.T) {
	tr := newTree(t, nil, Options{})
	ctx := context.Background()
	a1 := connect(t, tr, "a1", "alice@example.com")
	a2 := connect(t, tr, "a2", "alice@example.com")
	tr.EndSession("nobody")
	tr.EndSession("a1")
	_, err := a1.Next(ctx, nil)
	var g *Gone
	if !errors.As(err, &g) || g.Code != 1008 || g.Reason != "session ended" {
		t.Errorf("a1: Next: %v", err)
	}
	must(t, a2, `{"method":"GET","resource":"/","msg_id":0}`)
}
