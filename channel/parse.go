package channel

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// The fast path of parseMessage: every message is parsed by the node that
// receives it and, in a fleet, by every node that applies it, so the
// shapes clients send are read without reflection. Anything else (an
// escaped or non-ASCII key, null, a key that differs from a field's only
// in case, a number out of range, deep nesting) is left to
// encoding/json, whose result the fast path gives wherever it answers
// (FuzzParseFast).

// maxFastDepth is the deepest nesting of a value the fast path reads.
const maxFastDepth = 64

// fastKeys are the fields of message, by their JSON names.
var fastKeys = []string{"method", "resource", "msg_id", "type", "entity", "data", "persistent", "id",
	"partial", "since", "epoch", "expires", "stream", "rules", "group", "owner", "offer"}

// parseFast decodes data, a JSON object of valid UTF-8, into m (zero) as
// json.Unmarshal does. It reports false when it leaves data to
// json.Unmarshal; m then holds what it had read.
func parseFast(data []byte, m *message) bool {
	s := &lexer{b: data}
	s.space()
	if !s.eat('{') {
		return false
	}
	s.space()
	if s.eat('}') {
		s.space()
		return s.i == len(s.b)
	}
	for {
		key, ok := s.plainString()
		if !ok {
			return false
		}
		s.space()
		if !s.eat(':') {
			return false
		}
		s.space()
		if !s.field(m, key) {
			return false
		}
		s.space()
		switch {
		case s.eat(','):
			s.space()
		case s.eat('}'):
			s.space()
			return s.i == len(s.b)
		default:
			return false
		}
	}
}

// lexer reads the tokens of one message.
type lexer struct {
	b []byte
	i int
}

func (s *lexer) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// eat consumes c when it is next.
func (s *lexer) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plainString reads a string without escapes or control characters and
// returns its bytes between the quotes.
func (s *lexer) plainString() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			return v, true
		case c < 0x20 || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// field reads the value of key into m.
func (s *lexer) field(m *message, key []byte) bool {
	switch string(key) {
	case "method":
		v, ok := s.plainString()
		if ok {
			m.Method = methodName(v)
		}
		return ok
	case "resource":
		return s.stringTo(&m.Resource)
	case "type":
		return s.stringPtr(&m.Type)
	case "id":
		return s.stringPtr(&m.ID)
	case "epoch":
		return s.stringPtr(&m.Epoch)
	case "rules":
		return s.stringPtr(&m.Rules)
	case "owner":
		return s.stringPtr(&m.Owner)
	case "msg_id":
		return s.raw(&m.MsgID)
	case "entity":
		return s.raw(&m.Entity)
	case "data":
		// Not copied: a NOTIFY's data is read only while the message
		// is executed (it is copied into the notification).
		return s.rawShared(&m.Data)
	case "group":
		return s.raw(&m.Group)
	case "persistent":
		return s.boolTo(&m.Persistent)
	case "partial":
		return s.boolTo(&m.Partial)
	case "stream":
		return s.boolTo(&m.Stream)
	case "offer":
		return s.boolTo(&m.Offer)
	case "since":
		tok, ok := s.number()
		if !ok {
			return false
		}
		n, err := strconv.ParseUint(string(tok), 10, 64)
		if err != nil {
			return false
		}
		m.Since = &n
		return true
	case "expires":
		tok, ok := s.number()
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(string(tok), 64)
		if err != nil {
			return false
		}
		m.Expires = &f
		return true
	}
	// json.Unmarshal matches keys without regard to case (and to some
	// non-ASCII letters that fold to ASCII ones).
	for _, c := range key {
		if c >= 0x80 {
			return false
		}
	}
	for _, k := range fastKeys {
		if strings.EqualFold(string(key), k) {
			return false
		}
	}
	var skip json.RawMessage
	return s.raw(&skip)
}

// methodName returns v as a string, one of the package's constants when
// it is a method name, so that the method of a message costs no
// allocation.
func methodName(v []byte) string {
	switch string(v) {
	case "GET":
		return "GET"
	case "PUT":
		return "PUT"
	case "POST":
		return "POST"
	case "DELETE":
		return "DELETE"
	case "SUBSCRIBE":
		return "SUBSCRIBE"
	case "UNSUBSCRIBE":
		return "UNSUBSCRIBE"
	case "NOTIFY":
		return "NOTIFY"
	case "RULES":
		return "RULES"
	}
	return string(v)
}

func (s *lexer) stringTo(dst *string) bool {
	v, ok := s.plainString()
	if ok {
		*dst = string(v)
	}
	return ok
}

func (s *lexer) stringPtr(dst **string) bool {
	v, ok := s.plainString()
	if ok {
		str := string(v)
		*dst = &str
	}
	return ok
}

func (s *lexer) boolTo(dst *bool) bool {
	for _, w := range [...]string{"true", "false"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(w)) {
			s.i += len(w)
			*dst = w == "true"
			return true
		}
	}
	return false
}

// number reads a JSON number.
func (s *lexer) number() ([]byte, bool) {
	start := s.i
	for s.i < len(s.b) && strings.IndexByte("-+.0123456789eE", s.b[s.i]) >= 0 {
		s.i++
	}
	tok := s.b[start:s.i]
	return tok, len(tok) > 0 && json.Valid(tok)
}

// raw reads any JSON value into dst, a copy of its bytes as sent.
func (s *lexer) raw(dst *json.RawMessage) bool {
	if !s.rawShared(dst) {
		return false
	}
	*dst = bytes.Clone(*dst)
	return true
}

// rawShared reads any JSON value into dst without copying it: dst shares
// the message's bytes, so it may only be read while the message is
// executed.
func (s *lexer) rawShared(dst *json.RawMessage) bool {
	start := s.i
	if !s.skip() {
		return false
	}
	v := s.b[start:s.i]
	if !json.Valid(v) {
		return false
	}
	*dst = v
	return true
}

// skip moves past one value, without checking it beyond its extent.
func (s *lexer) skip() bool {
	depth := 0
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			for s.i < len(s.b) && s.b[s.i] != '"' {
				if s.b[s.i] == '\\' {
					s.i++
				}
				s.i++
			}
			if s.i >= len(s.b) {
				return false
			}
			s.i++
		case c == '{' || c == '[':
			if depth++; depth > maxFastDepth {
				return false
			}
			s.i++
			continue
		case c == '}' || c == ']':
			if depth == 0 {
				return true // the end of the object holding the value
			}
			depth--
			s.i++
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return true
		default:
			s.i++
			continue
		}
		if depth == 0 {
			return true
		}
	}
	return depth == 0
}
