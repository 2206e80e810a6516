package client_test

import (
	"fmt"
	"testing"
)

// TestResubscribeRefusedForNow: a node that cannot serve a SUBSCRIBE now
// (a fleet node without its log answers "unavailable", a server shutting
// down "closed") does not end the subscription: the client moves on to a
// new connection, which subscribes again with since, and the events go
// on where they were (issue 36: survivors of a node's death refused some
// of the reconnect storm's resubscriptions, and the subscriptions ended).
// A refusal for good (forbidden) still ends it.
func TestResubscribeRefusedForNow(t *testing.T) {
	srv := newScripted(t)
	_, sub, p := subscribed(t, srv, "/r", `,"epoch":"e1"`)
	p.send(note("/r", 7))
	wantSeq(t, next(t, sub), 7)
	p.close()

	for _, reason := range []string{"unavailable", "closed", "disconnected"} {
		p = srv.accept()
		id := p.subscribe("/r", "7", "e1")
		p.send(fmt.Sprintf(`{"msg_id":%d,"code":"failed","reason":%q}`, id, reason))
		// The client gives this connection up: the next one comes.
	}
	p = srv.accept()
	id := p.subscribe("/r", "7", "e1")
	p.send(fmt.Sprintf(`{"msg_id":%d,"code":"success","recovered":true,"epoch":"e1"}`, id), note("/r", 8))
	wantResync(t, next(t, sub), true)
	wantSeq(t, next(t, sub), 8)
	p.close()

	p = srv.accept()
	id = p.subscribe("/r", "8", "e1")
	p.send(fmt.Sprintf(`{"msg_id":%d,"code":"failed","reason":"forbidden"}`, id))
	if ev, ok := <-sub.Events(); ok {
		t.Fatalf("%+v after a refusal for good, want the end of the events", ev)
	}
	if sub.Err() == nil {
		t.Fatal("the subscription refused with forbidden has no error")
	}
}
