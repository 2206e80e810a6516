package core

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
