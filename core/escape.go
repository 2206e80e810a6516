package core

import "unicode/utf8"

// escapes maps each ASCII byte to what markup text writes for it; ""
// keeps the byte as it is.
type escapes [utf8.RuneSelf]string

// markupEscapes returns the escapes shared by XML and HTML text: &, < and
// >, and control characters (but tab and line feed) as U+FFFD, which
// neither may carry; cr is how a carriage return is written, so that it
// survives the parsers' line-end normalization.
func markupEscapes(cr string) *escapes {
	var e escapes
	for c := range 0x20 {
		if c != '\t' && c != '\n' {
			e[c] = "\ufffd"
		}
	}
	e['&'], e['<'], e['>'], e['\r'] = "&amp;", "&lt;", "&gt;", cr
	return &e
}

var (
	// xmlEscapes are those of XML character data.
	xmlEscapes = markupEscapes("&#xD;")
	// htmlEscapes are those of HTML text, which are also safe in an
	// attribute value between double or single quotes.
	htmlEscapes = func() *escapes {
		e := markupEscapes("&#13;")
		e['"'], e['\''] = "&#34;", "&#39;"
		return e
	}()
)

// appendXMLText appends s as XML character data.
func appendXMLText(dst []byte, s string) []byte { return appendEscaped(dst, s, xmlEscapes) }

// appendHTMLText appends s as HTML text, escaped so that it is also a valid
// attribute value between double or single quotes.
func appendHTMLText(dst []byte, s string) []byte { return appendEscaped(dst, s, htmlEscapes) }

// appendEscaped appends s with the ASCII bytes e names replaced, and
// invalid UTF-8 and the noncharacters U+FFFE and U+FFFF as U+FFFD: the one
// escaping discipline of reso's markup.
func appendEscaped(dst []byte, s string, e *escapes) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		var esc string
		size := 1
		if c < utf8.RuneSelf {
			if esc = e[c]; esc == "" {
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
