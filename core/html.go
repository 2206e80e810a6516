package core

import (
	"time"
)

// ContentTypeHTML is the Content-Type of an HTML answer.
const ContentTypeHTML = TypeHTML + "; charset=utf-8"

// HTMLPolicy is the Content-Security-Policy of every HTML answer: the pages
// load nothing (no script, style, image, font or frame), may not be framed,
// and have no forms and no base URL to change.
const HTMLPolicy = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// RawURL is a url of raw content, such as a file download: it renders as its
// text in every representation, like a string, but an HTML page links it as
// it is, without the request's LINK_PREFIX (see [AppendHTML]), because its
// target has no HTML view.
type RawURL string

// HTMLPage describes the page [AppendHTML] writes.
type HTMLPage struct {
	// Title is the page's title and first heading, normally the path of the
	// resource; "" means "reso".
	Title string
	// LinkPrefix is written before a url path to make a link (the
	// LINK_PREFIX request variable): "/html" links the page to the HTML
	// views of the urls it shows. It is used only when it is a path of its
	// own: it starts with one "/", does not end with "/" and has no control
	// character, space or backslash; otherwise, and when "", urls link as
	// they are.
	LinkPrefix string
}

// AppendHTML appends v as a small HTML page (docs/wire.md#html) to dst and
// returns the extended buffer. The page is a complete document: doctype, an
// html element with lang="en", a head with the charset and the title, and a
// body whose main element holds an h1 heading with the title and the value:
//
//   - A scalar is its text; at the top of the page it is a p element.
//   - A [Record] (map, struct) is a dl element: per field a dt with the
//     name and a dd with the value. A [Node] or [Field] is a dl of one.
//   - A [List] (slice, array) is an ol element numbered from 0 (the index of
//     each item in a bound list's path), each item an li. A list whose items
//     are all records of scalars, or all nodes whose contents are records of
//     scalars, with no field name twice in one record, is a table instead:
//     a header row of th elements (a "kind" column with the node names, then
//     one column per field name, in the order first seen) and a row per
//     item.
//   - A field named url whose value is a path (it starts with one "/" and
//     has no control character or backslash) is a link to that path with
//     [HTMLPage.LinkPrefix] before it; a [RawURL] value links without the
//     prefix. In a table whose records have a name with every url, the url
//     is no column: the name links to it.
//   - A field named mtime whose value is an integer (Unix seconds) is a time
//     element: the UTC date and time, with the RFC 3339 form as datetime.
//
// All text is escaped as in [AppendXML] (&, <, >, and here also " and ' so
// that the same escaping serves attributes); a carriage return is written
// &#13;, characters that are not allowed (control characters other than
// tab, newline and carriage return, U+FFFE, U+FFFF, invalid UTF-8) become
// U+FFFD. Nothing in the value becomes markup. The page loads nothing: no
// script, style or image, so it is served with [HTMLPolicy].
func AppendHTML(dst []byte, page HTMLPage, v any) []byte {
	title := page.Title
	if title == "" {
		title = "reso"
	}
	dst = append(dst, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"+
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"...)
	dst = appendHTMLText(dst, title)
	dst = append(dst, "</title>\n</head>\n<body>\n<main>\n<h1>"...)
	dst = appendHTMLText(dst, title)
	dst = append(dst, "</h1>\n"...)
	h := htmlWriter{prefix: linkPrefix(page.LinkPrefix)}
	dst = h.appendTop(dst, v)
	return append(dst, htmlPageEnd...)
}

// AppendHTMLError appends the HTML page of an error answer: its title and
// heading are the status line, and lines, when there are any, follow as an
// unordered list (the route forms of the router's 404 answer).
func AppendHTMLError(dst []byte, statusLine string, lines []string) []byte {
	dst = AppendHTML(dst, HTMLPage{Title: statusLine}, nil)
	if len(lines) == 0 {
		return dst
	}
	dst = dst[:len(dst)-len(htmlPageEnd)]
	dst = append(dst, "<ul>"...)
	for _, l := range lines {
		dst = append(dst, "<li>"...)
		dst = appendHTMLText(dst, l)
		dst = append(dst, "</li>"...)
	}
	dst = append(dst, "</ul>\n"...)
	return append(dst, htmlPageEnd...)
}

// htmlPageEnd ends every page.
const htmlPageEnd = "</main>\n</body>\n</html>\n"

// appendHTMLFragment appends the HTML of v without the page around it (an
// event's data).
func appendHTMLFragment(dst []byte, v any) []byte {
	var h htmlWriter
	return h.appendTop(dst, v)
}

// linkPrefix returns p if it may be written before a path, else "".
func linkPrefix(p string) string {
	if len(p) < 2 || p[0] != '/' || p[1] == '/' || p[len(p)-1] == '/' {
		return ""
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c == 0x7f || c == '\\' || c == '"' || c == '\'' || c == '<' || c == '>' || c == '&' {
			return ""
		}
	}
	return p
}

type htmlWriter struct {
	prefix string
}

func (h *htmlWriter) appendTop(dst []byte, v any) []byte {
	v, depth := resolveHTMLValue(v, 0)
	switch v.(type) {
	case nil:
		return dst
	case Node, Field, Record, List, []any, []string:
		dst = h.appendValue(dst, v, depth)
		return append(dst, '\n')
	}
	dst = append(dst, "<p>"...)
	dst = appendHTMLScalar(dst, v)
	return append(dst, "</p>\n"...)
}

// appendValue appends a resolved value.
func (h *htmlWriter) appendValue(dst []byte, v any, depth int) []byte {
	switch x := v.(type) {
	case nil:
		return dst
	case Node:
		return h.appendFields(dst, Record{{Name: x.Name, Value: x.Content}}, depth)
	case Field:
		return h.appendFields(dst, Record{x}, depth)
	case Record:
		return h.appendFields(dst, x, depth)
	case List:
		return h.appendList(dst, x, depth)
	case []any:
		return h.appendList(dst, x, depth)
	case []string:
		dst = append(dst, "<ol start=\"0\">"...)
		for _, s := range x {
			dst = append(dst, "<li>"...)
			dst = appendHTMLText(dst, s)
			dst = append(dst, "</li>"...)
		}
		return append(dst, "</ol>"...)
	}
	return appendHTMLScalar(dst, v)
}

// appendChild appends an unresolved value inside a dd, li or td.
func (h *htmlWriter) appendChild(dst []byte, v any, depth int) []byte {
	v, depth = resolveHTMLValue(v, depth+1)
	return h.appendValue(dst, v, depth)
}

func (h *htmlWriter) appendFields(dst []byte, r Record, depth int) []byte {
	dst = append(dst, "<dl>"...)
	for _, f := range r {
		dst = append(dst, "<dt>"...)
		dst = appendHTMLText(dst, f.Name)
		dst = append(dst, "</dt><dd>"...)
		dst = h.appendField(dst, f.Name, f.Value, "", depth)
		dst = append(dst, "</dd>"...)
	}
	return append(dst, "</dl>"...)
}

// appendField appends the value of a field called name: a link for a url,
// a time for an mtime, else the value. A linkTo other than "" makes a
// scalar value a link to that url value (a table's name column).
func (h *htmlWriter) appendField(dst []byte, name string, v any, linkTo any, depth int) []byte {
	switch name {
	case "url":
		if href, ok := h.href(v); ok {
			return appendHTMLLink(dst, href, v)
		}
	case "mtime":
		if d, ok := appendHTMLTime(dst, v); ok {
			return d
		}
	}
	if linkTo != "" {
		if href, ok := h.href(linkTo); ok {
			if s, _ := resolveHTMLValue(v, depth+1); isHTMLScalar(s) {
				return appendHTMLLink(dst, href, s)
			}
		}
	}
	return h.appendChild(dst, v, depth)
}

// href returns the link target of a url value, and whether it has one.
func (h *htmlWriter) href(v any) (string, bool) {
	var s, prefix string
	switch x := v.(type) {
	case RawURL:
		s = string(x)
	case string:
		s, prefix = x, h.prefix
	default:
		return "", false
	}
	if len(s) == 0 || s[0] != '/' || len(s) > 1 && (s[1] == '/' || s[1] == '\\') {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == 0x7f || c == '\\' {
			return "", false
		}
	}
	return prefix + s, true
}

func appendHTMLLink(dst []byte, href string, text any) []byte {
	dst = append(dst, "<a href=\""...)
	dst = appendHTMLText(dst, href)
	dst = append(dst, "\">"...)
	dst = appendHTMLScalar(dst, text)
	return append(dst, "</a>"...)
}

// appendHTMLTime appends an integer number of Unix seconds as a time element.
func appendHTMLTime(dst []byte, v any) ([]byte, bool) {
	var sec int64
	switch x := v.(type) {
	case int:
		sec = int64(x)
	case int32:
		sec = int64(x)
	case int64:
		sec = x
	case uint32:
		sec = int64(x)
	default:
		return dst, false
	}
	t := time.Unix(sec, 0).UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return dst, false
	}
	dst = append(dst, "<time datetime=\""...)
	dst = t.AppendFormat(dst, time.RFC3339)
	dst = append(dst, "\">"...)
	dst = t.AppendFormat(dst, "2006-01-02 15:04:05 UTC")
	return append(dst, "</time>"...), true
}

