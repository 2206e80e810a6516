package core

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxJSONDepth is how deeply the arrays and objects of a document that
// [DecodeJSON] accepts may nest. Deeper documents are refused, so that a
// hostile body cannot exhaust the stack.
const MaxJSONDepth = 1000

// JSONError is the error of [DecodeJSON]: what is wrong and the byte offset
// where it was found.
type JSONError struct {
	Offset int
	Msg    string
}

// Error returns "core: invalid JSON at offset N: msg".
func (e *JSONError) Error() string {
	return "core: invalid JSON at offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// DecodeJSON decodes data, which must hold exactly one JSON value (RFC 8259)
// with optional white space around it, into a unified value that keeps the
// order of object fields:
//
//   - an object becomes a [Record], its fields in document order;
//   - an array becomes a [List];
//   - a number written as an integer that fits in an int64 becomes an int64,
//     any other number a float64 (±Inf past the float64 range), as Python's
//     json.loads does;
//   - strings, true, false and null become string, bool and nil.
//
// A name that occurs twice in an object keeps the position of its first
// occurrence and the value of its last, as Python's json.loads and
// encoding/json do. Invalid UTF-8 in a string and an escaped lone surrogate
// become U+FFFD, as with encoding/json. Arrays and objects nested more than
// [MaxJSONDepth] levels deep are refused. Any error is a *[JSONError].
//
// So AppendJSON(nil, v) of the result writes the document in the canonical
// form of docs/wire.md#json, fields in their original order.
func DecodeJSON(data []byte) (any, error) {
	d := jsonDecoder{data: data}
	d.space()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.pos < len(d.data) {
		return nil, d.fail("trailing data after the value")
	}
	return v, nil
}

type jsonDecoder struct {
	data []byte
	pos  int
}

func (d *jsonDecoder) fail(msg string) error { return &JSONError{Offset: d.pos, Msg: msg} }

// space skips JSON white space.
func (d *jsonDecoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// value decodes the value at d.pos; depth counts the enclosing arrays and
// objects.
func (d *jsonDecoder) value(depth int) (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.fail("unexpected end of data")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.string()
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, d.fail("unexpected character " + strconv.QuoteRune(rune(d.data[d.pos])))
}

func (d *jsonDecoder) literal(word string) error {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return d.fail("invalid literal, want " + word)
	}
	d.pos += len(word)
	return nil
}

// indexFrom is the number of fields past which an object finds repeated
// names with a map instead of a linear search.
const indexFrom = 16

func (d *jsonDecoder) object(depth int) (any, error) {
	if depth > MaxJSONDepth {
		return nil, d.fail("nested too deeply")
	}
	d.pos++ // {
	rec := Record{}
	var index map[string]int
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return rec, nil
	}
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.fail("want a string naming a field")
		}
		name, err := d.string()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.fail("want ':' after a field name")
		}
		d.pos++
		d.space()
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		rec, index = setField(rec, index, name, v)
		d.space()
		if d.pos >= len(d.data) {
			return nil, d.fail("unexpected end of data in an object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.space()
		case '}':
			d.pos++
			return rec, nil
		default:
			return nil, d.fail("want ',' or '}' in an object")
		}
	}
}

// setField sets the field name of rec to v: a repeated name keeps its
// position and takes the new value. index maps names to positions once rec
// is long enough to need it.
func setField(rec Record, index map[string]int, name string, v any) (Record, map[string]int) {
	if index == nil && len(rec) >= indexFrom {
		index = make(map[string]int, 2*len(rec))
		for i := len(rec) - 1; i >= 0; i-- {
			index[rec[i].Name] = i
		}
	}
	if index != nil {
		if i, ok := index[name]; ok {
			rec[i].Value = v
			return rec, index
		}
		index[name] = len(rec)
		return append(rec, Field{Name: name, Value: v}), index
	}
	for i := range rec {
		if rec[i].Name == name {
			rec[i].Value = v
			return rec, index
		}
	}
	return append(rec, Field{Name: name, Value: v}), index
}

func (d *jsonDecoder) array(depth int) (any, error) {
	if depth > MaxJSONDepth {
		return nil, d.fail("nested too deeply")
	}
	d.pos++ // [
	list := List{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return list, nil
	}
	for {
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
		d.space()
		if d.pos >= len(d.data) {
			return nil, d.fail("unexpected end of data in an array")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.space()
		case ']':
			d.pos++
			return list, nil
		default:
			return nil, d.fail("want ',' or ']' in an array")
		}
	}
}

func (d *jsonDecoder) number() (any, error) {
	start := d.pos
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.data[d.pos] == '-' {
		d.pos++
	}
	switch {
	case d.pos < len(d.data) && d.data[d.pos] == '0':
		d.pos++
	case digits() == 0:
		return nil, d.fail("want a digit")
	}
	integral := true
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		integral = false
		d.pos++
		if digits() == 0 {
			return nil, d.fail("want a digit after '.'")
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		integral = false
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return nil, d.fail("want a digit in the exponent")
		}
	}
	text := string(d.data[start:d.pos])
	if integral {
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, &JSONError{Offset: start, Msg: "invalid number"}
	}
	return f, nil // past the range: ±Inf (or 0 for underflow)
}

// string decodes the string at d.pos, which starts with '"'.
func (d *jsonDecoder) string() (string, error) {
	d.pos++ // "
	start := d.pos
	// Fast path: no escapes, ASCII or valid UTF-8.
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c == '"' {
			s := d.data[start:d.pos]
			d.pos++
			return string(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		if c < utf8.RuneSelf {
			d.pos++
			continue
		}
		r, size := utf8.DecodeRune(d.data[d.pos:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		d.pos += size
	}
	buf := make([]byte, 0, d.pos-start+16)
	buf = append(buf, d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(buf), nil
		case c < 0x20:
			return "", d.fail("control character in a string")
		case c == '\\':
			d.pos++
			if d.pos >= len(d.data) {
				return "", d.fail("unexpected end of data in a string")
			}
			e := d.data[d.pos]
			d.pos++
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", d.fail("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if mark := d.pos; d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
						d.pos += 2
						var ok bool
						if r2, ok = d.hex4(); !ok {
							return "", d.fail("invalid \\u escape")
						}
						if utf16.DecodeRune(r, r2) == utf8.RuneError {
							d.pos = mark // not a pair: the second escape stands alone
							r2 = -1
						}
					}
					if r2 < 0 {
						r = utf8.RuneError
					} else {
						r = utf16.DecodeRune(r, r2)
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", d.fail("invalid escape in a string")
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			buf = utf8.AppendRune(buf, r) // invalid UTF-8: U+FFFD
			d.pos += size
		}
	}
	return "", d.fail("unexpected end of data in a string")
}

// hex4 reads the four hex digits of a \u escape.
func (d *jsonDecoder) hex4() (rune, bool) {
	if len(d.data)-d.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	d.pos += 4
	return r, true
}
