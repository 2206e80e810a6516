package core

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Media types chosen by [Negotiate].
const (
	TypeJSON  = "application/json"
	TypeXML   = "text/xml"
	TypePlain = "text/plain"
	TypeOctet = "application/octet-stream"
)

// Negotiate returns the media type that the type string typ chooses
// (docs/wire.md#choosing-a-representation): typ is split on commas and white
// space and lower-cased; */* adds application/json; the first of
// application/json, text/xml and text/plain present wins; otherwise
// application/octet-stream (with the plain form). An empty typ chooses
// application/json.
func Negotiate(typ string) string {
	var json, xml, plain, any bool
	for i := 0; i < len(typ); {
		for i < len(typ) && isTypeSep(typ[i]) {
			i++
		}
		j := i
		for j < len(typ) && !isTypeSep(typ[j]) {
			j++
		}
		if j > i {
			any = true
			switch f := typ[i:j]; {
			case strings.EqualFold(f, TypeJSON), f == "*/*":
				json = true
			case strings.EqualFold(f, TypeXML):
				xml = true
			case strings.EqualFold(f, TypePlain):
				plain = true
			}
		}
		i = j
	}
	switch {
	case json || !any:
		return TypeJSON
	case xml:
		return TypeXML
	case plain:
		return TypePlain
	}
	return TypeOctet
}

