package doors

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/core"
)

// message is a message for the tree, built field by field so that the
// entity's bytes (and their field order) pass through unchanged.
type message struct {
	b []byte
}

// newMessage starts a message of method on resource with msg_id id.
func newMessage(method, resource string, id int) *message {
	m := &message{b: make([]byte, 0, 64+len(resource))}
	m.b = append(m.b, `{"method":`...)
	m.b = channel.AppendString(m.b, method)
	m.b = append(m.b, `,"resource":`...)
	m.b = channel.AppendString(m.b, resource)
	m.b = append(m.b, `,"msg_id":`...)
	m.b = strconv.AppendInt(m.b, int64(id), 10)
	return m
}

// raw adds a field whose value is JSON already.
func (m *message) raw(name string, v []byte) *message {
	m.b = append(m.b, ',')
	m.b = channel.AppendString(m.b, name)
	m.b = append(m.b, ':')
	m.b = append(m.b, v...)
	return m
}

// uint adds a field whose value is n.
func (m *message) uint(name string, n uint64) *message {
	return m.raw(name, strconv.AppendUint(nil, n, 10))
}

// bytes returns the message.
func (m *message) bytes() []byte { return append(m.b, '}') }

// field is one field of a JSON object, its value as it was written.
type field struct {
	name  string
	value json.RawMessage
}

// reply is a reply of the tree.
type reply struct {
	code   string // "success" or "failed"
	reason string
	fields []field // every field but msg_id and code, in order
}

// errBadReply is a reply the door cannot read: the tree broke its
// contract.
var errBadReply = errors.New("doors: the tree's reply is not a JSON object")

// parseReply reads a reply, keeping the order and bytes of its fields.
func parseReply(data []byte) (*reply, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, errBadReply
	}
	r := &reply{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errBadReply
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errBadReply
		}
		switch name {
		case "msg_id":
		case "code":
			_ = json.Unmarshal(v, &r.code)
		default:
			if name == "reason" {
				_ = json.Unmarshal(v, &r.reason)
			}
			r.fields = append(r.fields, field{name, v})
		}
	}
	return r, nil
}

// get returns the value of the field name, nil when absent.
func (r *reply) get(name string) json.RawMessage {
	for _, f := range r.fields {
		if f.name == name {
			return f.value
		}
	}
	return nil
}

// object returns the reply's fields but msg_id and code as a JSON object.
func (r *reply) object() []byte {
	b := []byte{'{'}
	for i, f := range r.fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = channel.AppendString(b, f.name)
		b = append(b, ':')
		b = append(b, f.value...)
	}
	return append(b, '}')
}

// Status errors of the failure reasons of the tree (docs/channel.md#the-websocket-door) that have
// their own status; any other reason answers 400 with the reason in title
// case.
var failures = map[string]core.StatusError{
	"not found":        core.Status(http.StatusNotFound, "Not Found"),
	"forbidden":        core.Status(http.StatusForbidden, "Forbidden"),
	"invalid resource": core.Status(http.StatusBadRequest, "Invalid Resource"),
	"exists":           core.Status(http.StatusConflict, "Exists"),
	"invalid JSON":     core.ErrInvalidJSON,
	"invalid entity":   core.Status(http.StatusBadRequest, "Invalid Entity"),
	"unavailable":      core.Status(http.StatusServiceUnavailable, "Service Unavailable"),
}

// failure returns the status error of a failed reply's reason. The reason
// is one of the tree's fixed phrases; core.Status replaces anything a
// status line cannot carry by the standard phrase.
func failure(reason string) core.StatusError {
	if se, ok := failures[reason]; ok {
		return se
	}
	if reason == "" {
		return core.Status(http.StatusBadRequest, "")
	}
	return core.Status(http.StatusBadRequest, titleCase(reason))
}

// titleCase upper-cases the first letter of every word of s.
func titleCase(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		if c := w[0]; c >= 'a' && c <= 'z' {
			words[i] = string(c-'a'+'A') + w[1:]
		}
	}
	return strings.Join(words, " ")
}
