package core

import "strings"

// Media types chosen by [Negotiate].
const (
	TypeJSON  = "application/json"
	TypeXML   = "text/xml"
	TypePlain = "text/plain"
	TypeOctet = "application/octet-stream"
)

// Negotiate returns the media type that the type string typ chooses per SPEC
// 2.3: typ is split on commas and white space and lower-cased; */* adds
// application/json; the first of application/json, text/xml and text/plain
// present wins; otherwise application/octet-stream (with the plain form).
// An empty typ chooses application/json.
func Negotiate(typ string) string {
	if strings.TrimSpace(typ) == "" {
		return TypeJSON
	}
	var json, xml, plain bool
	for _, f := range strings.FieldsFunc(typ, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v'
	}) {
		switch strings.ToLower(f) {
		case TypeJSON, "*/*":
			json = true
		case TypeXML:
			xml = true
		case TypePlain:
			plain = true
		}
	}
	switch {
	case json:
		return TypeJSON
	case xml:
		return TypeXML
	case plain:
		return TypePlain
	}
	return TypeOctet
}

// Render renders v in the representation that typ chooses (see [Negotiate])
// and returns the Content-Type and the body.
func Render(typ string, v any) (contentType string, body []byte) {
	switch t := Negotiate(typ); t {
	case TypeJSON:
		return t, AppendJSON(nil, v)
	case TypeXML:
		return t, AppendXML(nil, v)
	default:
		return t, AppendText(nil, v)
	}
}

// AppendJSON appends the JSON form of v (SPEC 2.3) to dst.
func AppendJSON(dst []byte, v any) []byte { panic("TODO") }

// AppendXML appends the XML form of v (SPEC 2.3) to dst.
func AppendXML(dst []byte, v any) []byte { panic("TODO") }

// AppendText appends the plain-text form of v to dst.
func AppendText(dst []byte, v any) []byte { panic("TODO") }
