package core

import (
	"reflect"
	"strings"
)

// structField decides the name and visibility of the field sf of a struct,
// the one rule that the renderers ([AppendJSON], [AppendXML], [AppendText])
// and [Bind] share, so that every field a renderer writes can be addressed
// by that name and no other field can:
//
//   - An unexported field is invisible; so is an embedded field of an
//     unexported type. An embedded field of an exported type is an ordinary
//     field named by its type: embedded structs are not flattened.
//   - A field tagged json:"-" is invisible.
//   - Otherwise the name is the part of the json tag before the first comma
//     when it is not empty (json:"-," names the field "-"), else the Go name.
//
// The tag's options (omitempty, omitzero, string) are ignored: visibility
// never depends on the value. The name is used as written in the tag. Two
// fields of the same name are both rendered; [Bind] finds the first.
func structField(sf reflect.StructField) (name string, visible bool) {
	if !sf.IsExported() {
		return "", false
	}
	tag, ok := sf.Tag.Lookup("json")
	if !ok {
		return sf.Name, true
	}
	if tag == "-" {
		return "", false
	}
	if name, _, _ = strings.Cut(tag, ","); name != "" {
		return name, true
	}
	return sf.Name, true
}
