package core

// Render renders v in the representation that typ chooses (see [Negotiate])
// and returns the Content-Type and the body. text/html gives the page of
// [AppendHTML] with no title and no link prefix, of Content-Type
// [ContentTypeHTML].
func Render(typ string, v any) (contentType string, body []byte) {
	// One allocation covers most answers; larger ones grow as needed.
	return appendRendered(make([]byte, 0, 512), typ, nil, v)
}

// maxRenderDepth bounds the nesting of a rendered value: every container
// level, every [Valuer] conversion and every pointer dereference counts as one
// level. Deeper values render as none, which stops self-referencing values
// (a Valuer returning itself, a pointer cycle) from recursing forever.
const maxRenderDepth = 64
