package auth

import (
	"encoding/base64"
	"strings"
)

// splitAuthorization splits an Authorization header value into its scheme
// and the rest, without surrounding white space.
func splitAuthorization(h string) (scheme, rest string) {
	h = strings.TrimLeft(h, " \t")
	i := strings.IndexAny(h, " \t")
	if i < 0 {
		return h, ""
	}
	return h[:i], strings.Trim(h[i+1:], " \t")
}

// parseBasic parses the credentials of an Authorization header of scheme
// Basic (RFC 7617): base64 of <email>:<password>, split at the first colon.
// It reports false for another scheme, bad base64 or a missing colon.
func parseBasic(h string) (email, password string, ok bool) {
	scheme, cred := splitAuthorization(h)
	if !strings.EqualFold(scheme, "Basic") || cred == "" || len(cred) > 4096 {
		return "", "", false
	}
	var buf [256]byte
	dst := buf[:]
	if n := base64.StdEncoding.DecodedLen(len(cred)); n > len(dst) {
		dst = make([]byte, n)
	}
	n, err := base64.StdEncoding.Strict().Decode(dst, []byte(cred))
	if err != nil {
		return "", "", false
	}
	email, password, ok = strings.Cut(string(dst[:n]), ":")
	if !ok {
		return "", "", false
	}
	return email, password, true
}
