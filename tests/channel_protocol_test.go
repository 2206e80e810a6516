package tests

import (
	"bufio"
	be "encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// Close codes of RFC 6455 §7.4.1 the protocol tests expect.
const (
	closeNormal      = 1000
	closeProtocol    = 1002
	closeInvalidData = 1007
)

// rawWS is a WebSocket connection to /channel spoken frame by frame, to
// send what a well-behaved client library never would.
type rawWS struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

// dialRawWS opens /channel over TCP and completes the handshake.
func dialRawWS(t *testing.T, cs *chanServer) *rawWS {
	t.Helper()
	conn, err := net.Dial("tcp", cs.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(conn, handshake(cs.Addr, "")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 101 ") {
		t.Fatalf("handshake: %q %v", status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		if line == "\r\n" {
			break
		}
	}
	return &rawWS{t: t, conn: conn, br: br}
}

// frame returns a masked frame of opcode op (FIN set) with payload, its
// length written in the shortest form.
func frame(op byte, payload []byte) []byte {
	b := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 1<<16:
		b = append(b, 0x80|126, byte(n>>8), byte(n))
	default:
		b = append(b, 0x80|127)
		b = be.BigEndian.AppendUint64(b, uint64(n))
	}
	key := []byte{0x12, 0x34, 0x56, 0x78}
	b = append(b, key...)
	for i, c := range payload {
		b = append(b, c^key[i%4])
	}
	return b
}

// write sends raw bytes.
func (w *rawWS) write(b []byte) {
	w.t.Helper()
	if _, err := w.conn.Write(b); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

// next reads the server's next frame: its opcode and payload.
func (w *rawWS) next() (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(w.br, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(w.br, l[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(be.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(w.br, l[:]); err != nil {
			return 0, nil, err
		}
		n = be.BigEndian.Uint64(l[:])
	}
	if h[1]&0x80 != 0 || n > 1<<20 {
		w.t.Fatalf("a server frame masked or of %d bytes", n)
	}
	p := make([]byte, n)
	_, err := io.ReadFull(w.br, p)
	return h[0] & 0x0f, p, err
}

// text reads the next text frame.
func (w *rawWS) text() string {
	w.t.Helper()
	op, p, err := w.next()
	if err != nil || op != 1 {
		w.t.Fatalf("want a text frame, got opcode %d %q %v", op, p, err)
	}
	return string(p)
}

// closeCode reads frames up to the server's close frame and returns its
// code (0 for an empty one); it fails the test when the connection ends
// without one.
func (w *rawWS) closeCode() int {
	w.t.Helper()
	for {
		op, p, err := w.next()
		if err != nil {
			w.t.Fatalf("no close frame: %v", err)
		}
		if op != 8 {
			continue
		}
		if len(p) < 2 {
			return 0
		}
		return int(be.BigEndian.Uint16(p))
	}
}

// TestChannelProtocolErrors: frames that break RFC 6455 fail the
// connection at once with the close code docs/channel.md#limits-and-faults
// gives, and the server serves the next connection.
func TestChannelProtocolErrors(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		key := []byte{0, 0, 0, 0}
		for _, c := range []struct {
			name  string
			bytes []byte
			code  int
		}{
			// A 64-bit length with its most significant bit set.
			{"length top bit", append([]byte{0x81, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 5}, key...), closeProtocol},
			{"length all ones", append([]byte{0x81, 0x80 | 127, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, key...), closeProtocol},
			// Far past the read limit, the top bit clear.
			{"length far past the limit", append([]byte{0x81, 0x80 | 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, key...), closeTooBig},
			{"text not UTF-8", frame(1, []byte(`{"method":"GET","resource":"/x","msg_id":1,"a":"`+"\xff\xfe"+`"}`)), closeInvalidData},
			{"text UTF-8 cut in two frames", append([]byte{0x01, 0x80 | 2, 0, 0, 0, 0, '"', 0xc3}, frame(0, []byte{0x28, '"'})...), closeInvalidData},
			{"close of one byte", frame(8, []byte{3}), closeProtocol},
			{"close with a reason not UTF-8", frame(8, []byte{0x03, 0xe8, 0xff}), closeProtocol},
			{"close 1000", frame(8, []byte{0x03, 0xe8}), closeNormal},
			{"close empty", frame(8, nil), 0},
		} {
			w := dialRawWS(t, cs)
			w.write(c.bytes)
			if got := w.closeCode(); got != c.code {
				t.Errorf("%s: close %d, want %d", c.name, got, c.code)
			}
		}
		// Text split across frames that is valid UTF-8 as a whole passes.
		w := dialRawWS(t, cs)
		msg := []byte(`{"method":"GET","resource":"/é","msg_id":"é"}`)
		i := strings.Index(string(msg), "é") + 1 // inside the rune
		w.write(append([]byte{0x01, 0x80 | byte(i), 0, 0, 0, 0}, msg[:i]...))
		w.write(frame(0, msg[i:]))
		if got := w.text(); got != `{"msg_id":"é","code":"failed","reason":"not found"}` {
			t.Errorf("a message split inside a rune: %s", got)
		}
	})
}

// TestChannelMsgIDAlwaysEchoed: a message whose msg_id can be read gets
// its failed reply with it, whatever else is wrong: nested deeper than
// the JSON decoder goes, cut short, fields of the wrong type. A msg_id
// that is an array or an object fails with invalid msg_id, without one.
func TestChannelMsgIDAlwaysEchoed(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		cs := sharedChannel(t, m)
		a := clients(t, cs).dial("$A")
		deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
		for _, c := range []struct{ frame, want string }{
			{`{"method":"PUT","msg_id":11,"resource":"/p","entity":` + deep + `}`, `{"msg_id":11,"code":"failed","reason":"invalid JSON"}`},
			{`{"method":"PUT","resource":"/p","entity":` + deep + `,"msg_id":"after"}`, `{"msg_id":"after","code":"failed","reason":"invalid JSON"}`},
			{`{"msg_id":12,"method":"PUT","resource":"/p","entity":{"a":}}`, `{"msg_id":12,"code":"failed","reason":"invalid JSON"}`},
			{`{"msg_id":13,"method":"PUT","resource":"/p","entity":[1,2`, `{"msg_id":13,"code":"failed","reason":"invalid JSON"}`},
			{`{"msg_id":14,"method":"GET","resource":5}`, `{"msg_id":14,"code":"failed","reason":"invalid field"}`},
			{`{"msg_id":[1],"method":"GET","resource":"/p"}`, `{"code":"failed","reason":"invalid msg_id"}`},
			{`{"msg_id":{"a":1},"method":"GET","resource":"/p"}`, `{"code":"failed","reason":"invalid msg_id"}`},
			{`{"msg_id":[1],"method":"PUT","resource":"/p","entity":` + deep + `}`, `{"code":"failed","reason":"invalid msg_id"}`},
		} {
			a.send(c.frame)
			a.expect(c.want)
		}
		a.quiet()
	})
}
