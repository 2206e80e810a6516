package core

import (
	"math"
	"unicode/utf8"
)

// AppendJSON appends the JSON form of v (docs/wire.md#json) to dst and
// returns the extended buffer.
//
// The output is byte for byte what Python's json.dumps writes with its
// defaults (separators ", " and ": ", ensure_ascii): a [Node] is the object
// {"name": content}, a [Record] (or a map with string keys, in key order, or
// a struct, in field order) an object, a [List] or other slice an array, none
// null. Strings escape '"', '\\' and control characters, and write DEL and
// every non-ASCII character as a lower-case \uXXXX escape (a UTF-16
// surrogate pair above U+FFFF); invalid UTF-8 bytes become \ufffd. Floats
// are written like Python's repr (1.0, 0.0001, 1e-05, 1e+16, -0.0);
// float32 values use their own shortest digits. The one departure from
// Python is that NaN and the infinities, which JSON cannot express, are
// written as null (Python writes the invalid NaN and Infinity).
//
// A value implementing [JSONAppender] supplies its own form; a [Valuer] is
// converted first. See the package's value model for the other Go types.
func AppendJSON(dst []byte, v any) []byte {
	return appendJSONValue(dst, v, 0)
}

func appendJSONValue(dst []byte, v any, depth int) []byte {
	for ; depth <= maxRenderDepth; depth++ {
		switch x := v.(type) {
		case nil:
			return append(dst, "null"...)
		case string:
			return appendJSONString(dst, x)
		case float64:
			return appendJSONFloat(dst, x, 64)
		case float32:
			return appendJSONFloat(dst, float64(x), 32)
		case Node:
			return appendJSONNode(dst, x.Name, x.Content, depth)
		case Field:
			return appendJSONNode(dst, x.Name, x.Value, depth)
		case Record:
			return appendJSONRecord(dst, x, depth)
		case List:
			return appendJSONList(dst, x, depth)
		case []any:
			return appendJSONList(dst, x, depth)
		case []string:
			dst = append(dst, '[')
			for i, s := range x {
				if i > 0 {
					dst = append(dst, ", "...)
				}
				dst = appendJSONString(dst, s)
			}
			return append(dst, ']')
		case JSONAppender:
			if isNilPointer(v) {
				return append(dst, "null"...)
			}
			return x.AppendJSON(dst)
		}
		if d, ok := appendNumber(dst, v); ok {
			return d
		}
		v = unwrapValue(v)
	}
	return append(dst, "null"...)
}

func appendJSONNode(dst []byte, name string, content any, depth int) []byte {
	dst = append(dst, '{')
	dst = appendJSONString(dst, name)
	dst = append(dst, ": "...)
	dst = appendJSONValue(dst, content, depth+1)
	return append(dst, '}')
}

func appendJSONRecord(dst []byte, r Record, depth int) []byte {
	dst = append(dst, '{')
	for i, f := range r {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendJSONString(dst, f.Name)
		dst = append(dst, ": "...)
		dst = appendJSONValue(dst, f.Value, depth+1)
	}
	return append(dst, '}')
}

func appendJSONList(dst []byte, l []any, depth int) []byte {
	dst = append(dst, '[')
	for i, e := range l {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = appendJSONValue(dst, e, depth+1)
	}
	return append(dst, ']')
}

const lowerHex = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way Python's json.dumps
// does with ensure_ascii.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = appendJSONEscape(dst, rune(c))
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:]) // invalid UTF-8: RuneError (U+FFFD), size 1
		if r > 0xffff {
			r -= 0x10000
			dst = appendJSONEscape(dst, 0xd800+(r>>10))
			r = 0xdc00 + r&0x3ff
		}
		dst = appendJSONEscape(dst, r)
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendJSONEscape appends \uXXXX for r <= 0xffff.
func appendJSONEscape(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', lowerHex[r>>12&0xf], lowerHex[r>>8&0xf], lowerHex[r>>4&0xf], lowerHex[r&0xf])
}

func appendJSONFloat(dst []byte, f float64, bitSize int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	return appendFloat(dst, f, bitSize)
}
