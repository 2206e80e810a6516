package users

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reso-project/reso/core"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, in, json, err string
	}{
		{"order kept", `[{"username": "z", "b": 1, "a": [true, null, 1.5]}]`, `[{"username": "z", "b": 1, "a": [true, null, 1.5]}]`, ""},
		{"nested objects", `[{"username": "u", "o": {"y": 1, "x": 2}}]`, `[{"username": "u", "o": {"y": 1, "x": 2}}]`, ""},
		{"empty list", `[]`, `[]`, ""},
		{"not a list", `{"username": "u"}`, "", "want a JSON list"},
		{"not records", `["u"]`, "", "record 0 is not an object"},
		{"no username", `[{"username": "a"}, {"name": "b"}]`, "", "record 1 has no username"},
		{"username not text", `[{"username": 3}]`, "", "username is not a string"},
		{"trailing", `[] []`, "", "trailing data"},
		{"broken", `[{"username": `, "", "users:"},
		{"repeated name", `[{"username": "a", "x": 1, "username": "b"}]`, `[{"username": "b", "x": 1}]`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			list, err := Parse([]byte(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(core.AppendJSON(nil, list)); got != c.json {
				t.Errorf("%s\nwant %s", got, c.json)
			}
		})
	}
}

func TestLoadMissing(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Fatal("loaded a missing file")
	}
	f := filepath.Join(t.TempDir(), "u.json")
	os.WriteFile(f, []byte(`[{"username": "x"}]`), 0o644)
	if l, err := Load(f); err != nil || len(l) != 1 {
		t.Fatalf("%v %v", l, err)
	}
}

func TestExample(t *testing.T) {
	want := `[{"username": "alice", "name": "Alice Example", "email": "alice@example.org"}, {"username": "bob"}]`
	if got := string(core.AppendJSON(nil, Example())); got != want {
		t.Errorf("%s", got)
	}
}
