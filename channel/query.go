package channel

import (
	"strconv"
	"strings"
)

// listing is the query of a GET of children:
// "?deep=0|1|2&like=&limit=&offset=&order=asc|desc".
type listing struct {
	deep   int    // 0: count; 1: ids; 2: ids, types and entities
	like   string // pattern of ids, '%' matches any run; "" matches all
	limit  int    // most children returned; -1: all
	offset int    // children skipped first
	desc   bool   // newest first
}

// parseListing reads a query of docs/channel.md#the-websocket-door: parameters split on '&' and
// '=', each part percent-decoded. Unknown parameters are ignored.
func parseListing(q string) (listing, bool) {
	l := listing{deep: 1, limit: -1}
	for q != "" {
		var part string
		if i := strings.IndexByte(q, '&'); i >= 0 {
			part, q = q[:i], q[i+1:]
		} else {
			part, q = q, ""
		}
		if part == "" {
			continue
		}
		key, val, _ := strings.Cut(part, "=")
		key, val = percentDecode(key), percentDecode(val)
		var err error
		switch key {
		case "deep":
			switch val {
			case "0", "1", "2":
				l.deep = int(val[0] - '0')
			default:
				return l, false
			}
		case "like":
			l.like = val
		case "limit":
			l.limit, err = strconv.Atoi(val)
			if err != nil || l.limit < 0 {
				return l, false
			}
		case "offset":
			l.offset, err = strconv.Atoi(val)
			if err != nil || l.offset < 0 {
				return l, false
			}
		case "order":
			switch val {
			case "asc":
				l.desc = false
			case "desc":
				l.desc = true
			default:
				return l, false
			}
		}
	}
	return l, true
}

// percentDecode decodes %XX escapes; a '%' not followed by two hex digits
// is taken literally, and '+' stays a '+'.
func percentDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// like reports whether s matches pattern, where '%' matches any run of
// bytes (the empty one too) and every other byte itself.
func like(pattern, s string) bool {
	// Greedy matching with one backtrack point: the last '%' seen.
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '%':
			starP, starI = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case starP >= 0:
			p = starP + 1
			starI++
			i = starI
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '%' {
		p++
	}
	return p == len(pattern)
}
