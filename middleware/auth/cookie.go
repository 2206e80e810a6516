package auth

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/securecookie"
)

// Default names of the session cookies set by the authenticator
// (docs/wire.md#session-cookies); [Cookies] chooses others.
const (
	// CookieToken is the name of the cookie that holds the session token.
	CookieToken = "token"
	// CookieUserID is the name of the cookie that holds the record id.
	CookieUserID = "user_id"
)

// DefaultCookiePath is the Path of the session cookies when
// [Cookies].Path is empty.
const DefaultCookiePath = "/"

// Cookies names the session cookies and sets their Path attribute, so that
// an authenticator mounted in a larger server neither collides with the
// host application's cookies nor sends its own to every path. An empty
// field takes its default: [CookieToken], [CookieUserID],
// [DefaultCookiePath]. With [Config].SignedCookies the values are signed
// under the names chosen here.
type Cookies struct {
	// Token is the name of the cookie that holds the session token.
	Token string
	// UserID is the name of the cookie that holds the record id.
	UserID string
	// Path is the Path attribute of both cookies, e.g. "/rt/": browsers
	// send them only to that path and below.
	Path string
}

// withDefaults returns c with its empty fields filled in, or an error when
// a name is not an RFC 6265 cookie name, the names are equal, or the path
// does not start with "/" or holds a character a Path attribute cannot
// carry (a control character or ';').
func (c Cookies) withDefaults() (Cookies, error) {
	if c.Token == "" {
		c.Token = CookieToken
	}
	if c.UserID == "" {
		c.UserID = CookieUserID
	}
	if c.Path == "" {
		c.Path = DefaultCookiePath
	}
	for _, name := range []string{c.Token, c.UserID} {
		if !validCookieName(name) {
			return Cookies{}, fmt.Errorf("auth: cookie name %q: want an RFC 6265 token (letters, digits and !#$%%&'*+-.^_`|~)", name)
		}
	}
	if c.Token == c.UserID {
		return Cookies{}, fmt.Errorf("auth: the token and user id cookies have the same name %q", c.Token)
	}
	if c.Path[0] != '/' {
		return Cookies{}, fmt.Errorf("auth: cookie path %q: want an absolute path", c.Path)
	}
	for i := 0; i < len(c.Path); i++ {
		if b := c.Path[i]; b < 0x20 || b > 0x7e || b == ';' {
			return Cookies{}, fmt.Errorf("auth: cookie path %q: want printable ASCII without ';'", c.Path)
		}
	}
	return c, nil
}

// validCookieName reports whether name is a token of RFC 7230 (RFC 6265's
// cookie-name).
func validCookieName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// maxSignedCookieAge is how long a signed cookie value is accepted.
const maxSignedCookieAge = 30 * 24 * time.Hour

// sessionCookies reads the user id and token cookies from the Cookie header
// lines; the first cookie of each name counts. With signed cookies, a value
// that does not verify counts as absent.
func (a *Authenticator) sessionCookies(r *http.Request) (userID, token string, ok bool) {
	lines := r.Header["Cookie"]
	if len(lines) == 0 {
		return "", "", false
	}
	userID, token, ok = parseCookies(lines, a.cookies.UserID, a.cookies.Token)
	if !ok || a.codec == nil {
		return userID, token, ok
	}
	var id, tok []byte
	if a.codec.Decode(a.cookies.UserID, userID, &id) != nil || a.codec.Decode(a.cookies.Token, token, &tok) != nil {
		return "", "", false
	}
	return string(id), string(tok), true
}

// parseCookies finds the first cookies named userIDName and tokenName in
// Cookie header lines (RFC 6265 5.4: name=value pairs separated by "; "). A
// value may be enclosed in double quotes; a pair whose value holds
// characters outside cookie-octet is skipped. It reports whether both
// cookies were found.
func parseCookies(lines []string, userIDName, tokenName string) (userID, token string, ok bool) {
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
			case userIDName:
				dst, have = &userID, &haveID
			case tokenName:
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
// authenticator sets: the configured Path (default /), HttpOnly,
// SameSite=Lax, and Secure when the request came over TLS.
func (a *Authenticator) cookie(secure bool, name, value string) *http.Cookie {
	return &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     a.cookies.Path,
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	}
}

// sessionValues returns the user id and token cookie values of a new
// session, signed when signed cookies are on.
func (a *Authenticator) sessionValues(id int64, token string) (userID, tok string, err error) {
	userID = itoa(id)
	if a.codec == nil {
		return userID, token, nil
	}
	if userID, err = a.codec.Encode(a.cookies.UserID, []byte(userID)); err != nil {
		return "", "", fmt.Errorf("auth: sign cookie: %w", err)
	}
	if tok, err = a.codec.Encode(a.cookies.Token, []byte(token)); err != nil {
		return "", "", fmt.Errorf("auth: sign cookie: %w", err)
	}
	return userID, tok, nil
}

// expireCookie tells the client to drop a cookie: empty value, Max-Age=0
// and an Expires in the past.
func (a *Authenticator) expireCookie(w http.ResponseWriter, secure bool, name string) {
	c := a.cookie(secure, name, "")
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
