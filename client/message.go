package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Message is a message to the server (docs/channel.md#the-websocket-door).
// msg_id is set by the client. Zero fields are left out.
type Message struct {
	Method     string  `json:"method"`
	Resource   string  `json:"resource"`
	Type       string  `json:"type,omitempty"`
	Entity     any     `json:"entity,omitempty"`
	Data       any     `json:"data,omitempty"`
	Persistent bool    `json:"persistent,omitempty"`
	ID         string  `json:"id,omitempty"`
	Partial    bool    `json:"partial,omitempty"`
	Since      uint64  `json:"since,omitempty"`
	Epoch      string  `json:"epoch,omitempty"` // the history's epoch of Since
	Rules      *string `json:"rules,omitempty"`
	// Group is sent when GroupSet is true (nil then sends null, which
	// removes the group).
	Group    []string `json:"-"`
	GroupSet bool     `json:"-"`
	Owner    string   `json:"owner,omitempty"`

	id int64 // the msg_id, set by the client
}

// MarshalJSON writes the message with its group (when GroupSet) and its
// msg_id.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	b, err := json.Marshal(plain(m))
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1]
	if m.GroupSet {
		g, err := json.Marshal(m.Group)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"group":`...), g...)
	}
	if m.id != 0 {
		b = strconv.AppendInt(append(b, `,"msg_id":`...), m.id, 10)
	}
	return append(b, '}'), nil
}

// Reply is a success reply (code "success"); Raw holds it as sent.
type Reply struct {
	Resource  string          `json:"resource"`
	Type      *string         `json:"type"`
	Entity    json.RawMessage `json:"entity"`
	ID        string          `json:"id"`
	SentCount int             `json:"sent_count"`
	Recovered *bool           `json:"recovered"`
	Epoch     string          `json:"epoch"` // of SUBSCRIBE: the history's epoch; "" from a server without
	Rules     string          `json:"rules"`
	Group     []string        `json:"group"`
	Owner     string          `json:"owner"`
	Effective string          `json:"effective"`
	Raw       json.RawMessage `json:"-"`
}

// Notification is a notification of the server
// (docs/channel.md#notifications); Raw holds it as sent.
type Notification struct {
	Notify   string          `json:"notify"` // PUT, POST, DELETE, UPDATE or NOTIFY
	Resource string          `json:"resource"`
	Type     *string         `json:"type"`
	Entity   json.RawMessage `json:"entity"`
	Data     json.RawMessage `json:"data"`
	Create   string          `json:"create"`
	Update   string          `json:"update"`
	Delete   string          `json:"delete"`
	From     *string         `json:"from"`
	Seq      uint64          `json:"seq"`
	Raw      json.RawMessage `json:"-"`
}

// Error is a request the server refused: its reason ("not found",
// "forbidden", ...), or, for SEND and CANCEL over HTTP and a refused
// handshake (see ErrUnauthorized), the HTTP status and its reason phrase.
type Error struct {
	Reason string
	Status int // the HTTP status of Send, Cancel or a handshake; 0 otherwise
}

func (e *Error) Error() string { return "client: " + e.Reason }

// Errors of requests that did not reach a reply. ErrDisconnected,
// ErrQueueFull, ErrSubscribed, ErrEncode and ErrClosed are refusals of
// the client itself: nothing was sent. The server's own refusals are
// *Error.
var (
	// ErrDisconnected: no connection when the request was made, and no
	// queue (Options.Queue) to wait in: nothing was sent.
	ErrDisconnected = errors.New("client: not connected; nothing was sent")
	// ErrQueueFull: no connection, and Options.Queue requests wait already.
	ErrQueueFull = errors.New("client: not connected and the queue is full; nothing was sent")
	// ErrSubscribed: Subscribe (or SubscribeFunc) of a resource that the
	// client is subscribed to already; the subscription that exists
	// goes on.
	ErrSubscribed = errors.New("client: already subscribed to that resource; nothing was sent")
	// ErrEncode: the message (or the body of Send) could not be encoded
	// as JSON; it wraps encoding/json's error.
	ErrEncode = errors.New("client: cannot encode as JSON; nothing was sent")
	// ErrConnectionLost: the connection ended before the reply. The
	// request may or may not have been applied; it is not sent again.
	ErrConnectionLost = errors.New("client: the connection ended before the reply")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("client: closed")
	// ErrUnauthorized: the server refused the credentials of a
	// connection attempt (a handshake answered 401 or 403), or
	// Options.HeaderFunc said there are none. The client does not try
	// again: it ends in the state Unauthorized, and Client.Err, the
	// requests and the subscriptions report an error that wraps
	// ErrUnauthorized and the server's *Error (Status and Reason).
	ErrUnauthorized = errors.New("client: the server refused the credentials")
)

// unauthorizedError is a handshake refused with 401 or 403.
type unauthorizedError struct{ refusal *Error }

func (e *unauthorizedError) Error() string {
	return fmt.Sprintf("%v: %d %s", ErrUnauthorized, e.refusal.Status, e.refusal.Reason)
}

func (e *unauthorizedError) Unwrap() []error { return []error{ErrUnauthorized, e.refusal} }

// frame is what the client reads of any frame.
type frame struct {
	MsgID  *int64 `json:"msg_id"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
	Notify string `json:"notify"`
}
