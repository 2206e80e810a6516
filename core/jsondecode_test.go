package core

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestDecodeJSON(t *testing.T) {
	cases := []struct {
		name, in, want string // want: the canonical JSON; "" for an error
	}{
		{"object order", `{"z": 1, "a": 2}`, `{"z": 1, "a": 2}`},
		{"nested order", `{"z":{"y":[1,{"b":0,"a":1}]},"a":null}`, `{"z": {"y": [1, {"b": 0, "a": 1}]}, "a": null}`},
		{"repeated name last value first place", `{"a": 1, "b": 2, "a": 3}`, `{"a": 3, "b": 2}`},
		{"repeated name many fields", `{"f0":0,"f1":1,"f2":2,"f3":3,"f4":4,"f5":5,"f6":6,"f7":7,"f8":8,"f9":9,"f10":10,"f11":11,"f12":12,"f13":13,"f14":14,"f15":15,"f16":16,"f17":17,"f1":"x","f17":"y"}`,
			`{"f0": 0, "f1": "x", "f2": 2, "f3": 3, "f4": 4, "f5": 5, "f6": 6, "f7": 7, "f8": 8, "f9": 9, "f10": 10, "f11": 11, "f12": 12, "f13": 13, "f14": 14, "f15": 15, "f16": 16, "f17": "y"}`},
		{"empty containers", ` { } `, `{}`},
		{"empty list", "[\t]\r\n", `[]`},
		{"integer", `-12`, `-12`},
		{"minus zero integer", `-0`, `0`},
		{"int64 max", `9223372036854775807`, `9223372036854775807`},
		{"past int64", `9223372036854775808`, `9.223372036854776e+18`},
		{"integral float", `1.0`, `1.0`},
		{"exponent", `1E2`, `100.0`},
		{"small", `1e-5`, `1e-05`},
		{"huge", `1e999`, `null`},
		{"literals", `[true, false, null]`, `[true, false, null]`},
		{"escapes", `"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"`, `"a\"\\/\b\f\n\r\t\u00e9\ud83d\ude00"`},
		{"lone surrogate", `"\ud800x"`, `"\ufffdx"`},
		{"bad pair", `"\ud800\u0041"`, `"\ufffdA"`},
		{"invalid utf-8", "\"a\xffb\"", `"a\ufffdb"`},
		{"raw utf-8", `"Köln"`, `"K\u00f6ln"`},
		{"empty", ``, ""},
		{"space only", ` `, ""},
		{"trailing value", `1 2`, ""},
		{"trailing garbage", `{}x`, ""},
		{"two values", `{} {}`, ""},
		{"leading zero", `01`, ""},
		{"bare minus", `-`, ""},
		{"bare dot", `1.`, ""},
		{"bare exponent", `1e`, ""},
		{"plus sign", `+1`, ""},
		{"NaN", `NaN`, ""},
		{"single quotes", `'a'`, ""},
		{"unquoted name", `{a: 1}`, ""},
		{"trailing comma", `[1,]`, ""},
		{"object trailing comma", `{"a": 1,}`, ""},
		{"missing colon", `{"a" 1}`, ""},
		{"unterminated string", `"abc`, ""},
		{"control in string", "\"a\nb\"", ""},
		{"bad escape", `"\x"`, ""},
		{"short unicode escape", `"\u12"`, ""},
		{"bad literal", `tru`, ""},
		{"unclosed array", `[1, 2`, ""},
		{"unclosed object", `{"a": 1`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := DecodeJSON([]byte(c.in))
			if c.want == "" {
				var je *JSONError
				if !errors.As(err, &je) {
					t.Fatalf("got %#v, %v; want a *JSONError", v, err)
				}
				if json.Valid([]byte(c.in)) {
					t.Errorf("encoding/json accepts %q", c.in)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(AppendJSON(nil, v)); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestDecodeJSONTypes(t *testing.T) {
	v, err := DecodeJSON([]byte(`{"i": 1, "f": 1.5, "l": [], "r": {}, "s": "x", "b": true, "n": null}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Record{
		{Name: "i", Value: int64(1)}, {Name: "f", Value: 1.5}, {Name: "l", Value: List{}},
		{Name: "r", Value: Record{}}, {Name: "s", Value: "x"}, {Name: "b", Value: true}, {Name: "n", Value: nil},
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got %#v\nwant %#v", v, want)
	}
	if v, _ := DecodeJSON([]byte(`-1e400`)); v != math.Inf(-1) {
		t.Errorf("-1e400: %v", v)
	}
}

func TestDecodeJSONDepth(t *testing.T) {
	for _, c := range []struct {
		name  string
		depth int
		ok    bool
	}{
		{"at the limit", MaxJSONDepth, true},
		{"past the limit", MaxJSONDepth + 1, false},
		{"far past the limit", 1 << 20, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, open := range []string{"[", `{"a":`} {
				closer := "]"
				if open != "[" {
					closer = "}"
				}
				doc := strings.Repeat(open, c.depth) + "1" + strings.Repeat(closer, c.depth)
				_, err := DecodeJSON([]byte(doc))
				if (err == nil) != c.ok {
					t.Errorf("%s x %d: %v", open, c.depth, err)
				}
			}
		})
	}
}

// TestPutJSONKeepsOrder stores a JSON object through a resource and reads
// it back: the fields come out in the order they were sent.
func TestPutJSONKeepsOrder(t *testing.T) {
	var (
		mu     sync.Mutex
		stored any
	)
	h := HTTP(Resource(resourceFuncs{
		get: func(context.Context, *Request) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			return stored, nil
		},
		put: func(_ context.Context, r *Request) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			stored = r.Entity
			return nil, nil
		},
	}))
	const body = `{"z": 1, "a": [{"y": true, "b": null}], "m": "K\u00f6ln"}`
	put := httptest.NewRequest(http.MethodPut, "/", strings.NewReader(body))
	put.Header.Set("Content-Type", "application/json")
	put.Header.Set("Content-Length", strconv.Itoa(len(body)))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, put)
	if w.Code != http.StatusOK {
		t.Fatalf("PUT: %d %s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	if got := w.Body.String(); got != body {
		t.Errorf("GET: %s\nwant %s", got, body)
	}
}

// FuzzDecodeJSON checks that DecodeJSON never panics, accepts what
// encoding/json accepts, and that its result renders as the canonical form
// of the input: JSON that means what the input means (as encoding/json
// reads both) and that decodes and renders to itself.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"z": 1, "a": 2}`, `[1, 2.5, -0, 1e999, "x"]`, `{"a":1,"a":2}`, `"\ud800\udc00\ud800"`,
		`{"a": {"b": [true, false, null]}}`, "\"\xff\"", `[[[[]]]]`, `1 2`, `{"a" 1}`, ` 0.5e-3 `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := DecodeJSON(in)
		if err != nil {
			if json.Valid(in) && !strings.Contains(err.Error(), "nested too deeply") {
				t.Fatalf("refused %q, which encoding/json accepts: %v", in, err)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("accepted %q, which encoding/json refuses", in)
		}
		if jsonDepth(v) > maxRenderDepth {
			return // renders as none past the render depth
		}
		out := AppendJSON(nil, v)
		if !json.Valid(out) {
			t.Fatalf("%q renders as invalid JSON %q", in, out)
		}
		v2, err := DecodeJSON(out)
		if err != nil {
			t.Fatalf("%q: its rendering %q does not decode: %v", in, out, err)
		}
		if out2 := AppendJSON(nil, v2); string(out2) != string(out) {
			t.Fatalf("%q: not canonical: %q then %q", in, out, out2)
		}
		var want, got any
		if json.Unmarshal(in, &want) != nil {
			return // a number past the float64 range
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q: %q: %v", in, out, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q renders as %q, which means something else", in, out)
		}
	})
}

// jsonDepth is the nesting depth of a decoded value as the renderers count it.
func jsonDepth(v any) int {
	d := 0
	switch x := v.(type) {
	case Record:
		for _, f := range x {
			d = max(d, jsonDepth(f.Value))
		}
		return d + 1
	case List:
		for _, e := range x {
			d = max(d, jsonDepth(e))
		}
		return d + 1
	}
	return 0
}
