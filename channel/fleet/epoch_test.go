package fleet

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channel/fleet/natstest"
)

// epochEverywhere: every node of a fleet has the same epoch, its log
// stream's creation time in hex nanoseconds, in every SUBSCRIBE reply; a
// node started later, and one started again, has it too, and a since
// seen on one node resumes on another with it; once the stream is
// deleted and created anew, the fleet has another epoch, and a since with
// the old one is not recovered.
func epochEverywhere(t *testing.T, cl *natstest.Cluster) {
	ns := fleet(t, cl, 2, Config{})
	info, err := ns[0].f.stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%x", info.Created.UnixNano())
	if !channel.ValidEpoch(want) {
		t.Fatalf("epoch %q from the stream's creation time %v", want, info.Created)
	}
	a := connect(t, ns[0], "")
	r := a.do(`{"method":"SUBSCRIBE","resource":"/ep"}`)
	w := connect(t, ns[1], "")
	w.do(`{"method":"PUT","resource":"/ep","entity":1,"persistent":true}`)
	a.expect(1)
	since := a.seqs()[0]
	a.c.Disconnect()
	w.do(`{"method":"PUT","resource":"/ep","entity":2,"persistent":true}`)

	// A node started later, and the first node started again.
	ns[0].stop()
	late := startNode(t, cl, Config{Name: fleetName(t)})
	again := startNode(t, cl, Config{Name: fleetName(t)})
	for i, n := range []*node{ns[0], ns[1], late, again} {
		if n.f.Epoch() != want || n.tree.Epoch() != want {
			t.Errorf("node %d: epoch %q, its tree's %q, want %q", i, n.f.Epoch(), n.tree.Epoch(), want)
		}
	}
	if r["epoch"] != want {
		t.Errorf("SUBSCRIBE on the first node: %v, want epoch %q", r, want)
	}
	for i, n := range []*node{ns[1], late, again} {
		c := connect(t, n, "")
		r := c.do(fmt.Sprintf(`{"method":"SUBSCRIBE","resource":"/ep","since":%d,"epoch":%q}`, since, want))
		if r["recovered"] != true || r["epoch"] != want || len(c.notes) != 1 || c.notes[0]["entity"] != float64(2) {
			t.Errorf("node %d: SUBSCRIBE since %d: %v, replayed %v", i, since, r, c.notes)
		}
		c.c.Disconnect()
	}

	// The stream deleted and created anew: another history.
	for _, n := range []*node{ns[1], late, again} {
		n.stop()
	}
	nc, err := nats.Connect(cl.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(t.Context(), info.Config.Name); err != nil {
		t.Fatal(err)
	}
	fresh := startNode(t, cl, Config{Name: fleetName(t)})
	if e := fresh.f.Epoch(); e == want || !channel.ValidEpoch(e) {
		t.Fatalf("epoch of a new stream %q, the old one's %q", e, want)
	}
	c := connect(t, fresh, "")
	c.do(`{"method":"PUT","resource":"/ep","entity":3,"persistent":true}`)
	c.do(`{"method":"PUT","resource":"/ep","entity":4,"persistent":true}`)
	r = c.do(fmt.Sprintf(`{"method":"SUBSCRIBE","resource":"/ep","since":1,"epoch":%q}`, want))
	if r["recovered"] != false || r["epoch"] != fresh.f.Epoch() || len(c.notes) != 0 {
		t.Errorf("SUBSCRIBE with the old epoch: %v, replayed %v", r, c.notes)
	}
}
