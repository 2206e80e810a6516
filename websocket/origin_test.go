package websocket

import (
	"net/http/httptest"
	"testing"
)

func TestOriginAllowed(t *testing.T) {
	patterns := []string{"example.org", "*.example.net", "http://localhost:3000"}
	var parsed []originPattern
	for _, p := range patterns {
		o, err := parseOrigin(p)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, o)
	}
	tests := []struct {
		name, host, origin string
		want               bool
	}{
		{"no origin", "reso.test", "", true},
		{"same host", "reso.test:8080", "http://reso.test:8080", true},
		{"same host other case", "reso.test", "https://RESO.test", true},
		{"same name other port", "reso.test:8080", "http://reso.test:9090", false},
		{"other host", "reso.test", "http://evil.test", false},
		{"listed host", "reso.test", "https://example.org", true},
		{"listed host other port", "reso.test", "https://example.org:8443", false},
		{"subdomain", "reso.test", "https://a.b.example.net", true},
		{"wildcard excludes the domain itself", "reso.test", "https://example.net", false},
		{"suffix is not a subdomain", "reso.test", "https://badexample.net", false},
		{"scheme and port", "reso.test", "http://localhost:3000", true},
		{"other scheme", "reso.test", "https://localhost:3000", false},
		{"null origin", "reso.test", "null", false},
		{"garbage", "reso.test", "::", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://"+tt.host+"/channel", nil)
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			if got := originAllowed(r, parsed); got != tt.want {
				t.Errorf("originAllowed(Host %s, Origin %q) = %v, want %v", tt.host, tt.origin, got, tt.want)
			}
		})
	}
}

func TestOriginAny(t *testing.T) {
	o, err := parseOrigin("*")
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "http://reso.test/", nil)
	r.Header.Set("Origin", "https://anything.test")
	if !originAllowed(r, []originPattern{o}) {
		t.Error(`"*" refused an origin`)
	}
}

func TestParseOriginInvalid(t *testing.T) {
	for _, p := range []string{"", "://x", "example.org/path", "a.*.org", "*example.org", "user@host", "http://"} {
		if _, err := parseOrigin(p); err == nil {
			t.Errorf("parseOrigin(%q) succeeded", p)
		}
	}
	if err := (Options{Origins: []string{"ok.test", "bad/"}}).Validate(); err == nil {
		t.Error("Validate accepted a bad origin pattern")
	}
}
