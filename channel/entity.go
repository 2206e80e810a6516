package channel

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Entities are kept as compact JSON bytes exactly as the client wrote
// them (field order kept); the functions here work on the top level of
// such bytes without decoding the values.

// errNotObject reports an entity that must be a JSON object and is not.
var errNotObject = errors.New("channel: entity is not an object")

// compactJSON validates raw JSON and returns it without insignificant
// white space. It returns raw itself when raw is already compact.
func compactJSON(raw []byte) ([]byte, error) {
	if isCompact(raw) {
		if !json.Valid(raw) {
			return nil, errors.New("channel: invalid JSON")
		}
		return raw, nil
	}
	var b bytes.Buffer
	b.Grow(len(raw))
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// compactValid is compactJSON for raw known to be valid JSON (read by
// parseMessage): compact raw is returned as it is, without a second pass
// to check it.
func compactValid(raw []byte) ([]byte, error) {
	if isCompact(raw) {
		return raw, nil
	}
	return compactJSON(raw)
}

// isCompact reports whether raw holds no white space outside strings.
func isCompact(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

// field is one top-level member of a compact JSON object.
type field struct {
	key []byte // the name as written, quotes included
	val []byte // the value as written
}

// name returns the field's name decoded.
func (f field) name() string {
	if bytes.IndexByte(f.key, '\\') < 0 {
		return string(f.key[1 : len(f.key)-1])
	}
	var s string
	if json.Unmarshal(f.key, &s) != nil {
		return ""
	}
	return s
}

// private reports whether the field's name starts with '_'.
func (f field) private() bool {
	if len(f.key) > 1 && f.key[1] == '_' {
		return true
	}
	if len(f.key) > 2 && f.key[1] == '\\' {
		n := f.name()
		return n != "" && n[0] == '_'
	}
	return false
}

// fields splits a compact JSON object into its top-level members, in
// order. It fails when obj is not an object.
func fields(obj []byte) ([]field, error) {
	if len(obj) < 2 || obj[0] != '{' {
		return nil, errNotObject
	}
	var fs []field
	i := 1
	if obj[i] == '}' {
		return fs, nil
	}
	for i < len(obj) {
		k := skipValue(obj, i)
		v := skipValue(obj, k+1)
		fs = append(fs, field{key: obj[i:k], val: obj[k+1 : v]})
		if v >= len(obj) || obj[v] == '}' {
			break
		}
		i = v + 1
	}
	return fs, nil
}

// skipValue returns the index just past the compact JSON value at i.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return len(b)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipValue(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default:
		for ; i < len(b); i++ {
			switch b[i] {
			case ',', '}', ']':
				return i
			}
		}
		return len(b)
	}
}

// joinFields writes fields as a compact JSON object.
func joinFields(fs []field) []byte {
	n := 2
	for _, f := range fs {
		n += len(f.key) + len(f.val) + 2
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, f.key...)
		b = append(b, ':')
		b = append(b, f.val...)
	}
	return append(b, '}')
}

// publicEntity returns e without its private fields, those whose names
// start with '_', at any depth: in the object itself and in every object
// nested in it, in objects and arrays alike. It returns e itself when
// there is none.
func publicEntity(e []byte) []byte {
	if len(e) == 0 || e[0] != '{' && e[0] != '[' || bytes.IndexByte(e, '_') < 0 && bytes.IndexByte(e, '\\') < 0 {
		return e
	}
	p := appendPublic(make([]byte, 0, len(e)), e)
	if len(p) == len(e) {
		return e // nothing was left out
	}
	return p
}

// appendPublic appends the compact JSON value v without its private
// fields at any depth.
func appendPublic(b, v []byte) []byte {
	switch {
	case len(v) > 1 && v[0] == '{':
		fs, err := fields(v)
		if err != nil {
			return append(b, v...)
		}
		b = append(b, '{')
		first := true
		for _, f := range fs {
			if f.private() {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, f.key...)
			b = append(b, ':')
			b = appendPublic(b, f.val)
		}
		return append(b, '}')
	case len(v) > 1 && v[0] == '[':
		b = append(b, '[')
		for i := 1; i < len(v) && v[i] != ']'; {
			j := skipValue(v, i)
			if i > 1 {
				b = append(b, ',')
			}
			b = appendPublic(b, v[i:j])
			i = j + 1
		}
		return append(b, ']')
	}
	return append(b, v...)
}

// mergeEntity returns old with the top-level fields of upd merged in:
// a field already there gets the new value in its place, a new one is
// added at the end. Both must be objects.
func mergeEntity(old, upd []byte) ([]byte, error) {
	ofs, err := fields(old)
	if err != nil {
		return nil, err
	}
	ufs, err := fields(upd)
	if err != nil {
		return nil, err
	}
	out := make([]field, len(ofs), len(ofs)+len(ufs))
	copy(out, ofs)
	idx := make(map[string]int, len(ofs))
	for i, f := range ofs {
		if _, dup := idx[f.name()]; !dup {
			idx[f.name()] = i
		}
	}
	for _, f := range ufs {
		name := f.name()
		if i, ok := idx[name]; ok {
			out[i].val = f.val
			continue
		}
		idx[name] = len(out)
		out = append(out, f)
	}
	return joinFields(out), nil
}

// entityField returns the value of the top-level field name of the
// object e.
func entityField(e []byte, name string) ([]byte, bool) {
	fs, err := fields(e)
	if err != nil {
		return nil, false
	}
	for _, f := range fs {
		if f.name() == name {
			return f.val, true
		}
	}
	return nil, false
}

// singleField returns the object {name: val}.
func singleField(name string, val []byte) []byte {
	b := AppendString(make([]byte, 0, len(name)+len(val)+8), name)
	return joinFields([]field{{key: b, val: val}})
}
