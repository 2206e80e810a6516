package channel

import "time"

// caller is who sends a message: a connected client, or a Call (c nil).
type caller struct {
	c        *Client
	from     string // the "from" of the notifications it causes
	identity string // "" anonymous
}

// maxLease bounds the "expires" of a Call.
const maxLease = 365 * 24 * time.Hour

// exec runs one message. It returns the reply to send: always one for a Call (call set), for
// a client only when the message has a msg_id or is a bad frame. A change
// to a persistent resource returns once it is stored and applied (see
// propose), so the reply follows the notifications it caused.
func (t *Tree) exec(cl *caller, data []byte, call bool) []byte {
	m, reason := parseMessage(data)
	if reason != "" {
		return failedReply(m.MsgID, reason)
	}
	reply, reason := t.dispatch(cl, m, call)
	if m.MsgID == nil && !call {
		return nil
	}
	if reason != "" {
		return failedReply(m.MsgID, reason)
	}
	if reply == nil {
		reply = successReply(m.MsgID)
	}
	return reply
}

// dispatch runs a parsed message by its method; it returns the success
// reply, or the reason of the failure.
func (t *Tree) dispatch(cl *caller, m *message, call bool) ([]byte, string) {
	r, ok := parseResource(m.Resource)
	if !ok {
		return nil, reasonInvalidRes
	}
	var lease time.Duration
	if call && m.Expires != nil {
		s := *m.Expires
		if !(s > 0) || s > maxLease.Seconds() {
			return nil, reasonInvalidExpires
		}
		lease = max(time.Duration(s*float64(time.Second)), time.Millisecond)
	}
	switch m.Method {
	case "GET":
		return t.get(cl, m, r)
	case "PUT":
		return t.put(cl, m, r, lease)
	case "POST":
		return t.post(cl, m, r, lease)
	case "DELETE":
		return t.delete(cl, r)
	case "SUBSCRIBE":
		return t.subscribeMsg(cl, m, r)
	case "UNSUBSCRIBE":
		return t.unsubscribeMsg(cl, m, r)
	case "NOTIFY":
		return t.notify(cl, m, r)
	case "RULES":
		return t.rulesMsg(cl, m, r)
	}
	return nil, reasonUnknownMethod
}
