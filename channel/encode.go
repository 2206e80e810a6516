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

// changeNotes returns the two notifications of a change to n with seq:
// see noteHeads.
func changeNotes(kind, key string, n *node, from string, seq uint64) (note, up []byte) {
	h := noteHeads(kind, key, n.path, n.parent.path, n.name(), n.typ(), n.pub(), from)
	return h.complete(seq)
}

// changeHeads is the two notifications of a change up to their seqs, in
// one allocation, with room after each for its seq and closing brace:
// they can be encoded before the tree's lock is taken, the seqs under it.
type changeHeads struct {
	b         []byte
	note      int // the end of the first head
	up, upEnd int // the second head
}

// noteHeads encodes the notifications of a change to path (child name of
// parent) up to their seqs: to the subscribers of path,
// {"notify":kind,"resource","type","entity","from","seq"}, and to those
// of its parent, {"notify":"UPDATE","resource",key,"type","entity","seq"},
// key being "create", "update" or "delete".
func noteHeads(kind, key, path, parent, name, typ string, pub []byte, from string) changeHeads {
	var h changeHeads
	// Room for both without a second allocation when no string needs
	// escaping: the fixed text with the quotes of path, parent and name
	// (122 bytes), a missing type, entity or from as null.
	b := make([]byte, 0, 122+len(kind)+len(key)+len(path)+len(parent)+len(name)+
		2*(max(len(typ)+2, 4)+max(len(pub), 4)+maxSeqDigits)+max(len(from)+2, 4))
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
	b = append(b, `,"seq":`...)
	h.note = len(b)
	b = append(b, make([]byte, maxSeqDigits)...)
	h.up = len(b)
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
	b = append(b, `,"seq":`...)
	h.upEnd = len(b)
	h.b = append(b, make([]byte, maxSeqDigits)...)
	return h
}

// complete returns the two notifications with seq, each capped at its
// length. They may be completed again (an attempt that waited): each
// completion overwrites the last, which nothing kept.
func (h *changeHeads) complete(seq uint64) (note, up []byte) {
	note = withSeq(h.b[:h.note:h.up], seq)
	up = withSeq(h.b[h.up:h.upEnd:len(h.b)], seq)
	return note[:len(note):len(note)], up[:len(up):len(up)]
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
