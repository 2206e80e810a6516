package auth

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"
)

// HTTP Digest access authentication (RFC 7616) with MD5 and qop=auth. It
// works from the stored hash, which is the HA1 of <email>:<realm>:<password>.
// A nonce is 16 hex characters of its issue time (Unix nanoseconds), 16 of
// random bytes and 32 of an HMAC-SHA256 over both and the realm, keyed from
// the instance secret: the server keeps no state for it, and a nonce older
// than the lifetime is answered with stale=true.

// DefaultNonceLifetime is how long a Digest nonce is accepted when
// [Config].NonceLifetime is 0.
const DefaultNonceLifetime = 5 * time.Minute

const (
	nonceRawLen = 16 // issue time (8 bytes) and 8 random bytes
	nonceMACLen = 32
	nonceLen    = 2*nonceRawLen + nonceMACLen
	// nonceSkew is how far in the future a nonce time may lie (clock steps).
	nonceSkew = time.Minute
)

// digestCreds holds the parameters of an Authorization header of scheme
// Digest.
type digestCreds struct {
	username, realm, nonce, uri, response string
	algorithm, cnonce, opaque, qop, nc    string
	userhash                              string
}

// parseDigest parses an Authorization header of scheme Digest. It reports
// false for another scheme, a malformed parameter list, a repeated parameter
// or a missing required parameter (username, realm, nonce, uri, response).
func parseDigest(h string) (digestCreds, bool) {
	var d digestCreds
	scheme, rest := splitAuthorization(h)
	if !strings.EqualFold(scheme, "Digest") || len(rest) > 4096 {
		return d, false
	}
	seen := 0
	ok := parseAuthParams(rest, func(name, value string) bool {
		var p *string
		bit := 0
		switch strings.ToLower(name) {
		case "username":
			p, bit = &d.username, 1
		case "realm":
			p, bit = &d.realm, 2
		case "nonce":
			p, bit = &d.nonce, 4
		case "uri":
			p, bit = &d.uri, 8
		case "response":
			p, bit = &d.response, 16
		case "algorithm":
			p, bit = &d.algorithm, 32
		case "cnonce":
			p, bit = &d.cnonce, 64
		case "opaque":
			p, bit = &d.opaque, 128
		case "qop":
			p, bit = &d.qop, 256
		case "nc":
			p, bit = &d.nc, 512
		case "userhash":
			p, bit = &d.userhash, 1024
		default:
			return true // unknown parameters are ignored (RFC 7616 3.4)
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		*p = value
		return true
	})
	if !ok || seen&31 != 31 {
		return digestCreds{}, false
	}
	return d, true
}

// parseAuthParams parses a comma-separated list of auth-param (RFC 9110
// 11.2: token BWS "=" BWS ( token / quoted-string )), calling fn for each
// until it returns false. Empty list elements are allowed.
func parseAuthParams(s string, fn func(name, value string) bool) bool {
	i := 0
	for {
		i = skipOWS(s, i)
		for i < len(s) && s[i] == ',' {
			i = skipOWS(s, i+1)
		}
		if i == len(s) {
			return true
		}
		j := i
		for j < len(s) && isTchar(s[j]) {
			j++
		}
		if j == i {
			return false
		}
		name := s[i:j]
		j = skipOWS(s, j)
		if j == len(s) || s[j] != '=' {
			return false
		}
		j = skipOWS(s, j+1)
		var value string
		if j < len(s) && s[j] == '"' {
			v, n, ok := unquote(s[j:])
			if !ok {
				return false
			}
			value, j = v, j+n
		} else {
			k := j
			for k < len(s) && isTchar(s[k]) {
				k++
			}
			if k == j {
				return false
			}
			value, j = s[j:k], k
		}
		if !fn(name, value) {
			return false
		}
		j = skipOWS(s, j)
		if j < len(s) && s[j] != ',' {
			return false
		}
		i = j
	}
}

func skipOWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// unquote reads the quoted-string at the start of s and returns its text and
// the number of bytes it spans.
func unquote(s string) (string, int, bool) {
	var b strings.Builder
	escaped := false
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 == len(s) || !qdChar(s[i+1]) && s[i+1] != '"' && s[i+1] != '\\' {
				return "", 0, false
			}
			if !escaped {
				escaped = true
				b.WriteString(s[1:i])
			}
			i++
			b.WriteByte(s[i])
		case c == '"':
			if !escaped {
				return s[1:i], i + 1, true
			}
			return b.String(), i + 1, true
		case !qdChar(c):
			return "", 0, false
		case escaped:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// qdChar reports whether c may stand unescaped in a quoted-string.
func qdChar(c byte) bool {
	return c == '\t' || c == ' ' || c == 0x21 || c >= 0x23 && c <= 0x5b || c >= 0x5d && c <= 0x7e || c >= 0x80
}

// quote returns s as a quoted-string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// newNonce returns a Digest nonce issued at t.
func (a *Authenticator) newNonce(t time.Time) string {
	var raw [nonceRawLen]byte
	binary.BigEndian.PutUint64(raw[:8], uint64(t.UnixNano()))
	if _, err := rand.Read(raw[8:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	var b [nonceLen]byte
	hex.Encode(b[:2*nonceRawLen], raw[:])
	mac := a.nonceMAC(b[:2*nonceRawLen])
	hex.Encode(b[2*nonceRawLen:], mac[:nonceMACLen/2])
	return string(b[:])
}

func (a *Authenticator) nonceMAC(head []byte) []byte {
	m := hmac.New(sha256.New, a.nonceKey)
	m.Write(head)
	m.Write([]byte(a.realm))
	return m.Sum(nil)
}

// checkNonce reports whether n is a nonce of this instance, and whether it
// is still fresh at now. A nonce issued in the future (beyond a small clock
// step) is not valid.
func (a *Authenticator) checkNonce(n string, now time.Time) (valid, fresh bool) {
	if len(n) != nonceLen || !isLowerHex(n) {
		return false, false
	}
	mac := a.nonceMAC([]byte(n[:2*nonceRawLen]))
	var want [nonceMACLen]byte
	hex.Encode(want[:], mac[:nonceMACLen/2])
	if subtle.ConstantTimeCompare(want[:], []byte(n[2*nonceRawLen:])) != 1 {
		return false, false
	}
	var ts [8]byte
	hex.Decode(ts[:], []byte(n[:16]))
	age := now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(ts[:]))))
	if age < -nonceSkew {
		return false, false
	}
	return true, age <= a.nonceLifetime
}

// digestChallenge returns the value of a WWW-Authenticate header of scheme
// Digest with a new nonce.
func (a *Authenticator) digestChallenge(stale bool) string {
	s := "Digest realm=" + a.quotedRealm + `, qop="auth", algorithm=MD5, nonce="` + a.newNonce(a.now()) + `"`
	if stale {
		s += ", stale=true"
	}
	return s
}

// digestResponse returns the expected request-digest of RFC 7616 3.4.1
// for qop=auth.
func digestResponse(ha1, method string, d *digestCreds) string {
	ha2 := md5.Sum([]byte(method + ":" + d.uri))
	sum := md5.Sum([]byte(ha1 + ":" + d.nonce + ":" + d.nc + ":" + d.cnonce + ":" + d.qop + ":" + hex.EncodeToString(ha2[:])))
	return hex.EncodeToString(sum[:])
}

// checkDigest verifies Digest credentials against the request, under the
// login throttle, and returns the login record; it sets res.stale when the
// credentials were right but the nonce has expired. A throttled client gets
// errTooMany with the delay in res.
func (a *Authenticator) checkDigest(res *Result, r *http.Request, d *digestCreds) (rec LoginRecord, err error) {
	if (d.algorithm != "" && !strings.EqualFold(d.algorithm, "MD5")) || d.qop != "auth" ||
		len(d.nc) != 8 || !isHex(d.nc) || d.cnonce == "" || d.realm != a.realm ||
		(d.userhash != "" && !strings.EqualFold(d.userhash, "false")) {
		return LoginRecord{}, errUnauthorized
	}
	uri := r.RequestURI
	if uri == "" {
		uri = r.URL.RequestURI()
	}
	if d.uri != uri {
		return LoginRecord{}, errUnauthorized
	}
	now := a.now()
	valid, fresh := a.checkNonce(d.nonce, now)
	if !valid {
		return LoginRecord{}, errUnauthorized
	}
	at, err := a.begin(res, r)
	if err != nil {
		return LoginRecord{}, err
	}
	got := []byte(strings.ToLower(d.response))
	rec, err = a.byEmail(r.Context(), d.username, func(rec LoginRecord) bool {
		return subtle.ConstantTimeCompare([]byte(digestResponse(rec.Hash, r.Method, d)), got) == 1
	})
	if errors.Is(err, ErrNoRecord) {
		at.fail()
		return LoginRecord{}, errUnknownEmail
	}
	if err != nil {
		at.abort()
		return LoginRecord{}, err
	}
	if err := at.account(res, rec.ID); err != nil {
		return LoginRecord{}, err
	}
	want := digestResponse(rec.Hash, r.Method, d)
	if subtle.ConstantTimeCompare([]byte(want), got) != 1 {
		at.fail()
		return LoginRecord{}, errUnauthorized
	}
	// The password was right, even with a stale nonce.
	at.succeed()
	if !fresh {
		res.stale = true
		return LoginRecord{}, errUnauthorized
	}
	return rec, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