func isTypeSep(c byte) bool {
	return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// Render renders v in the representation that typ chooses (see [Negotiate])
// and returns the Content-Type and the body.
func Render(typ string, v any) (contentType string, body []byte) {
	// One allocation covers most answers; larger ones grow as needed.
	buf := make([]byte, 0, 512)
	switch t := Negotiate(typ); t {
	case TypeJSON:
		return t, AppendJSON(buf, v)
	case TypeXML:
		return t, AppendXML(buf, v)
	default:
		return t, AppendText(buf, v)
	}
}

// maxRenderDepth bounds the nesting of a rendered value: every container
// level, every [Valuer] conversion and every pointer dereference counts as one
// level. Deeper values render as none, which stops self-referencing values
// (a Valuer returning itself, a pointer cycle) from recursing forever.
const maxRenderDepth = 64

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

// AppendXML appends the XML form of v (docs/wire.md#xml) to dst and returns
// the extended buffer. There is no XML declaration and the result is a fragment:
// it may have several top-level elements or none.
//
// A [Node] is written <name>content</name>, or <name /> when its content
// renders as nothing (none, an empty string, an empty list). A [List], slice
// or [Record] is the concatenation of its children, a record field being
// written like a node; maps are records in key order and structs records in
// field order. A scalar is its text, with &, < and > escaped and a carriage
// return written as &#xD; (so that parsers keep it); numbers are written as in
// [AppendJSON], except NaN, inf and -inf.
//
// The output is always a well-formed fragment. Characters that XML 1.0 does
// not allow (control characters other than tab, newline and carriage return,
// U+FFFE, U+FFFF, invalid UTF-8) are replaced by U+FFFD. Element names are
// made valid: a character that may not appear in a name, and ':', becomes
// '_'; a name that starts with a character allowed only later in a name (a
// digit, '-', '.') gets a leading '_'; the empty name becomes "_". The
// characters kept are those of XML 1.0 Appendix B (as encoding/xml checks
// them), which are also valid in names in the fifth edition; valid names
// written only with them are kept untouched.
//
// A value implementing [XMLAppender] supplies its own form; a [Valuer] is
// converted first.
func AppendXML(dst []byte, v any) []byte {
	return appendXMLValue(dst, v, 0)
}

// AppendText appends the plain-text form of v to dst and returns the
// extended buffer. The layout is line based and YAML-like:
//
//   - A scalar is one line holding its text (strings raw, numbers and
//     booleans as in [AppendJSON] except NaN, inf, -inf); none and the empty
//     string write no line.
//   - A [Node] (or record field) with scalar content is the line
//     "name: text", with none or empty content the line "name:".
//   - A node whose content is a node, record or list is the line "name:"
//     followed by the content indented by two more spaces.
//   - A [Record] is its fields, one after the other.
//   - A [List] is its items, each introduced by "- " at the list's
//     indentation; an item's following lines are indented by two more spaces
//     and an item that writes nothing is the line "-".
//
// Every line ends with a newline, so the output ends with one newline unless
// it is empty. Strings are written raw: a string containing a newline spans
// several lines. For example Node{"config", Record{{"directory", "."}}} is
// "config:\n  directory: .\n" and List{Node{"a", 1}, "b"} is "- a: 1\n- b\n".
func AppendText(dst []byte, v any) []byte {
	return appendTextValue(dst, v, 0, 0)
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

// appendFloat appends f like Python's repr(float) does, and NaN, inf and
// -inf for the non-finite values. bitSize 32 uses the shortest digits that
// identify f as a float32.
func appendFloat(dst []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, bitSize) // [-]d[.ddd]e±dd
	if b[0] == '-' {
		dst = append(dst, '-')
		b = b[1:]
	}
	e := len(b) - 4
	for b[e] != 'e' {
		e--
	}
	exp := 0
	for _, c := range b[e+2:] {
		exp = exp*10 + int(c-'0')
	}
	if b[e+1] == '-' {
		exp = -exp
	}
	if exp < -4 || exp >= 16 {
		return append(dst, b...) // strconv writes at least two exponent digits, as Python does
	}
	var dbuf [24]byte
	digits := append(dbuf[:0], b[0])
	if e > 1 {
		digits = append(digits, b[2:e]...)
	}
	switch {
	case exp < 0:
		dst = append(dst, '0', '.')
		for range -exp - 1 {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	case len(digits) <= exp+1:
		dst = append(dst, digits...)
		for range exp + 1 - len(digits) {
			dst = append(dst, '0')
		}
		dst = append(dst, '.', '0')
	default:
		dst = append(dst, digits[:exp+1]...)
		dst = append(dst, '.')
		dst = append(dst, digits[exp+1:]...)
	}
	return dst
}

// appendNumber appends the text of v when v is a bool or an integer of a
// predeclared type and reports whether it was.
func appendNumber(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case int:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int8:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int16:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int64:
		return strconv.AppendInt(dst, x, 10), true
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint64:
		return strconv.AppendUint(dst, x, 10), true
	case uintptr:
		return strconv.AppendUint(dst, uint64(x), 10), true
	}
	return dst, false
}

var (
	nodeType   = reflect.TypeFor[Node]()
	fieldType  = reflect.TypeFor[Field]()
	recordType = reflect.TypeFor[Record]()
	listType   = reflect.TypeFor[List]()
)

// unwrapValue converts a value that is not one of the shapes the renderers
// write directly one step towards them: it calls [Valuer], MarshalText
// (encoding.TextMarshaler) and Error, dereferences pointers, and turns maps,
// structs, slices, arrays and values of named scalar types into records,
// lists and scalars. Nil pointers are none; their methods are not called.
// Other kinds (complex numbers, channels, functions) become their %v text.
func unwrapValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return recordFromMap(x)
	case map[string]string:
		return recordFromMap(x)
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil
	}
	switch x := v.(type) {
	case Valuer:
		return x.Value()
	case encoding.TextMarshaler:
		b, err := x.MarshalText()
		if err != nil {
			return nil
		}
		return string(b)
	case error:
		return x.Error()
	}
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		return rv.Elem().Interface()
	case reflect.String:
		return rv.String()
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint()
	case reflect.Float32:
		return float32(rv.Float())
	case reflect.Float64:
		return rv.Float()
	case reflect.Slice:
		switch t := rv.Type(); {
		case t.ConvertibleTo(recordType):
			return rv.Convert(recordType).Interface()
		case t.ConvertibleTo(listType):
			return rv.Convert(listType).Interface()
		}
		return listFromReflect(rv)
	case reflect.Array:
		return listFromReflect(rv)
	case reflect.Map:
		r := make(Record, 0, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			k := it.Key()
			name := ""
			if k.Kind() == reflect.String {
				name = k.String()
			} else {
				name = fmt.Sprint(k.Interface())
			}
			r = append(r, Field{Name: name, Value: it.Value().Interface()})
		}
		slices.SortStableFunc(r, compareFields)
		return r
	case reflect.Struct:
		t := rv.Type()
		switch {
		case t.ConvertibleTo(nodeType):
			return rv.Convert(nodeType).Interface()
		case t.ConvertibleTo(fieldType):
			return rv.Convert(fieldType).Interface()
		}
		return recordFromStruct(rv)
	}
	return fmt.Sprint(v)
}

func compareFields(a, b Field) int { return strings.Compare(a.Name, b.Name) }

