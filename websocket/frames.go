package websocket

// frames follows the frame headers in the bytes read from the peer, to
// learn what the library does not tell when it fails a read (RFC 6455
// §5.2): whether a 64-bit payload length had its most significant bit
// set (the library reports it as a read past the limit, without a close
// frame), and the payload length of the first close frame (the library
// reports a 1-byte payload as no status at all). It skips payloads by
// counting; it holds a few bytes per connection and is used by the one
// reader only.
type frames struct {
	state   frameState
	masked  bool
	isClose bool
	badLen  bool // a 64-bit length with its top bit set was seen
	fin     bool // the frame being read is the last of a data message
	// (the flags side by side: a connection holds frames in its conn)
	need     int    // bytes left in the extended length or the mask key
	n        uint64 // the length being read, then payload bytes left
	closeLen int    // payload length of the first close frame; -1 before
	ends     uint64 // the data messages whose last frame was read whole
}

// frameState is where frames is in a frame.
type frameState uint8

const (
	frameStart   frameState = iota // the first header byte
	frameLength                    // the second: mask bit and 7-bit length
	frameExtLen                    // the 16- or 64-bit length
	frameMaskKey                   // the masking key
	framePayload                   // the payload
)

// opClose is the opcode of a close frame.
const opClose = 0x8

func newFrames() frames { return frames{closeLen: -1} }

// feed follows p, the next bytes read.
func (f *frames) feed(p []byte) {
	for len(p) > 0 {
		switch f.state {
		case frameStart:
			f.isClose = p[0]&0x0f == opClose
			f.fin = p[0]&0x80 != 0 && p[0]&0x08 == 0 // FIN, not a control frame
			f.state = frameLength
			p = p[1:]
		case frameLength:
			f.masked = p[0]&0x80 != 0
			f.n = uint64(p[0] & 0x7f)
			p = p[1:]
			switch f.n {
			case 126:
				f.state, f.need, f.n = frameExtLen, 2, 0
			case 127:
				f.state, f.need, f.n = frameExtLen, 8, 0
			default:
				f.afterLength()
			}
		case frameExtLen:
			if f.need == 8 && p[0]&0x80 != 0 {
				f.badLen = true
			}
			f.n = f.n<<8 | uint64(p[0])
			f.need--
			p = p[1:]
			if f.need == 0 {
				f.afterLength()
			}
		case frameMaskKey:
			k := min(f.need, len(p))
			f.need -= k
			p = p[k:]
			if f.need == 0 {
				f.afterMask()
			}
		case framePayload:
			k := uint64(len(p))
			if k > f.n {
				k = f.n
			}
			f.n -= k
			p = p[k:]
			if f.n == 0 {
				f.frameEnd()
			}
		}
	}
}

// afterLength moves on once the payload length is known.
func (f *frames) afterLength() {
	if f.isClose && f.closeLen < 0 {
		f.closeLen = int(min(f.n, 1<<20))
	}
	if f.masked {
		f.state, f.need = frameMaskKey, 4
		return
	}
	f.afterMask()
}

// afterMask moves on to the payload, or the next frame when it has none.
func (f *frames) afterMask() {
	if f.n == 0 {
		f.frameEnd()
		return
	}
	f.state = framePayload
}

// frameEnd moves on to the next frame once a frame was read whole.
func (f *frames) frameEnd() {
	if f.fin {
		f.ends++
	}
	f.state = frameStart
}