func (h *htmlWriter) appendList(dst []byte, l []any, depth int) []byte {
	if rows, nodes, ok := htmlTable(l, depth); ok {
		return h.appendTable(dst, rows, nodes, depth)
	}
	dst = append(dst, "<ol start=\"0\">"...)
	for _, e := range l {
		dst = append(dst, "<li>"...)
		dst = h.appendChild(dst, e, depth)
		dst = append(dst, "</li>"...)
	}
	return append(dst, "</ol>"...)
}

// htmlRow is one row of a table: the node name (when the items are nodes)
// and the record.
type htmlRow struct {
	kind string
	rec  Record
}

// htmlTable reports whether l renders as a table, and its rows.
func htmlTable(l []any, depth int) (rows []htmlRow, nodes, ok bool) {
	if len(l) == 0 {
		return nil, false, false
	}
	rows = make([]htmlRow, 0, len(l))
	for i, e := range l {
		e, d := resolveHTMLValue(e, depth+1)
		var row htmlRow
		isNode := false
		switch x := e.(type) {
		case Node:
			c, _ := resolveHTMLValue(x.Content, d+1)
			r, isRec := c.(Record)
			if !isRec {
				return nil, false, false
			}
			row, isNode = htmlRow{kind: x.Name, rec: r}, true
		case Field:
			c, _ := resolveHTMLValue(x.Value, d+1)
			r, isRec := c.(Record)
			if !isRec {
				return nil, false, false
			}
			row, isNode = htmlRow{kind: x.Name, rec: r}, true
		case Record:
			row.rec = x
		default:
			return nil, false, false
		}
		if i == 0 {
			nodes = isNode
		} else if isNode != nodes {
			return nil, false, false
		}
		for j, f := range row.rec {
			if s, _ := resolveHTMLValue(f.Value, d+2); s != nil && !isHTMLScalar(s) {
				return nil, false, false
			}
			for _, g := range row.rec[:j] {
				if g.Name == f.Name {
					return nil, false, false
				}
			}
		}
		rows = append(rows, row)
	}
	return rows, nodes, true
}