func recordFromMap[V any](m map[string]V) Record {
	r := make(Record, 0, len(m))
	for k, v := range m {
		r = append(r, Field{Name: k, Value: v})
	}
	slices.SortFunc(r, compareFields)
	return r
}

func listFromReflect(rv reflect.Value) List {
	l := make(List, rv.Len())
	for i := range l {
		l[i] = rv.Index(i).Interface()
	}
	return l
}

// recordFromStruct makes a record of the exported fields of a struct, in
// field order, named by their json tag (skipping json:"-") or else their Go
// name. Embedded structs are fields like the others; they are not flattened.
func recordFromStruct(rv reflect.Value) Record {
	t := rv.Type()
	r := make(Record, 0, t.NumField())
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name := sf.Name
		if tag, ok := sf.Tag.Lookup("json"); ok {
			if tag == "-" {
				continue
			}
			if n, _, _ := strings.Cut(tag, ","); n != "" {
				name = n
			}
		}
		r = append(r, Field{Name: name, Value: rv.Field(i).Interface()})
	}
	return r
}

func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

func appendXMLValue(dst []byte, v any, depth int) []byte {
	for ; depth <= maxRenderDepth; depth++ {
		switch x := v.(type) {
		case nil:
			return dst
		case string:
			return appendXMLText(dst, x)
		case float64:
			return appendFloat(dst, x, 64)
		case float32:
			return appendFloat(dst, float64(x), 32)
		case Node:
			return appendXMLNode(dst, x.Name, x.Content, depth)
		case Field:
			return appendXMLNode(dst, x.Name, x.Value, depth)
		case Record:
			for _, f := range x {
				dst = appendXMLNode(dst, f.Name, f.Value, depth)
			}
			return dst
		case List:
			return appendXMLList(dst, x, depth)
		case []any:
			return appendXMLList(dst, x, depth)
		case []string:
			for _, s := range x {
				dst = appendXMLText(dst, s)
			}
			return dst
		case XMLAppender:
			if isNilPointer(v) {
				return dst
			}
			return x.AppendXML(dst)
		}
		if d, ok := appendNumber(dst, v); ok {
			return d
		}
		v = unwrapValue(v)
	}
	return dst
}

func appendXMLList(dst []byte, l []any, depth int) []byte {
	for _, e := range l {
		dst = appendXMLValue(dst, e, depth+1)
	}
	return dst
}

// appendXMLNode appends <name>content</name>, or <name /> when the content
// writes nothing.
func appendXMLNode(dst []byte, name string, content any, depth int) []byte {
	start := len(dst)
	dst = append(dst, '<')
	dst = appendXMLName(dst, name)
	nameEnd := len(dst)
	dst = append(dst, '>')
	dst = appendXMLValue(dst, content, depth+1)
	if len(dst) == nameEnd+1 {
		return append(dst[:nameEnd], " />"...)
	}
	dst = append(dst, '<', '/')
	dst = append(dst, dst[start+1:nameEnd]...)
	return append(dst, '>')
}

