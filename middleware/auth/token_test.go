package auth

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"
)

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestMakeToken(t *testing.T) {
	at := time.Unix(0x65a1b2c3, 0)
	tok := makeToken(testSecret, 42, at)
	want := md5hex(string(testSecret)+"42"+"0065a1b2c3") + "0065a1b2c3"
	if tok != want {
		t.Fatalf("makeToken = %q, want %q", tok, want)
	}
	if len(tok) != 42 || !validToken(testSecret, 42, tok) {
		t.Errorf("token %q not valid", tok)
	}
	for name, bad := range map[string]string{
		"other id":     makeToken(testSecret, 43, at),
		"other secret": makeToken([]byte("other"), 42, at),
		"upper case":   strings.ToUpper(tok),
		"short":        tok[:41],
		"long":         tok + "0",
		"changed time": tok[:32] + "0065a1b2c4",
		"non-hex":      tok[:41] + "g",
		"empty":        "",
	} {
		if validToken(testSecret, 42, bad) {
			t.Errorf("%s: %q accepted", name, bad)
		}
	}
	if got := makeToken(testSecret, 1, time.Unix(0, 0)); !strings.HasSuffix(got, "0000000000") {
		t.Errorf("zero time: %q", got)
	}
}

func TestAdminToken(t *testing.T) {
	if got, want := AdminToken(testSecret), md5hex("admin::"+string(testSecret)); got != want {
		t.Errorf("AdminToken = %q, want %q", got, want)
	}
}

func TestHashPassword(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tt := range [][3]string{{"a@b", "localhost", ""}, {"a@b", "localhost", "p:w"}, {long, "r", long}} {
		if got, want := HashPassword(tt[0], tt[1], tt[2]), md5hex(tt[0]+":"+tt[1]+":"+tt[2]); got != want {
			t.Errorf("HashPassword%q = %q, want %q", tt, got, want)
		}
	}
}

func TestEqual(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{{"x", "x", true}, {"x", "y", false}, {"", "", false}, {"x", "", false}, {"xx", "x", false}} {
		if got := equal(tt.a, tt.b); got != tt.want {
			t.Errorf("equal(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

func ExampleAdminToken() {
	fmt.Println(AdminToken([]byte("s3cret")))
	// Output: 7fb4dcc709e54c14567a528d7dd9c41f
}
