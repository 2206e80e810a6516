package tests

import (
	be "encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestChannelSlowConsumerEnds: a subscriber that stops reading its socket
// is let go by the tree once its queue is full (a NOTIFY's sent_count goes
// from 2 to 1), and the server ends its connection at the socket: once the
// client reads again it gets the notifications written before, the close
// frame 1008 "slow consumer" (docs/channel.md#limits-and-faults) and, after
// its own close frame, the end of the TCP connection, all within the hang
// guard. TestChannelSlowConsumer also accepts a connection dropped without
// a close frame; this one does not (issue 27, item 0).
func TestChannelSlowConsumerEnds(t *testing.T) {
	t.Parallel()
	eachChannelMode(t, func(t *testing.T, m mode) {
		// A small queue, so that the tree lets the client go a few
		// NOTIFYs after its socket is full, well within the write timeout
		// (10 s) of the frames waiting for it: a write that times out
		// ends the connection without a close frame, which is not what
		// this test is about.
		cs := startChannel(t, m, "-channel-queue-bytes", "262144")
		g := clients(t, cs)
		p := jsonString("/" + uniq("stall-"))
		reader := g.dial("$R")
		reader.call(`{"method":"SUBSCRIBE","resource":` + p + `,"msg_id":1}`)
		slow := dialRawWS(t, cs)
		slow.write(frame(1, []byte(`{"method":"SUBSCRIBE","resource":`+p+`,"msg_id":1}`)))
		// Its success is what matters here, not the reply's other fields.
		if got := slow.text(); !strings.HasPrefix(got, `{"msg_id":1,"code":"success"`) {
			t.Fatalf("the slow client's SUBSCRIBE: %s", got)
		}
		// From here on the slow client reads nothing until the tree has
		// let it go.
		flooder := g.dial("$F")
		data := repeat(60000) // under the read limit with the rest of the message
		const most = 3000     // about 180 MB: far more than any queue and socket buffers hold
		for i := 1; ; i++ {
			if i > most {
				t.Fatalf("the slow consumer still counted after %d NOTIFYs of %d bytes", most, len(data))
			}
			reply := flooder.call(`{"method":"NOTIFY","resource":` + p + `,"data":` + data + `,"msg_id":` + strconv.Itoa(i) + `}`)
			reader.next()
			if reply == `{"msg_id":`+strconv.Itoa(i)+`,"code":"success","sent_count":1}` {
				t.Logf("the slow consumer was let go after %d NOTIFYs", i)
				break
			}
			if reply != `{"msg_id":`+strconv.Itoa(i)+`,"code":"success","sent_count":2}` {
				t.Fatalf("NOTIFY %d: %s", i, describe(reply))
			}
		}

		// The slow client reads again.
		_ = slow.conn.SetDeadline(time.Now().Add(wait))
		frames := 0
		for {
			op, payload, err := slow.next()
			if err != nil {
				t.Fatalf("after %d notifications, no close frame: %v", frames, err)
			}
			if op == 1 {
				frames++
				continue
			}
			if op == 9 {
				// A ping: the server pings a peer that sent nothing for
				// -channel-ping (25 s), which a flood on a loaded machine
				// outlasts.
				continue
			}
			if op != 8 {
				t.Fatalf("after %d notifications, a frame of opcode %d", frames, op)
			}
			code, reason := 0, ""
			if len(payload) >= 2 {
				code, reason = int(be.BigEndian.Uint16(payload)), string(payload[2:])
			}
			if code != closePolicy || reason != "slow consumer" {
				t.Fatalf("after %d notifications, close %d %q, want %d \"slow consumer\"", frames, code, reason, closePolicy)
			}
			break
		}
		t.Logf("the slow consumer read %d notifications, then its close frame", frames)
		// It answers the close frame; the server then ends the connection.
		slow.write(frame(8, be.BigEndian.AppendUint16(nil, closePolicy)))
		if n, err := io.Copy(io.Discard, slow.br); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the connection stays open after the close frames")
			}
		} else if n != 0 {
			t.Errorf("%d bytes after the close frame", n)
		}

		// The others go on.
		flooder.send(`{"method":"NOTIFY","resource":` + p + `,"data":"after","msg_id":"last"}`)
		flooder.expect(`{"msg_id":"last","code":"success","sent_count":1}`)
		reader.expect(`{"notify":"NOTIFY","resource":` + p + `,"data":"after","from":$F,"seq":N}`)
		reader.quiet()
		flooder.quiet()
	})
}
