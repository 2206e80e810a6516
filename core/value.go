package core

// Node is a named node: it renders as {name: content} in JSON and as
// <name>content</name> in XML.
type Node struct {
	Name    string
	Content any
}

// Field is one named field of a [Record].
type Field struct {
	Name  string
	Value any
}

// Record is a sequence of named fields whose order is kept on the wire.
type Record []Field

// List is an ordered list of values.
type List []any

// Get returns the value of the first field called name and whether there is one.
func (r Record) Get(name string) (any, bool) {
	for _, f := range r {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// Valuer is implemented by types that convert themselves to a unified value
// before rendering.
type Valuer interface {
	Value() any
}

// JSONAppender is implemented by types that supply their own JSON form. The
// appended bytes must be valid JSON.
type JSONAppender interface {
	AppendJSON(dst []byte) []byte
}

// XMLAppender is implemented by types that supply their own XML form. The
// appended bytes must be a well-formed XML fragment.
type XMLAppender interface {
	AppendXML(dst []byte) []byte
}
