package channel

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// Reasons of failed replies: fixed phrases, never request data.
const (
	reasonNotFound       = "not found"
	reasonExists         = "exists"
	reasonInvalidRes     = "invalid resource"
	reasonForbidden      = "forbidden"
	reasonInvalidJSON    = "invalid JSON"
	reasonInvalidField   = "invalid field"
	reasonMissingMethod  = "missing method"
	reasonMissingRes     = "missing resource"
	reasonUnknownMethod  = "unknown method"
	reasonNoSubscriber   = "no subscriber"
	reasonInvalidEntity  = "invalid entity"
	reasonInvalidID      = "invalid id"
	reasonInvalidQuery   = "invalid query"
	reasonInvalidExpires = "invalid expires"
	reasonTooManySubs    = "too many subscriptions"
	reasonNotSupported   = "not supported without a connection"
	reasonDisconnected   = "disconnected"
	reasonClosed         = "closed"
	reasonStore          = "store failed"
	reasonUnavailable    = "unavailable"
	reasonInvalidRules   = "invalid rules"
	reasonInvalidGroup   = "invalid group"
	reasonInvalidOwner   = "invalid owner"
	reasonInvalidMsgID   = "invalid msg_id"
)

// message is one client message of docs/channel.md#the-websocket-door. Unknown fields are
// ignored; raw fields keep the client's bytes.
type message struct {
	Method     string          `json:"method"`
	Resource   string          `json:"resource"`
	MsgID      json.RawMessage `json:"msg_id"`
	Type       *string         `json:"type"`
	Entity     json.RawMessage `json:"entity"`
	Data       json.RawMessage `json:"data"`
	Persistent bool            `json:"persistent"`
	ID         *string         `json:"id"`
	Partial    bool            `json:"partial"`
	Since      *uint64         `json:"since"`
	Epoch      *string         `json:"epoch"`
	Expires    *float64        `json:"expires"`
	Stream     bool            `json:"stream"`
	Rules      *string         `json:"rules"`
	Group      json.RawMessage `json:"group"`
	Owner      *string         `json:"owner"`
	Offer      bool            `json:"offer"`
}

// parseMessage decodes one frame into a new message, as
// [message.parse] does.
func parseMessage(data []byte) (*message, string) {
	m := &message{}
	return m, m.parse(data)
}

// parse decodes one frame into m, which the caller owns (a variable of
// its own: the message of a write applied at once is not kept, so it
// costs no allocation, issue 38). On failure it returns the reason and m
// holds the message as far as it could be read: its msg_id whenever one
// could be read, whatever else is wrong (nested too deep, a field of the
// wrong type, broken JSON after it), unless the msg_id itself is not a
// scalar.
func (m *message) parse(data []byte) string {
	*m = message{}
	i := 0
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	if i == len(data) || data[i] != '{' || !utf8.Valid(data) {
		return reasonInvalidJSON
	}
	if !parseFast(data, m) {
		// json.Unmarshal keeps its argument: a message of its own, so
		// that m stays the caller's.
		u := new(message)
		err := json.Unmarshal(data, u)
		*m = *u
		if err != nil {
			return m.failed(data, err)
		}
	}
	id, ok := msgID(m.MsgID)
	if !ok {
		*m = message{}
		return reasonInvalidMsgID
	}
	m.MsgID = id
	switch {
	case m.Method == "":
		return reasonMissingMethod
	case m.Resource == "":
		return reasonMissingRes
	}
	return ""
}

// failed returns what parse answers when json.Unmarshal refused data
// with err, m holding what it read, and leaves in m what the failure
// keeps.
func (m *message) failed(data []byte, err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		id, ok := msgID(readMsgID(data))
		*m = message{}
		if !ok {
			return reasonInvalidMsgID
		}
		m.MsgID = id
		return reasonInvalidJSON
	}
	id, ok := msgID(m.MsgID)
	if !ok {
		*m = message{}
		return reasonInvalidMsgID
	}
	m.MsgID = id
	return reasonInvalidField
}

// msgID returns id compacted, or nil when it is absent or null; ok is
// false when it is not a scalar (an array or an object).
func msgID(id json.RawMessage) (json.RawMessage, bool) {
	if id == nil || string(id) == "null" {
		return nil, true
	}
	c, err := compactJSON(id)
	if err != nil {
		return nil, true
	}
	if c[0] == '[' || c[0] == '{' {
		return nil, false
	}
	return c, true
}

// readMsgID returns the value of the top-level field msg_id of data, a
// JSON object that json.Unmarshal refused, as far as it can be read: the
// fields are skipped token by token, which no nesting depth stops. The
// last msg_id read wins, as in json.Unmarshal; nil when there is none.
func readMsgID(data []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var id json.RawMessage
	for {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return id
		}
		if key == "msg_id" {
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return id
			}
			id = v
			continue
		}
		for depth := 0; ; {
			t, err := dec.Token()
			if err != nil {
				return id
			}
			switch t {
			case json.Delim('{'), json.Delim('['):
				depth++
			case json.Delim('}'), json.Delim(']'):
				depth--
			}
			if depth == 0 {
				break
			}
		}
	}
}
