package channel

import (
	"strconv"
	"unicode/utf8"
)

// Replies and notifications are written by hand into byte slices, keys in
// the order docs/channel.md#the-websocket-door gives them: each is built
// once, without reflection.

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xf])
			i += n
			start = i
			continue
		}
		i += n
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendNullString appends s as a JSON string, or null when s is "".
func appendNullString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return AppendString(b, s)
}

// appendRaw appends the JSON value v, or null when v is nil.
func appendRaw(b, v []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return append(b, v...)
}

// noteChange is what the notifications of a change to a node say besides
// the node: kind (PUT, POST, DELETE), the key of its parent's UPDATE
// (update, create, delete) and from, the sender's id.
type noteChange struct {
	kind, key verb
	from      string
}

// verb is a word of a change's notifications: its kind, or the key of its
// parent's UPDATE. The zero verb is none.
type verb uint8

// The verbs.
const (
	_ verb = iota
	verbPut
	verbPost
	verbDelete
	verbUpdate
	verbCreate
	verbDeleted
)

// verbWords are the verbs' words, by value.
var verbWords = [...]string{"", "PUT", "POST", "DELETE", "update", "create", "delete"}

// String returns v's word.
func (v verb) String() string { return verbWords[v] }

// A change to path (child name of parent) has two notifications: to the
// subscribers of path, {"notify":kind,"resource","type","entity","from",
// "seq"}, and to those of its parent, {"notify":"UPDATE","resource",key,
// "type","entity","seq"}. A missing type, entity or from is null.

// noteSize returns the length of the notification of a change to path
// with its seq and closing brace when no string needs escaping (more
// when some does): the room noteBytes makes for it, and what the history
// counts it as.
func noteSize(kind, path, typ string, pub []byte, from string) int {
	return 60 + len(kind) + len(path) + max(len(typ)+2, 4) + max(len(pub), 4) + max(len(from)+2, 4) + maxSeqDigits
}

// upSize is noteSize for the UPDATE to the parent.
func upSize(key, parent, name, typ string, pub []byte) int {
	return 64 + len(parent) + len(key) + len(name) + max(len(typ)+2, 4) + max(len(pub), 4) + maxSeqDigits
}

// noteBytes returns the notification of a change to path with seq, in
// one allocation when no string needs escaping, capped at its length.
func noteBytes(kind, path, typ string, pub []byte, from string, seq uint64) []byte {
	b := make([]byte, 0, noteSize(kind, path, typ, pub, from))
	b = append(b, `{"notify":"`...)
	b = append(b, kind...)
	b = append(b, `","resource":`...)
	b = AppendString(b, path)
	b = append(b, `,"type":`...)
	b = appendNullString(b, typ)
	b = append(b, `,"entity":`...)
	b = appendRaw(b, pub)
	b = append(b, `,"from":`...)
	b = appendNullString(b, from)
	b = withSeq(append(b, `,"seq":`...), seq)
	return b[:len(b):len(b)]
}

// upBytes returns the UPDATE of a change to child name of parent with
// seq, as noteBytes does.
func upBytes(key, parent, name, typ string, pub []byte, seq uint64) []byte {
	b := make([]byte, 0, upSize(key, parent, name, typ, pub))
	b = append(b, `{"notify":"UPDATE","resource":`...)
	b = AppendString(b, parent)
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	b = AppendString(b, name)
	b = append(b, `,"type":`...)
	b = appendNullString(b, typ)
	b = append(b, `,"entity":`...)
	b = appendRaw(b, pub)
	b = withSeq(append(b, `,"seq":`...), seq)
	return b[:len(b):len(b)]
}

// notifyNote returns the notification of a NOTIFY:
// {"notify":"NOTIFY","resource","data","from","seq"}.
func notifyNote(path string, data []byte, from string, seq uint64) []byte {
	return withSeq(notifyHead(path, data, from), seq)
}

// maxSeqDigits is the most digits a seq takes, and the closing brace.
const maxSeqDigits = 20 + 1

// notifyHead returns the notification of a NOTIFY up to its seq:
// {"notify":"NOTIFY","resource","data","from","seq": with room for the
// seq and the closing brace, which withSeq appends without allocating.
// It is encoded before the tree's lock is taken, the seq under it.
func notifyHead(path string, data []byte, from string) []byte {
	b := make([]byte, 0, 64+len(path)+len(data)+len(from)+maxSeqDigits)
	b = append(b, `{"notify":"NOTIFY","resource":`...)
	b = AppendString(b, path)
	b = append(b, `,"data":`...)
	b = appendRaw(b, data)
	b = append(b, `,"from":`...)
	b = appendNullString(b, from)
	return append(b, `,"seq":`...)
}

// withSeq completes a head of notifyHead with seq. The head may be
// completed again (an attempt that waited): each completion overwrites
// the last, which nothing kept.
func withSeq(head []byte, seq uint64) []byte {
	b := strconv.AppendUint(head, seq, 10)
	return append(b, '}')
}

// replyStart begins a reply: {"msg_id":...,"code":"success"; the caller
// appends its fields and the closing brace.
func replyStart(msgID []byte, extra int) []byte {
	b := make([]byte, 0, 32+len(msgID)+extra)
	b = append(b, '{')
	if msgID != nil {
		b = append(b, `"msg_id":`...)
		b = append(b, msgID...)
		b = append(b, ',')
	}
	return append(b, `"code":"success"`...)
}

// successReply returns a success reply without fields.
func successReply(msgID []byte) []byte {
	return append(replyStart(msgID, 1), '}')
}

// failedReply returns {"msg_id":...,"code":"failed","reason":reason};
// reason is one of the fixed phrases of this package, never request data.
func failedReply(msgID []byte, reason string) []byte {
	b := make([]byte, 0, 48+len(msgID)+len(reason))
	b = append(b, '{')
	if msgID != nil {
		b = append(b, `"msg_id":`...)
		b = append(b, msgID...)
		b = append(b, ',')
	}
	b = append(b, `"code":"failed","reason":`...)
	b = AppendString(b, reason)
	return append(b, '}')
}
