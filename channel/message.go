package channel

import (
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
	reasonInvalidRules   = "invalid rules"
	reasonInvalidGroup   = "invalid group"
	reasonInvalidOwner   = "invalid owner"
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
	Expires    *float64        `json:"expires"`
	Stream     bool            `json:"stream"`
	Rules      *string         `json:"rules"`
	Group      json.RawMessage `json:"group"`
	Owner      *string         `json:"owner"`
	Offer      bool            `json:"offer"`
}

// parseMessage decodes one frame. On failure it returns the reason and
// the message as far as it could be read (its msg_id when it could).
func parseMessage(data []byte) (*message, string) {
	m := &message{}
	i := 0
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	if i == len(data) || data[i] != '{' || !utf8.Valid(data) {
		return m, reasonInvalidJSON
	}
	if err := json.Unmarshal(data, m); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			return &message{}, reasonInvalidJSON
		}
		m.MsgID = scalarOrNil(m.MsgID)
		return m, reasonInvalidField
	}
	m.MsgID = scalarOrNil(m.MsgID)
	switch {
	case m.Method == "":
		return m, reasonMissingMethod
	case m.Resource == "":
		return m, reasonMissingRes
	}
	return m, ""
}

// scalarOrNil returns id compacted, or nil when it is absent or null.
func scalarOrNil(id json.RawMessage) json.RawMessage {
	if id == nil || string(id) == "null" {
		return nil
	}
	c, err := compactJSON(id)
	if err != nil {
		return nil
	}
	return c
}
