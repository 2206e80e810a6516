package core

import (
	"context"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Bind returns a [Handler] that exposes obj read-only by path as a bound
// object (docs/wire.md#bound-objects). Only GET (and HEAD, answered as GET
// without a body) is served; other methods answer 405 Method Not Allowed.
//
// The remaining path is split into segments (empty ones are skipped). Each
// segment indexes a slice or array by a non-negative integer, a map with
// string keys by key, a [Record] by field name, or a struct by the name its
// fields render under (the name of the json tag, else the Go name; fields
// tagged json:"-" and unexported fields cannot be reached). A segment that
// cannot be applied (not a number, out of range, absent key or field)
// answers 400 Invalid Scope; segments left after a nil value answer 404 Object Not Found.
//
// The result is the node "result": for a list, a list of nodes
// url: <path>/<index>; for a map or Record, its fields with text values as
// they are and other values as <path>/<key>; otherwise the value itself.
// <path> is the consumed path followed by the segments walked, so every url
// addresses the value it names. obj is read on every request: the caller
// keeps it unchanged while the handler is in use.
func Bind(obj any) Handler {
	return HandlerFunc(func(ctx context.Context, req *Request) (*Response, error) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			return nil, ErrMethodNotAllowed
		}
		base := strings.TrimSuffix(req.Consumed, "/")
		cur := obj
		for _, seg := range strings.Split(req.Path, "/") {
			if seg == "" {
				continue
			}
			if isNone(cur) {
				return nil, ErrObjectNotFound
			}
			next, ok := bindStep(cur, seg)
			if !ok {
				return nil, ErrInvalidScope
			}
			cur = next
			base += "/" + seg
		}
		return Value(req, Node{Name: "result", Content: bound(cur, base)}), nil
	})
}

func isNone(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		return rv.IsNil()
	}
	return false
}

func bindStep(cur any, seg string) (any, bool) {
	if r, ok := cur.(Record); ok {
		return r.Get(seg)
	}
	rv := reflect.Indirect(reflect.ValueOf(cur))
	for rv.Kind() == reflect.Interface {
		rv = reflect.Indirect(rv.Elem())
	}
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= rv.Len() || seg != strconv.Itoa(i) {
			return nil, false
		}
		return rv.Index(i).Interface(), true
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, false
		}
		v := rv.MapIndex(reflect.ValueOf(seg).Convert(rv.Type().Key()))
		if !v.IsValid() {
			return nil, false
		}
		return v.Interface(), true
	case reflect.Struct:
		t := rv.Type()
		for i := 0; i < t.NumField(); i++ {
			if name, ok := structField(t.Field(i)); ok && name == seg {
				return rv.Field(i).Interface(), true
			}
		}
	}
	return nil, false
}

func bound(cur any, base string) any {
	if r, ok := cur.(Record); ok {
		out := make(Record, len(r))
		for i, f := range r {
			out[i] = Field{Name: f.Name, Value: textOrURL(f.Value, base, f.Name)}
		}
		return out
	}
	if cur == nil {
		return nil
	}
	rv := reflect.Indirect(reflect.ValueOf(cur))
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if _, isBytes := cur.([]byte); isBytes {
			return cur
		}
		out := make(List, rv.Len())
		for i := range out {
			out[i] = Node{Name: "url", Content: base + "/" + strconv.Itoa(i)}
		}
		return out
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return cur
		}
		keys := rv.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		out := make(Record, len(keys))
		for i, k := range keys {
			out[i] = Field{Name: k.String(), Value: textOrURL(rv.MapIndex(k).Interface(), base, k.String())}
		}
		return out
	}
	return cur
}

func textOrURL(v any, base, key string) any {
	if s, ok := v.(string); ok {
		return s
	}
	return base + "/" + key
}
