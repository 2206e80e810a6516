package channel

import (
	"strings"
	"testing"
)

// TestParseResourceForms checks the one rule every door reads a path with
// (docs/channel.md#the-tree): no empty segment, no trailing slash, no "."
// or "..", the root alone as "/".
func TestParseResourceForms(t *testing.T) {
	for s, ok := range map[string]bool{
		"/":                            true,
		"/?deep=0":                     true,
		"/b":                           true,
		"/b/c":                         true,
		"/b[k]":                        true,
		"/b?deep=2":                    true,
		"":                             false,
		"b":                            false,
		"//":                           false,
		"//b":                          false,
		"/b/":                          false,
		"/b//c":                        false,
		"/b/./c":                       false,
		"/b/..":                        false,
		"/b/?deep=1":                   false,
		"/b/[k]":                       false,
		"/" + strings.Repeat("s", 256): false,
		strings.Repeat("/s", 33):       false,
	} {
		if _, got := parseResource(s); got != ok {
			t.Errorf("parseResource(%q): %v, want %v", s, got, ok)
		}
	}
}