// appendXMLText appends s as XML character data.
func appendXMLText(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		var esc string
		size := 1
		if c < utf8.RuneSelf {
			switch {
			case c == '&':
				esc = "&amp;"
			case c == '<':
				esc = "&lt;"
			case c == '>':
				esc = "&gt;"
			case c == '\r':
				esc = "&#xD;"
			case c < 0x20 && c != '\t' && c != '\n':
				esc = "\ufffd"
			default:
				i++
				continue
			}
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError && r != 0xfffe && r != 0xffff || size == 3 && r == utf8.RuneError {
				i += size
				continue
			}
			esc = "\ufffd"
		}
		dst = append(dst, s[start:i]...)
		dst = append(dst, esc...)
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

// appendXMLName appends name made into a valid XML element name (see
// [AppendXML]).
func appendXMLName(dst []byte, name string) []byte {
	if name == "" {
		return append(dst, '_')
	}
	ok := isXMLNameStartByte(name[0])
	for i := 1; ok && i < len(name); i++ {
		ok = isXMLNameStartByte(name[i]) || name[i] >= '0' && name[i] <= '9' || name[i] == '-' || name[i] == '.'
	}
	if ok {
		return append(dst, name...)
	}
	for i, r := range name {
		switch {
		case isXMLNameStart(r):
			dst = utf8.AppendRune(dst, r)
		case isXMLNameChar(r):
			if i == 0 {
				dst = append(dst, '_')
			}
			dst = utf8.AppendRune(dst, r)
		default:
			dst = append(dst, '_')
		}
	}
	return dst
}

func isXMLNameStartByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// isXMLNameStart reports whether r may start an element name; ':' is left
// out to keep clear of namespaces.
func isXMLNameStart(r rune) bool {
	if r < utf8.RuneSelf {
		return isXMLNameStartByte(byte(r))
	}
	return unicode.Is(xmlNameStart, r)
}

// isXMLNameChar reports whether r may appear in an element name after its
// first character.
func isXMLNameChar(r rune) bool {
	if r < utf8.RuneSelf {
		return isXMLNameStartByte(byte(r)) || r >= '0' && r <= '9' || r == '-' || r == '.'
	}
	return unicode.Is(xmlNameStart, r) || unicode.Is(xmlNameRest, r)
}

// xmlNameStart and xmlNameRest are the non-ASCII characters of XML 1.0
// Appendix B (letters, and the digits, combining characters and extenders
// allowed after the first character) exactly as encoding/xml checks them.
var (
	xmlNameStart = &unicode.RangeTable{R16: []unicode.Range16{
		{0x00c0, 0x00d6, 1}, {0x00d8, 0x00f6, 1}, {0x00f8, 0x00ff, 1}, {0x0100, 0x0131, 1}, {0x0134, 0x013e, 1},
		{0x0141, 0x0148, 1}, {0x014a, 0x017e, 1}, {0x0180, 0x01c3, 1}, {0x01cd, 0x01f0, 1}, {0x01f4, 0x01f5, 1},
		{0x01fa, 0x0217, 1}, {0x0250, 0x02a8, 1}, {0x02bb, 0x02c1, 1}, {0x0386, 0x0386, 1}, {0x0388, 0x038a, 1},
		{0x038c, 0x038c, 1}, {0x038e, 0x03a1, 1}, {0x03a3, 0x03ce, 1}, {0x03d0, 0x03d6, 1}, {0x03e2, 0x03f3, 1},
		{0x0401, 0x040c, 1}, {0x040e, 0x044f, 1}, {0x0451, 0x045c, 1}, {0x045e, 0x0481, 1}, {0x0490, 0x04c4, 1},
		{0x04c7, 0x04c8, 1}, {0x04cb, 0x04cc, 1}, {0x04d0, 0x04eb, 1}, {0x04ee, 0x04f5, 1}, {0x04f8, 0x04f9, 1},
		{0x0531, 0x0556, 1}, {0x0559, 0x0559, 1}, {0x0561, 0x0586, 1}, {0x05d0, 0x05ea, 1}, {0x05f0, 0x05f2, 1},
		{0x0621, 0x063a, 1}, {0x0641, 0x064a, 1}, {0x0671, 0x06b7, 1}, {0x06ba, 0x06be, 1}, {0x06c0, 0x06ce, 1},
		{0x06d0, 0x06d3, 1}, {0x06d5, 0x06d5, 1}, {0x06e5, 0x06e6, 1}, {0x0905, 0x0939, 1}, {0x093d, 0x093d, 1},
		{0x0958, 0x0961, 1}, {0x0985, 0x098c, 1}, {0x098f, 0x0990, 1}, {0x0993, 0x09a8, 1}, {0x09aa, 0x09b0, 1},
		{0x09b2, 0x09b2, 1}, {0x09b6, 0x09b9, 1}, {0x09dc, 0x09dd, 1}, {0x09df, 0x09e1, 1}, {0x09f0, 0x09f1, 1},
		{0x0a05, 0x0a0a, 1}, {0x0a0f, 0x0a10, 1}, {0x0a13, 0x0a28, 1}, {0x0a2a, 0x0a30, 1}, {0x0a32, 0x0a33, 1},
		{0x0a35, 0x0a36, 1}, {0x0a38, 0x0a39, 1}, {0x0a59, 0x0a5c, 1}, {0x0a5e, 0x0a5e, 1}, {0x0a72, 0x0a74, 1},
		{0x0a85, 0x0a8b, 1}, {0x0a8d, 0x0a8d, 1}, {0x0a8f, 0x0a91, 1}, {0x0a93, 0x0aa8, 1}, {0x0aaa, 0x0ab0, 1},
		{0x0ab2, 0x0ab3, 1}, {0x0ab5, 0x0ab9, 1}, {0x0b05, 0x0b0c, 1}, {0x0b0f, 0x0b10, 1}, {0x0b13, 0x0b28, 1},
		{0x0b2a, 0x0b30, 1}, {0x0b32, 0x0b33, 1}, {0x0b36, 0x0b39, 1}, {0x0b3d, 0x0b3d, 1}, {0x0b5c, 0x0b5d, 1},
		{0x0b5f, 0x0b61, 1}, {0x0b85, 0x0b8a, 1}, {0x0b8e, 0x0b90, 1}, {0x0b92, 0x0b95, 1}, {0x0b99, 0x0b9a, 1},
		{0x0b9c, 0x0b9c, 1}, {0x0b9e, 0x0b9f, 1}, {0x0ba3, 0x0ba4, 1}, {0x0ba8, 0x0baa, 1}, {0x0bae, 0x0bb5, 1},
		{0x0bb7, 0x0bb9, 1}, {0x0c05, 0x0c0c, 1}, {0x0c0e, 0x0c10, 1}, {0x0c12, 0x0c28, 1}, {0x0c2a, 0x0c33, 1},
		{0x0c35, 0x0c39, 1}, {0x0c60, 0x0c61, 1}, {0x0c85, 0x0c8c, 1}, {0x0c8e, 0x0c90, 1}, {0x0c92, 0x0ca8, 1},
		{0x0caa, 0x0cb3, 1}, {0x0cb5, 0x0cb9, 1}, {0x0cde, 0x0cde, 1}, {0x0ce0, 0x0ce1, 1}, {0x0d05, 0x0d0c, 1},
		{0x0d0e, 0x0d10, 1}, {0x0d12, 0x0d28, 1}, {0x0d2a, 0x0d39, 1}, {0x0d60, 0x0d61, 1}, {0x0e01, 0x0e2e, 1},
		{0x0e30, 0x0e30, 1}, {0x0e32, 0x0e33, 1}, {0x0e40, 0x0e45, 1}, {0x0e81, 0x0e82, 1}, {0x0e84, 0x0e84, 1},
		{0x0e87, 0x0e88, 1}, {0x0e94, 0x0e97, 1}, {0x0e99, 0x0e9f, 1}, {0x0ea1, 0x0ea3, 1}, {0x0eaa, 0x0eab, 1},
		{0x0ead, 0x0eae, 1}, {0x0eb0, 0x0eb0, 1}, {0x0eb2, 0x0eb3, 1}, {0x0ebd, 0x0ebd, 1}, {0x0ec0, 0x0ec4, 1},
		{0x0f40, 0x0f47, 1}, {0x0f49, 0x0f69, 1}, {0x10a0, 0x10c5, 1}, {0x10d0, 0x10f6, 1}, {0x1100, 0x1100, 1},
		{0x1102, 0x1103, 1}, {0x1105, 0x1107, 1}, {0x1109, 0x1109, 1}, {0x110b, 0x110c, 1}, {0x110e, 0x1112, 1},
		{0x1154, 0x1155, 1}, {0x1159, 0x1159, 1}, {0x115f, 0x1161, 1}, {0x116d, 0x116e, 1}, {0x1172, 0x1173, 1},
		{0x11ae, 0x11af, 1}, {0x11b7, 0x11b8, 1}, {0x11ba, 0x11ba, 1}, {0x11bc, 0x11c2, 1}, {0x11f9, 0x11f9, 1},
		{0x1e00, 0x1e9b, 1}, {0x1ea0, 0x1ef9, 1}, {0x1f00, 0x1f15, 1}, {0x1f18, 0x1f1d, 1}, {0x1f20, 0x1f45, 1},
		{0x1f48, 0x1f4d, 1}, {0x1f50, 0x1f57, 1}, {0x1f5d, 0x1f5d, 1}, {0x1f5f, 0x1f7d, 1}, {0x1f80, 0x1fb4, 1},
		{0x1fb6, 0x1fbc, 1}, {0x1fbe, 0x1fbe, 1}, {0x1fc2, 0x1fc4, 1}, {0x1fc6, 0x1fcc, 1}, {0x1fd0, 0x1fd3, 1},
		{0x1fd6, 0x1fdb, 1}, {0x1fe0, 0x1fec, 1}, {0x1ff2, 0x1ff4, 1}, {0x1ff6, 0x1ffc, 1}, {0x2126, 0x2126, 1},
		{0x212a, 0x212b, 1}, {0x212e, 0x212e, 1}, {0x2180, 0x2182, 1}, {0x3007, 0x3007, 1}, {0x3021, 0x3029, 1},
		{0x3041, 0x3094, 1}, {0x30a1, 0x30fa, 1}, {0x3105, 0x312c, 1}, {0x4e00, 0x9fa5, 1}, {0xac00, 0xd7a3, 1},
	}}
	xmlNameRest = &unicode.RangeTable{R16: []unicode.Range16{
		{0x00b7, 0x00b7, 1}, {0x02d0, 0x02d1, 1}, {0x0300, 0x0345, 1}, {0x0360, 0x0361, 1}, {0x0387, 0x0387, 1},
		{0x0483, 0x0486, 1}, {0x0591, 0x05a1, 1}, {0x05a3, 0x05b9, 1}, {0x05bb, 0x05bd, 1}, {0x05bf, 0x05bf, 1},
		{0x05c1, 0x05c2, 1}, {0x064b, 0x0652, 1}, {0x0660, 0x0669, 1}, {0x0670, 0x0670, 1}, {0x06d6, 0x06dc, 1},
		{0x06dd, 0x06df, 1}, {0x06e0, 0x06e4, 1}, {0x06e7, 0x06e8, 1}, {0x06ea, 0x06ed, 1}, {0x06f0, 0x06f9, 1},
		{0x0901, 0x0903, 1}, {0x093c, 0x093c, 1}, {0x093e, 0x094c, 1}, {0x094d, 0x094d, 1}, {0x0951, 0x0954, 1},
		{0x0962, 0x0963, 1}, {0x0966, 0x096f, 1}, {0x0981, 0x0983, 1}, {0x09bc, 0x09bc, 1}, {0x09be, 0x09bf, 1},
		{0x09c0, 0x09c4, 1}, {0x09c7, 0x09c8, 1}, {0x09cb, 0x09cd, 1}, {0x09d7, 0x09d7, 1}, {0x09e2, 0x09e3, 1},
		{0x09e6, 0x09ef, 1}, {0x0a3e, 0x0a3f, 1}, {0x0a40, 0x0a42, 1}, {0x0a47, 0x0a48, 1}, {0x0a4b, 0x0a4d, 1},
		{0x0a66, 0x0a6f, 1}, {0x0a70, 0x0a71, 1}, {0x0a81, 0x0a83, 1}, {0x0abc, 0x0abc, 1}, {0x0abe, 0x0ac5, 1},
		{0x0ac7, 0x0ac9, 1}, {0x0acb, 0x0acd, 1}, {0x0ae6, 0x0aef, 1}, {0x0b01, 0x0b03, 1}, {0x0b3c, 0x0b3c, 1},
		{0x0b3e, 0x0b43, 1}, {0x0b47, 0x0b48, 1}, {0x0b4b, 0x0b4d, 1}, {0x0b56, 0x0b57, 1}, {0x0b66, 0x0b6f, 1},
		{0x0b82, 0x0b83, 1}, {0x0bbe, 0x0bc2, 1}, {0x0bc6, 0x0bc8, 1}, {0x0bca, 0x0bcd, 1}, {0x0bd7, 0x0bd7, 1},
		{0x0be7, 0x0bef, 1}, {0x0c01, 0x0c03, 1}, {0x0c3e, 0x0c44, 1}, {0x0c46, 0x0c48, 1}, {0x0c4a, 0x0c4d, 1},
		{0x0c55, 0x0c56, 1}, {0x0c66, 0x0c6f, 1}, {0x0c82, 0x0c83, 1}, {0x0cbe, 0x0cc4, 1}, {0x0cc6, 0x0cc8, 1},
		{0x0cca, 0x0ccd, 1}, {0x0cd5, 0x0cd6, 1}, {0x0ce6, 0x0cef, 1}, {0x0d02, 0x0d03, 1}, {0x0d3e, 0x0d43, 1},
		{0x0d46, 0x0d48, 1}, {0x0d4a, 0x0d4d, 1}, {0x0d57, 0x0d57, 1}, {0x0d66, 0x0d6f, 1}, {0x0e31, 0x0e31, 1},
		{0x0e34, 0x0e3a, 1}, {0x0e46, 0x0e46, 1}, {0x0e47, 0x0e4e, 1}, {0x0e50, 0x0e59, 1}, {0x0eb1, 0x0eb1, 1},
		{0x0eb4, 0x0eb9, 1}, {0x0ebb, 0x0ebc, 1}, {0x0ec6, 0x0ec6, 1}, {0x0ec8, 0x0ecd, 1}, {0x0ed0, 0x0ed9, 1},
		{0x0f18, 0x0f19, 1}, {0x0f20, 0x0f29, 1}, {0x0f3e, 0x0f3f, 1}, {0x0f71, 0x0f84, 1}, {0x0f86, 0x0f8b, 1},
		{0x0f90, 0x0f95, 1}, {0x0f97, 0x0f97, 1}, {0x0f99, 0x0fad, 1}, {0x0fb1, 0x0fb7, 1}, {0x0fb9, 0x0fb9, 1},
		{0x20d0, 0x20dc, 1}, {0x302a, 0x302f, 1}, {0x3031, 0x3035, 1}, {0x3099, 0x309a, 1}, {0x309d, 0x309e, 1},
		{0x30fc, 0x30fe, 1},
	}}
)

func appendTextValue(dst []byte, v any, indent, depth int) []byte {
	v, depth = resolveTextValue(v, depth)
	switch x := v.(type) {
	case nil:
		return dst
	case Node:
		return appendTextNode(dst, x.Name, x.Content, indent, depth)
	case Field:
		return appendTextNode(dst, x.Name, x.Value, indent, depth)
	case Record:
		for _, f := range x {
			dst = appendTextNode(dst, f.Name, f.Value, indent, depth)
		}
		return dst
	case List:
		return appendTextList(dst, x, indent, depth)
	case []any:
		return appendTextList(dst, x, indent, depth)
	case []string:
		for _, s := range x {
			dst = appendTextItem(dst, s, indent, depth+1)
		}
		return dst
	}
	mark := len(dst)
	dst = appendSpaces(dst, indent)
	textStart := len(dst)
	dst = appendTextScalar(dst, v)
	if len(dst) == textStart {
		return dst[:mark]
	}
	return append(dst, '\n')
}

func appendTextList(dst []byte, l []any, indent, depth int) []byte {
	for _, e := range l {
		dst = appendTextItem(dst, e, indent, depth+1)
	}
	return dst
}

// appendTextItem appends a list item: its lines indented by indent+2, with
// "- " in the last two columns of the indentation of the first.
func appendTextItem(dst []byte, v any, indent, depth int) []byte {
	mark := len(dst)
	dst = appendTextValue(dst, v, indent+2, depth)
	if len(dst) == mark {
		dst = appendSpaces(dst, indent)
		return append(dst, '-', '\n')
	}
	dst[mark+indent] = '-'
	return dst
}

func appendTextNode(dst []byte, name string, content any, indent, depth int) []byte {
	dst = appendSpaces(dst, indent)
	dst = append(dst, name...)
	dst = append(dst, ':')
	c, d := resolveTextValue(content, depth+1)
	switch c.(type) {
	case Node, Field, Record, List, []any, []string:
		dst = append(dst, '\n')
		return appendTextValue(dst, c, indent+2, d)
	}
	mark := len(dst)
	dst = append(dst, ' ')
	dst = appendTextScalar(dst, c)
	if len(dst) == mark+1 {
		dst = dst[:mark]
	}
	return append(dst, '\n')
}

// appendTextScalar appends the text of a resolved scalar; nil appends nothing.
func appendTextScalar(dst []byte, v any) []byte {
	switch x := v.(type) {
	case string:
		return append(dst, x...)
	case float64:
		return appendFloat(dst, x, 64)
	case float32:
		return appendFloat(dst, float64(x), 32)
	}
	dst, _ = appendNumber(dst, v)
	return dst
}

// resolveTextValue unwraps v until it is nil, a scalar of a predeclared type
// or one of the containers that the text renderer writes, and returns it with
// the depth reached.
func resolveTextValue(v any, depth int) (any, int) {
	for ; depth <= maxRenderDepth; depth++ {
		switch v.(type) {
		case nil, string, bool, float32, float64,
			int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr,
			Node, Field, Record, List, []any, []string:
			return v, depth
		}
		v = unwrapValue(v)
	}
	return nil, depth
}

const renderSpaces = "                                                                "

func appendSpaces(dst []byte, n int) []byte {
	for n > len(renderSpaces) {
		dst = append(dst, renderSpaces...)
		n -= len(renderSpaces)
	}
	return append(dst, renderSpaces[:n]...)
}
