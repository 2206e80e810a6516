package core

import (
	"context"
	"reflect"
	"testing"
)

type Embedded struct{ E int }

type embeddedHidden struct{ H int }

// tagged has one field per case of the naming rule.
type tagged struct {
	Plain     int
	Named     int `json:"named"`
	Skipped   int `json:"-"`
	Dash      int `json:"-,"`
	OmitEmpty int `json:"omit,omitempty"`
	OnlyOpts  int `json:",omitempty"`
	Empty     int `json:""`
	Other     int `xml:"other"`
	Spaced    int `json:"a b"`
	unexp     int
	Embedded
	*embeddedHidden
	Tagged Embedded `json:"emb"`
}

func TestStructField(t *testing.T) {
	want := []struct {
		field   string
		name    string
		visible bool
	}{
		{"Plain", "Plain", true},
		{"Named", "named", true},
		{"Skipped", "", false},
		{"Dash", "-", true},
		{"OmitEmpty", "omit", true},
		{"OnlyOpts", "OnlyOpts", true},
		{"Empty", "Empty", true},
		{"Other", "Other", true},
		{"Spaced", "a b", true},
		{"unexp", "", false},
		{"Embedded", "Embedded", true},
		{"embeddedHidden", "", false},
		{"Tagged", "emb", true},
	}
	typ := reflect.TypeFor[tagged]()
	if typ.NumField() != len(want) {
		t.Fatalf("%d fields, %d cases", typ.NumField(), len(want))
	}
	for i, w := range want {
		t.Run(w.field, func(t *testing.T) {
			sf := typ.Field(i)
			if sf.Name != w.field {
				t.Fatalf("field %d is %s", i, sf.Name)
			}
			name, visible := structField(sf)
			if name != w.name || visible != w.visible {
				t.Errorf("structField(%s `%s`) = %q, %v; want %q, %v", sf.Name, sf.Tag, name, visible, w.name, w.visible)
			}
		})
	}
}

// TestStructFieldRenderBind checks that the renderers write exactly the
// fields that Bind can address, under the same names.
func TestStructFieldRenderBind(t *testing.T) {
	v := tagged{Plain: 1, Named: 2, Skipped: 3, Dash: 4, OmitEmpty: 0, OnlyOpts: 7, Empty: 8,
		Other: 9, Spaced: 10, unexp: 11, Embedded: Embedded{12}, embeddedHidden: &embeddedHidden{13}, Tagged: Embedded{14}}
	if got, want := string(AppendJSON(nil, v)),
		`{"Plain": 1, "named": 2, "-": 4, "omit": 0, "OnlyOpts": 7, "Empty": 8, "Other": 9, "a b": 10, "Embedded": {"E": 12}, "emb": {"E": 14}}`; got != want {
		t.Errorf("JSON %s\nwant %s", got, want)
	}
	if got, want := string(AppendXML(nil, v)),
		`<Plain>1</Plain><named>2</named><_->4</_-><omit>0</omit><OnlyOpts>7</OnlyOpts><Empty>8</Empty><Other>9</Other><a_b>10</a_b><Embedded><E>12</E></Embedded><emb><E>14</E></emb>`; got != want {
		t.Errorf("XML %s\nwant %s", got, want)
	}
	bind := Bind(v)
	get := func(seg string) (string, error) {
		resp, err := bind.Handle(context.Background(), &Request{Method: "GET", Path: seg, Consumed: "/"})
		if err != nil {
			return "", err
		}
		return string(resp.Body), nil
	}
	for _, f := range recordFromStruct(reflect.ValueOf(v)) {
		got, err := get(f.Name)
		want := string(AppendJSON(nil, Node{Name: "result", Content: bound(f.Value, "/"+f.Name)}))
		if err != nil || got != want {
			t.Errorf("Bind %q: %s %v; want %s", f.Name, got, err, want)
		}
	}
	for _, seg := range []string{"Skipped", "unexp", "embeddedHidden", "H", "E", "Named", "Tagged", "omitempty"} {
		if _, err := get(seg); err != ErrInvalidScope {
			t.Errorf("Bind %q: %v, want %v", seg, err, ErrInvalidScope)
		}
	}
}
