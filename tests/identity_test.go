package tests

import (
	"testing"
)

// TestOptionalIdentity: GET /hello-whoami of the hello plugin takes an
// optional identity (plugins.IdentityOptional), compiled in and with
// -isolate all: an anonymous caller is served with no challenge and no
// cookie; a Basic login is served with the caller and gets the session
// cookies; the cookie session is served with the caller and sets nothing;
// a wrong password is 401, never anonymous.
func TestOptionalIdentity(t *testing.T) {
	t.Parallel()
	hello := helloPlugin(t)
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := authStart(t, m, "-plugin", "hello="+hello)

		r := s.get(t, "/hello-whoami")
		check(t, r, want{ok200, jsonCT, `{"whoami": "anonymous"}`})
		if ch, sc := r.Header.Values("Www-Authenticate"), r.Header.Values("Set-Cookie"); len(ch) != 0 || len(sc) != 0 {
			t.Errorf("anonymous: WWW-Authenticate %q, Set-Cookie %q", ch, sc)
		}

		r = s.get(t, "/hello-whoami", authBasic(authEmail, authPassword))
		check(t, r, want{ok200, jsonCT, `{"whoami": "` + authEmail + `"}`})
		tok, uid := cookieNamed(r, "token"), cookieNamed(r, "user_id")
		if tok == nil || uid == nil || !authTokenRe.MatchString(tok.Value) {
			t.Fatalf("Basic: Set-Cookie %q, want token and user_id", r.Header.Values("Set-Cookie"))
		}

		r = s.get(t, "/xml/hello-whoami", authCookies(uid.Value, tok.Value))
		check(t, r, want{ok200, xmlCT, `<whoami>` + authEmail + `</whoami>`})
		if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Errorf("cookie session: Set-Cookie %q", sc)
		}

		r = s.get(t, "/hello-whoami", authBasic(authEmail, "wrong"))
		authWant(t, r, "401 Unauthorized", "401 Unauthorized\n")
		if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Errorf("wrong password: Set-Cookie %q", sc)
		}

		// The route of the example application that requires an identity
		// still does.
		authWant(t, s.get(t, "/private/x"), "401 Unauthorized", "401 Unauthorized\n")
	})
}
