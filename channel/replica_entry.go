package channel

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// The entries of a fleet's log (docs/fleet.md#6-entries-snapshot-trimming-format):
// their fields as one line of JSON, then, for a client's message, a
// newline and the message's bytes as the client sent them. Every node
// decodes every entry, so the line is written and read without
// reflection; encoding/json reads whatever the fast path does not (a
// line written otherwise, an escaped or non-ASCII string), with the same
// result.

// entryVersion is the format of the entries a tree writes and reads.
const entryVersion = 2

// Kinds of entries.
const (
	kindMsg    = "msg"    // a client's message
	kindEnd    = "end"    // a connection ended
	kindDead   = "dead"   // a node was taken for dead
	kindExpire = "expire" // a lease ran out
)

// entry is one proposal of the log.
type entry struct {
	V     int    `json:"v"`
	K     string `json:"k"`
	P     string `json:"p,omitempty"`    // proposal id: who waits for it
	Node  string `json:"node,omitempty"` // the proposing node, or the dead one
	Conn  string `json:"conn,omitempty"` // the connection, "" for a Call
	From  string `json:"from,omitempty"`
	Who   string `json:"who,omitempty"` // identity
	Call  bool   `json:"call,omitempty"`
	ID    string `json:"id,omitempty"` // the fresh id of a POST without one
	At    int64  `json:"at,omitempty"` // unix milliseconds of the proposal
	Path  string `json:"path,omitempty"`
	Lease uint64 `json:"lease,omitempty"`
	Count bool   `json:"count,omitempty"` // a NOTIFY whose proposer waits for sent_count
	Redo  bool   `json:"redo,omitempty"`  // a PUT that only creates (Tree.Rejoin)
	Msg   []byte `json:"-"`
}

// encode returns e's fields as a line of JSON, then its message: the
// line encoding/json writes for e (without HTML escaping).
func (e *entry) encode() []byte {
	b := make([]byte, 0, 160+len(e.P)+len(e.Who)+len(e.Path)+len(e.Msg))
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(e.V), 10)
	b = appendField(b, "k", e.K, true)
	b = appendField(b, "p", e.P, false)
	b = appendField(b, "node", e.Node, false)
	b = appendField(b, "conn", e.Conn, false)
	b = appendField(b, "from", e.From, false)
	b = appendField(b, "who", e.Who, false)
	if e.Call {
		b = append(b, `,"call":true`...)
	}
	b = appendField(b, "id", e.ID, false)
	if e.At != 0 {
		b = strconv.AppendInt(append(b, `,"at":`...), e.At, 10)
	}
	b = appendField(b, "path", e.Path, false)
	if e.Lease != 0 {
		b = strconv.AppendUint(append(b, `,"lease":`...), e.Lease, 10)
	}
	if e.Count {
		b = append(b, `,"count":true`...)
	}
	if e.Redo {
		b = append(b, `,"redo":true`...)
	}
	b = append(b, '}')
	if e.Msg == nil {
		return b
	}
	return append(append(b, '\n'), e.Msg...)
}

// appendField appends `,"key":` and s as a JSON string, unless s is empty
// and not always.
func appendField(b []byte, key, s string, always bool) []byte {
	if s == "" && !always {
		return b
	}
	b = append(append(append(b, `,"`...), key...), `":`...)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return appendJSON(b, s)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// appendJSON appends s as encoding/json writes it, HTML characters
// unescaped.
func appendJSON(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}

// decodeEntry reads an entry written by encode; the message is a slice
// of data.
func decodeEntry(data []byte, e *entry) error {
	head := data
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		head, e.Msg = data[:i], data[i+1:]
	}
	var fast entry
	if decodeHead(head, &fast) {
		fast.Msg = e.Msg
		*e = fast
		return nil
	}
	return json.Unmarshal(head, e)
}

