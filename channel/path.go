package channel

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of a path (docs/channel.md#the-tree).
const (
	maxPathBytes    = 1024
	maxPathSegments = 32
	maxSegmentBytes = 255
)

// resource is the "resource" of a message split into its parts:
// "/p[attr]" or "/p?query".
type resource struct {
	path     string // "/" or "/a/b"
	attr     string // the field of "/p[attr]"; "" when none
	hasAttr  bool
	query    string // what follows '?', undecoded
	hasQuery bool
}

// parseResource splits and validates a message's resource. The root "/"
// is valid here; the operations that cannot apply to it refuse it.
func parseResource(s string) (resource, bool) {
	var r resource
	if i := strings.IndexByte(s, '?'); i >= 0 {
		r.query, r.hasQuery = s[i+1:], true
		s = s[:i]
	}
	if strings.HasSuffix(s, "]") {
		i := strings.IndexByte(s, '[')
		if i < 0 || r.hasQuery {
			return r, false
		}
		r.attr, r.hasAttr = s[i+1:len(s)-1], true
		s = s[:i]
		if r.attr == "" || strings.ContainsAny(r.attr, "[]") || !utf8.ValidString(r.attr) {
			return r, false
		}
	}
	if !validPath(s) {
		return r, false
	}
	r.path = s
	return r, true
}

// validPath reports whether p is "/" or a path of docs/channel.md#the-tree: at most
// 1,024 bytes, at most 32 segments, each one a valid segment.
func validPath(p string) bool {
	if p == "/" {
		return true
	}
	if len(p) < 2 || p[0] != '/' || len(p) > maxPathBytes {
		return false
	}
	depth := 0
	for rest := p[1:]; ; {
		depth++
		if depth > maxPathSegments {
			return false
		}
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return validSegment(rest)
		}
		if !validSegment(rest[:i]) {
			return false
		}
		rest = rest[i+1:]
	}
}

// validSegment reports whether s may name a resource: 1 to 255 bytes of
// UTF-8 without / ? # [ ] % or control characters, neither "." nor "..".
func validSegment(s string) bool {
	if len(s) == 0 || len(s) > maxSegmentBytes || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || strings.IndexByte("/?#[]%", c) >= 0 {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || unicode.IsControl(r) {
			return false
		}
		i += n
	}
	return true
}

// parentPath returns the path of p's parent and p's last segment; the
// parent of "/a" is "/".
func parentPath(p string) (parent, name string) {
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return "/", p[1:]
	}
	return p[:i], p[i+1:]
}

// childPath returns the path of the child name of parent.
func childPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
