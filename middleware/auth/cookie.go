package auth

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/securecookie"
)

// Names of the session cookies set by the authenticator
// (docs/wire.md#session-cookies).
const (
	// CookieToken is the name of the cookie that holds the session token.
	CookieToken = "token"
	// CookieUserID is the name of the cookie that holds the record id.
	CookieUserID = "user_id"
)

// maxSignedCookieAge is how long a signed cookie value is accepted.
const maxSignedCookieAge = 30 * 24 * time.Hour

// sessionCookies reads the user_id and token cookies from the Cookie header
// lines; the first cookie of each name counts. With signed cookies, a value
// that does not verify counts as absent.
func (a *Authenticator) sessionCookies(r *http.Request) (userID, token string, ok bool) {
	lines := r.Header["Cookie"]
	if len(lines) == 0 {
		return "", "", false
	}
	userID, token, ok = parseCookies(lines)
	if !ok || a.codec == nil {
		return userID, token, ok
	}
	var id, tok []byte
	if a.codec.Decode(CookieUserID, userID, &id) != nil || a.codec.Decode(CookieToken, token, &tok) != nil {
		return "", "", false
	}
	return string(id), string(tok), true
}

// parseCookies finds the first user_id and token cookies in Cookie header
// lines (RFC 6265 5.4: name=value pairs separated by "; "). A value may be
// enclosed in double quotes; a pair whose value holds characters outside
// cookie-octet is skipped. It reports whether both cookies were found.
func parseCookies(lines []string) (userID, token string, ok bool) {
	var haveID, haveToken bool
	for _, line := range lines {
		for line != "" && !(haveID && haveToken) {
			var part string
			part, line, _ = strings.Cut(line, ";")
			part = strings.Trim(part, " \t")
			name, value, found := strings.Cut(part, "=")
			if !found {
				continue
			}
			var dst *string
			var have *bool
			switch name {
			case CookieUserID:
				dst, have = &userID, &haveID
			case CookieToken:
				dst, have = &token, &haveToken
			default:
				continue
			}
			if *have {
				continue
			}
			if len(value) > 1 && value[0] == '"' && value[len(value)-1] == '"' {
				value = value[1 : len(value)-1]
			}
			if value == "" || !validCookieValue(value) {
				continue
			}
			*dst, *have = value, true
		}
	}
	if !haveID || !haveToken {
		return "", "", false
	}
	return userID, token, true
}

// validCookieValue reports whether every byte of v is a cookie-octet.
func validCookieValue(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}

// cookie returns a session cookie with the attributes of every cookie the
// authenticator sets: Path=/, HttpOnly, SameSite=Lax, and Secure when the
// request came over TLS.
func cookie(secure bool, name, value string) *http.Cookie {
	return &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     "/",
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	}
}

// sessionValues returns the user_id and token cookie values of a new
// session, signed when signed cookies are on.
func (a *Authenticator) sessionValues(id int64, token string) (userID, tok string, err error) {
	userID = itoa(id)
	if a.codec == nil {
		return userID, token, nil
	}
	if userID, err = a.codec.Encode(CookieUserID, []byte(userID)); err != nil {
		return "", "", fmt.Errorf("auth: sign cookie: %w", err)
	}
	if tok, err = a.codec.Encode(CookieToken, []byte(token)); err != nil {
		return "", "", fmt.Errorf("auth: sign cookie: %w", err)
	}
	return userID, tok, nil
}

// expireCookie tells the client to drop a cookie: empty value, Max-Age=0
// and an Expires in the past.
func expireCookie(w http.ResponseWriter, secure bool, name string) {
	c := cookie(secure, name, "")
	c.MaxAge = -1
	c.Expires = time.Unix(0, 0)
	http.SetCookie(w, c)
}

// newCodec returns the signing codec of -signed-cookies, keyed from the
// instance secret.
func newCodec(secret []byte) *securecookie.SecureCookie {
	key := deriveKey(secret, "reso auth cookie")
	return securecookie.New(key, nil).
		SetSerializer(securecookie.NopEncoder{}).
		MaxAge(int(maxSignedCookieAge / time.Second))
}