// decodeHead reads the line of JSON that encode writes: an object of the
// entry's keys, without spaces, whose strings are printable ASCII without
// escapes and whose numbers are integers of at most 18 digits. It
// reports false for anything else, leaving it to encoding/json.
func decodeHead(h []byte, e *entry) bool {
	if len(h) < 2 || h[0] != '{' || h[len(h)-1] != '}' {
		return false
	}
	i := 1
	if len(h) == 2 {
		return true
	}
	for {
		key, j, ok := jsonString(h, i)
		if !ok || j >= len(h) || h[j] != ':' {
			return false
		}
		i = j + 1
		if i >= len(h) {
			return false
		}
		switch c := h[i]; {
		case c == '"':
			s, j, ok := jsonString(h, i)
			if !ok || !setString(e, key, s) {
				return false
			}
			i = j
		case c == 't' || c == 'f':
			v := c == 't'
			word := "false"
			if v {
				word = "true"
			}
			if !bytes.HasPrefix(h[i:], []byte(word)) || !setBool(e, key, v) {
				return false
			}
			i += len(word)
		default:
			n, neg, j, ok := jsonInt(h, i)
			if !ok || !setInt(e, key, n, neg) {
				return false
			}
			i = j
		}
		if i >= len(h) {
			return false
		}
		switch h[i] {
		case ',':
			i++
		case '}':
			return i == len(h)-1
		default:
			return false
		}
	}
}

// jsonString reads the string that starts at h[i] (a quote): printable
// ASCII without escapes. It returns the bytes between the quotes and the
// index after the closing one.
func jsonString(h []byte, i int) ([]byte, int, bool) {
	if i >= len(h) || h[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(h); j++ {
		switch c := h[j]; {
		case c == '"':
			return h[i+1 : j], j + 1, true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// jsonInt reads the integer that starts at h[i], as JSON writes one (no
// leading zero), of at most 18 digits. It returns its magnitude, its sign
// and the index after it.
func jsonInt(h []byte, i int) (n uint64, neg bool, end int, ok bool) {
	if i < len(h) && h[i] == '-' {
		neg = true
		i++
	}
	start := i
	for ; i < len(h) && h[i] >= '0' && h[i] <= '9'; i++ {
		n = n*10 + uint64(h[i]-'0')
	}
	digits := i - start
	if digits == 0 || digits > 18 || digits > 1 && h[start] == '0' {
		return 0, false, 0, false
	}
	if i < len(h) && (h[i] == '.' || h[i] == 'e' || h[i] == 'E') {
		return 0, false, 0, false
	}
	return n, neg, i, true
}

// setString sets the string field key of e to s.
func setString(e *entry, key, s []byte) bool {
	switch string(key) {
	case "k":
		switch string(s) { // the kinds without an allocation
		case kindMsg:
			e.K = kindMsg
		case kindEnd:
			e.K = kindEnd
		default:
			e.K = string(s)
		}
	case "p":
		e.P = string(s)
	case "node":
		e.Node = string(s)
	case "conn":
		e.Conn = string(s)
	case "from":
		e.From = string(s)
	case "who":
		e.Who = string(s)
	case "id":
		e.ID = string(s)
	case "path":
		e.Path = string(s)
	default:
		return false
	}
	return true
}

// setBool sets the boolean field key of e to v.
func setBool(e *entry, key []byte, v bool) bool {
	switch string(key) {
	case "call":
		e.Call = v
	case "count":
		e.Count = v
	case "redo":
		e.Redo = v
	default:
		return false
	}
	return true
}

// setInt sets the integer field key of e to n, negative when neg.
func setInt(e *entry, key []byte, n uint64, neg bool) bool {
	v := int64(n) // n has at most 18 digits
	if neg {
		v = -v
	}
	switch string(key) {
	case "v":
		e.V = int(v)
	case "at":
		e.At = v
	case "lease":
		if neg {
			return false
		}
		e.Lease = n
	default:
		return false
	}
	return true
}
