package core

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
