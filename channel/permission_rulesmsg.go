package channel

import (
	"encoding/json"
	"unicode/utf8"
)

// maxIdentity bounds the length of an e-mail in a group or as an owner.
const maxIdentity = 320

// aclChange is what a RULES message changes, checked outside the lock.
type aclChange struct {
	setRule   bool
	rule      *Rule // nil removes the rule
	setGroup  bool
	group     *group // nil removes the group
	owner     string // "" keeps the owner
	hasChange bool
}

// parseACL reads the rules, group and owner fields of a RULES message.
func parseACL(m *message) (aclChange, string) {
	var ch aclChange
	if m.Rules != nil {
		ch.setRule = true
		if *m.Rules != "" {
			r, err := ParseRule(*m.Rules)
			if err != nil {
				return ch, reasonInvalidRules
			}
			ch.rule = &r
		}
	}
	if m.Group != nil {
		ch.setGroup = true
		if string(m.Group) != "null" {
			var members []string
			if err := json.Unmarshal(m.Group, &members); err != nil || len(members) > maxGroup {
				return ch, reasonInvalidGroup
			}
			for _, e := range members {
				if !validIdentity(e) {
					return ch, reasonInvalidGroup
				}
			}
			if members == nil {
				members = []string{}
			}
			ch.group = newGroup(members)
		}
	}
	if m.Owner != nil {
		if !validIdentity(*m.Owner) {
			return ch, reasonInvalidOwner
		}
		ch.owner = *m.Owner
	}
	ch.hasChange = ch.setRule || ch.setGroup || ch.owner != ""
	return ch, ""
}

// validIdentity reports whether s can be an authenticated caller's
// identity: 1 to maxIdentity bytes of UTF-8 without control characters.
func validIdentity(s string) bool {
	if s == "" || len(s) > maxIdentity || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// rulesMsg runs RULES: read, or change, the rule, the group and the owner
// of /p (docs/channel.md#changing-rules-rules). Only the administrator
// and the owners of /p (self there) may, and not on a top-level path but
// the administrator; anyone else is refused whether or not /p exists.
func (t *Tree) rulesMsg(cl *caller, m *message, r resource) ([]byte, string) {
	if r.path == "/" || r.hasAttr || r.hasQuery {
		return nil, reasonInvalidRes
	}
	ch, reason := parseACL(m)
	if reason != "" {
		return nil, reason
	}
	var stored []byte // the reply of a stored change, made when it is applied
	msgID := m.MsgID  // what it keeps of m, which is the caller's
	reply, reason := t.run(cl, func() outcome {
		if reason := t.usable(cl); reason != "" {
			return fail(reason)
		}
		touch := 0
		if ch.hasChange {
			touch = touchRules
		}
		if w := t.conflict(r.path, touch); w != nil {
			return outcome{wait: w}
		}
		var a access
		t.accessAt(&a, r.path)
		if cl.identity != Admin && (cl.identity == "" || a.kind(cl.identity) != Self) {
			return fail(reasonForbidden)
		}
		n := t.lookup(r.path)
		if n == nil {
			return fail(reasonNotFound)
		}
		if !ch.hasChange {
			return outcome{reply: appendACL(replyStart(m.MsgID, 128), n, &a)}
		}
		next := *n
		ch.applyTo(&next)
		if recs := planRecord(n, &next); t.keeps(recs) {
			return outcome{b: t.propose(r.path, recs, false, cl.c, func(uint64) {
				ch.applyTo(n)
				t.accessAt(&a, r.path)
				stored = appendACL(replyStart(msgID, 128), n, &a)
			})}
		}
		ch.applyTo(n)
		t.accessAt(&a, r.path)
		return outcome{reply: appendACL(replyStart(m.MsgID, 128), n, &a)}
	})
	if reply == nil && reason == "" {
		reply = stored
	}
	return reply, reason
}

// applyTo makes the change in n.
func (ch *aclChange) applyTo(n *node) {
	if ch.setRule {
		n.setRule(ch.rule)
	}
	if ch.setGroup {
		n.setGroup(ch.group)
	}
	if ch.owner != "" {
		n.setCreator(ch.owner)
	}
}

// appendACL appends the fields of a RULES reply about n, whose access is
// a, and closes the reply.
func appendACL(b []byte, n *node, a *access) []byte {
	b = append(b, `,"resource":`...)
	b = AppendString(b, n.path)
	b = append(b, `,"rules":`...)
	rule := ""
	if n.rule() != nil {
		rule = n.rule().String()
	}
	b = AppendString(b, rule)
	b = append(b, `,"group":`...)
	if n.group() == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, e := range n.group().members {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, e)
		}
		b = append(b, ']')
	}
	b = append(b, `,"owner":`...)
	if n.creator() == "" {
		b = append(b, "null"...)
	} else {
		b = AppendString(b, n.creator())
	}
	b = append(b, `,"effective":`...)
	b = AppendString(b, a.rule.full())
	return append(b, '}')
}
