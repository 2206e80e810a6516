package core

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// The types that unwrapValue converts values of convertible types to.
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

// recordFromStruct makes a record of the visible fields of a struct, in
// field order, named as [structField] decides.
func recordFromStruct(rv reflect.Value) Record {
	t := rv.Type()
	r := make(Record, 0, t.NumField())
	for i := range t.NumField() {
		if name, ok := structField(t.Field(i)); ok {
			r = append(r, Field{Name: name, Value: rv.Field(i).Interface()})
		}
	}
	return r
}

func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
