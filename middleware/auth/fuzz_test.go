package auth

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reso-project/reso/core"
)

func FuzzParseBasic(f *testing.F) {
	for _, s := range []string{
		"Basic " + base64.StdEncoding.EncodeToString([]byte("a@b:p:w")),
		"basic   dXNlcjpwYXNz  ",
		"Basic !!!", "Basic", "Basic dXNlcg==", "Bearer x", "", "Basic =", "Basic\tYTpi",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		email, password, ok := parseBasic(h)
		if !ok {
			if email != "" || password != "" {
				t.Fatalf("values on failure: %q %q", email, password)
			}
			return
		}
		if strings.Contains(email, ":") {
			t.Fatalf("e-mail %q holds a colon", email)
		}
		again := "Basic " + base64.StdEncoding.EncodeToString([]byte(email+":"+password))
		if e, p, ok := parseBasic(again); !ok || e != email || p != password {
			t.Fatalf("round trip of %q, %q: %q, %q, %v", email, password, e, p, ok)
		}
	})
}

func FuzzParseDigest(f *testing.F) {
	for _, s := range []string{
		`Digest username="a", realm="localhost", nonce="n", uri="/x", response="r", qop=auth, nc=00000001, cnonce="c"`,
		`digest username="a\"b", realm=r, nonce=n, uri="/", response=x,,`,
		`Digest username="a`, `Digest =`, `Digest a=b c=d`, `Digest`, `Digest username="\`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		d, ok := parseDigest(h)
		if !ok {
			if d != (digestCreds{}) {
				t.Fatalf("values on failure: %+v", d)
			}
			return
		}
		// What parsed must parse again the same when written back quoted.
		fields := []struct{ name, value string }{
			{"username", d.username}, {"realm", d.realm}, {"nonce", d.nonce}, {"uri", d.uri},
			{"response", d.response}, {"algorithm", d.algorithm}, {"cnonce", d.cnonce},
			{"opaque", d.opaque}, {"qop", d.qop}, {"nc", d.nc}, {"userhash", d.userhash},
		}
		var b strings.Builder
		b.WriteString("Digest ")
		for i, p := range fields {
			if i >= 5 && p.value == "" {
				continue
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(p.name + "=" + quote(p.value))
		}
		if d2, ok := parseDigest(b.String()); !ok || d2 != d {
			t.Fatalf("round trip of %+v via %q: %+v, %v", d, b.String(), d2, ok)
		}
	})
}

func FuzzParseCookies(f *testing.F) {
	for _, s := range []string{
		"user_id=1; token=abc", `user_id="1"; token="x"`, "token=; user_id=1; token=b",
		"a=b;user_id=1;;token=t", "user_id=1", `user_id="; token=x`, "",
	} {
		f.Add(s, "token=second")
	}
	f.Fuzz(func(t *testing.T, line1, line2 string) {
		uid, tok, ok := parseCookies([]string{line1, line2}, CookieUserID, CookieToken)
		if !ok {
			if uid != "" || tok != "" {
				t.Fatalf("values on failure: %q %q", uid, tok)
			}
			return
		}
		if uid == "" || tok == "" || !validCookieValue(uid) || !validCookieValue(tok) {
			t.Fatalf("invalid values %q %q", uid, tok)
		}
		if !strings.Contains(line1+line2, uid) || !strings.Contains(line1+line2, tok) {
			t.Fatalf("values %q %q not in the input", uid, tok)
		}
	})
}

// FuzzLogin runs arbitrary Authorization and Cookie headers and route
// groups through every check: it must never panic, and every failure is a
// 401 or 404 status error.
func FuzzLogin(f *testing.F) {
	st := newMemStore()
	a, err := New(Config{Store: st, Secret: testSecret, Digest: true})
	if err != nil {
		f.Fatal(err)
	}
	id, err := a.Register(context.Background(), testEmail, testPassword)
	if err != nil {
		f.Fatal(err)
	}
	rec, _ := st.ByID(context.Background(), id)
	f.Add("", "user_id=1; token="+rec.Token, "", "", "")
	f.Add("Basic "+base64.StdEncoding.EncodeToString([]byte(testEmail+":x")), "", "", "", "")
	f.Add("", "", "1", "", rec.Token)
	f.Add("", "", "", "admin", "x")
	f.Add(`Digest username="user@example.com", realm="localhost", nonce="x", uri="/", response="r", qop=auth, nc=00000001, cnonce="c"`, "", "", "", "")
	f.Fuzz(func(t *testing.T, authz, cookie, uid, email, token string) {
		r := httptest.NewRequest("GET", "/", nil)
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		if cookie != "" {
			r.Header.Set("Cookie", cookie)
		}
		req := &core.Request{Vars: map[string]string{"user_id": uid, "email": email, "token": token}}
		r = r.WithContext(core.NewContext(r.Context(), req))
		w := httptest.NewRecorder()
		ident, err := login(a, w, r)
		if err == nil {
			if ident == nil {
				t.Fatal("no identity and no error")
			}
			return
		}
		se, ok := core.AsStatus(err)
		if !ok || (se.Code() != http.StatusUnauthorized && se.Code() != http.StatusNotFound) {
			t.Fatalf("error %v", err)
		}
		if se.Code() == http.StatusUnauthorized && w.Header().Get("Www-Authenticate") != basicChallenge {
			t.Fatalf("401 without the challenge: %q", w.Header())
		}
		if strings.Contains(strings.Join(w.Header()["Set-Cookie"], "\n"), AdminToken(testSecret)) {
			t.Fatal("the administrator token travels in a response")
		}
	})
}
