package tests

import (
	"strconv"
	"testing"
	"time"
)

// TestChannelReplayBurst: a subscriber that drops its connection in the
// middle of a burst of 10,000 notifications and subscribes again with the
// seq of the last one it read gets every other one exactly once, in order,
// before the reply with recovered true
// (docs/channel.md#replay-after-a-reconnect).
func TestChannelReplayBurst(t *testing.T) {
	t.Parallel()
	const burst, before = 10_000, 2_000
	eachChannelMode(t, func(t *testing.T, m mode) {
		cs := startChannel(t, m)
		g := clients(t, cs)
		sub, pub := g.dial("$S"), g.dial("$P")
		r := jsonString("/" + uniq("burst-"))
		sub.call(`{"method":"SUBSCRIBE","resource":` + r + `,"msg_id":1}`)
		notify := func(i int) {
			pub.send(`{"method":"NOTIFY","resource":` + r + `,"data":` + strconv.Itoa(i) + `}`)
		}
		for i := range before + 500 {
			notify(i)
		}
		var last uint64
		for i := range before {
			f, seq := withoutSeq(sub.next())
			if want := `{"notify":"NOTIFY","resource":` + r + `,"data":` + strconv.Itoa(i) + `,"from":` + pub.ID() + `,"seq":N}`; f != want {
				t.Fatalf("frame %d before the drop: %s, want %s", i, f, want)
			}
			last = seq
		}
		sub.drop()
		for i := before + 500; i < burst; i++ {
			notify(i)
		}
		// The burst is applied: its GET is answered after 9,500
		// NOTIFYs, through a fleet's log too, on a machine that may
		// run other suites at once, so the wait is the burst's, not
		// one frame's.
		pub.guard = 4 * time.Minute
		pub.call(`{"method":"GET","resource":"/","msg_id":2}`)
		pub.guard = 0

		again := g.dial("$S2")
		again.send(`{"method":"SUBSCRIBE","resource":` + r + `,"since":` + strconv.FormatUint(last, 10) + `,"msg_id":3}`)
		prev := last
		for i := before; i < burst; i++ {
			f, seq := withoutSeq(again.next())
			if want := `{"notify":"NOTIFY","resource":` + r + `,"data":` + strconv.Itoa(i) + `,"from":` + pub.ID() + `,"seq":N}`; f != want || seq <= prev {
				t.Fatalf("replayed frame %d: %s (seq %d after %d), want %s", i, f, seq, prev, want)
			}
			prev = seq
		}
		if got := anyEpoch(again.next()); got != `{"msg_id":3,"code":"success","recovered":true,"epoch":"E"}` {
			t.Errorf("reply after the replay: %s", got)
		}
		again.quiet()
	})
}