func (h *htmlWriter) appendTable(dst []byte, rows []htmlRow, nodes bool, depth int) []byte {
	// The url links the name when every record with a url has a name.
	nameLinks := true
	var cols []string
	for _, r := range rows {
		_, hasName := r.rec.Get("name")
		for _, f := range r.rec {
			if f.Name == "url" && !hasName {
				nameLinks = false
			}
			if !containsString(cols, f.Name) {
				cols = append(cols, f.Name)
			}
		}
	}
	if nameLinks {
		for i, c := range cols {
			if c == "url" {
				cols = append(cols[:i], cols[i+1:]...)
				break
			}
		}
	}
	dst = append(dst, "<table><thead><tr>"...)
	if nodes {
		dst = append(dst, "<th scope=\"col\">kind</th>"...)
	}
	for _, c := range cols {
		dst = append(dst, "<th scope=\"col\">"...)
		dst = appendHTMLText(dst, c)
		dst = append(dst, "</th>"...)
	}
	dst = append(dst, "</tr></thead><tbody>"...)
	for _, r := range rows {
		dst = append(dst, "<tr>"...)
		if nodes {
			dst = append(dst, "<td>"...)
			dst = appendHTMLText(dst, r.kind)
			dst = append(dst, "</td>"...)
		}
		var url any = ""
		if nameLinks {
			if u, ok := r.rec.Get("url"); ok {
				url = u
			}
		}
		for _, c := range cols {
			dst = append(dst, "<td>"...)
			if v, ok := r.rec.Get(c); ok {
				var linkTo any = ""
				if c == "name" {
					linkTo, _ = resolveHTMLValue(url, depth+3)
				}
				v, _ = resolveHTMLValue(v, depth+3)
				dst = h.appendField(dst, c, v, linkTo, depth+3)
			}
			dst = append(dst, "</td>"...)
		}
		dst = append(dst, "</tr>"...)
	}
	return append(dst, "</tbody></table>"...)
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// resolveHTMLValue resolves v as [resolveTextValue] does, except that a
// [RawURL] is kept.
func resolveHTMLValue(v any, depth int) (any, int) {
	for ; depth <= maxRenderDepth; depth++ {
		switch v.(type) {
		case nil, string, bool, float32, float64,
			int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr,
			Node, Field, Record, List, []any, []string, RawURL:
			return v, depth
		}
		v = unwrapValue(v)
	}
	return nil, depth
}

func isHTMLScalar(v any) bool {
	switch v.(type) {
	case Node, Field, Record, List, []any, []string:
		return false
	}
	return true
}

// appendHTMLScalar appends the escaped text of a resolved scalar.
func appendHTMLScalar(dst []byte, v any) []byte {
	switch x := v.(type) {
	case string:
		return appendHTMLText(dst, x)
	case RawURL:
		return appendHTMLText(dst, string(x))
	case float64:
		return appendFloat(dst, x, 64)
	case float32:
		return appendFloat(dst, float64(x), 32)
	}
	dst, _ = appendNumber(dst, v)
	return dst
}
