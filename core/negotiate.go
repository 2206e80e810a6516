package core

import (
	"strings"
)

// Media types chosen by [Negotiate].
const (
	TypeJSON  = "application/json"
	TypeXML   = "text/xml"
	TypePlain = "text/plain"
	TypeHTML  = "text/html"
	TypeOctet = "application/octet-stream"
)

// Negotiate returns the media type that the type string typ chooses
// (docs/wire.md#choosing-a-representation): typ is split on commas and white
// space and lower-cased; */* adds application/json; the first of
// application/json, text/xml, text/plain and text/html present wins;
// otherwise application/octet-stream (with the plain form). An empty typ
// chooses application/json.
func Negotiate(typ string) string {
	if typ == TypeJSON || typ == "" { // the default ACCEPT, without a scan
		return TypeJSON
	}
	var json, xml, plain, html, any bool
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
			case strings.EqualFold(f, TypeHTML):
				html = true
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
	case html:
		return TypeHTML
	}
	return TypeOctet
}

func isTypeSep(c byte) bool {
	return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
