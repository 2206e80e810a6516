package websocket

import "testing"

// TestFrames checks that frames follows headers however the bytes are
// split: it finds the first close frame's length past payloads of every
// length form, and a 64-bit length with its top bit set.
func TestFrames(t *testing.T) {
	masked := func(op byte, n int) []byte {
		b := []byte{0x80 | op}
		switch {
		case n < 126:
			b = append(b, 0x80|byte(n))
		case n < 1<<16:
			b = append(b, 0x80|126, byte(n>>8), byte(n))
		default:
			b = append(b, 0x80|127, 0, 0, 0, 0, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		}
		b = append(b, 1, 2, 3, 4)
		return append(b, make([]byte, n)...)
	}
	var stream []byte
	stream = append(stream, masked(1, 0)...)
	stream = append(stream, masked(1, 125)...)
	stream = append(stream, masked(2, 300)...)
	stream = append(stream, masked(0x9, 5)...) // a ping
	stream = append(stream, masked(1, 70000)...)
	stream = append(stream, 0x88, 0x01, 9) // an unmasked close of 1 byte
	stream = append(stream, masked(8, 2)...)
	// A message in two frames: text without FIN, then its continuation.
	stream = append(stream, 0x01, 0x80|3, 1, 2, 3, 4, 'a', 'b', 'c')
	stream = append(stream, 0x80, 0x80|2, 1, 2, 3, 4, 'd', 'e')
	for _, step := range []int{1, 2, 3, 7, 512, len(stream)} {
		f := newFrames()
		for i := 0; i < len(stream); i += step {
			f.feed(stream[i:min(i+step, len(stream))])
		}
		if f.closeLen != 1 || f.badLen || f.state != frameStart {
			t.Errorf("step %d: closeLen %d badLen %v state %d", step, f.closeLen, f.badLen, f.state)
		}
		if f.ends != 5 { // the data messages, not the ping or the closes
			t.Errorf("step %d: %d messages ended, want 5", step, f.ends)
		}
	}
	f := newFrames()
	f.feed([]byte{0x81, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 1})
	if !f.badLen || f.closeLen != -1 {
		t.Errorf("top bit: badLen %v closeLen %d", f.badLen, f.closeLen)
	}
	f = newFrames()
	f.feed([]byte{0x81, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	if f.badLen {
		t.Error("a 64-bit length without the top bit taken as bad")
	}
}
