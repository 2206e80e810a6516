package channel

import (
	"encoding/json"
	"testing"
)

// TestAppendString checks the JSON strings of frames and of the
// messages doors build.
func TestAppendString(t *testing.T) {
	cases := map[string]string{
		"/a?x=1&y=<2>": `"/a?x=1&y=<2>"`,
		"q\"b\\c":      `"q\"b\\c"`,
		"\x01\n":       `"\u0001\n"`,
		"a\u2028b":     `"a\u2028b"`,
		"caf\xc3\xa9":  "\"caf\xc3\xa9\"",
		"bad\xff":      `"bad\ufffd"`,
	}
	for in, want := range cases {
		got := string(AppendString(nil, in))
		if got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Errorf("%q: %s is not JSON: %v", in, got, err)
		}
	}
}
