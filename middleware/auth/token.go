package auth

import (
	"crypto/md5"
	"crypto/subtle"
	"encoding/hex"
	"strconv"
	"time"
)

// Token layout (docs/wire.md#tokens): 32 hex characters of MD5 over the
// instance secret, the decimal id and the timestamp part, then the timestamp
// part: 10 hex characters of the zero-padded Unix time in seconds.
const (
	tokenMACLen = 32
	tokenTSLen  = 10
	tokenLen    = tokenMACLen + tokenTSLen
	hashLen     = 32
)

// makeToken returns the token of id issued at t.
func makeToken(secret []byte, id int64, t time.Time) string {
	var b [tokenLen]byte
	ts := t.Unix()
	if ts < 0 {
		ts = 0
	}
	putHexTS(b[tokenMACLen:], uint64(ts))
	sum := tokenMAC(secret, id, b[tokenMACLen:])
	hex.Encode(b[:tokenMACLen], sum[:])
	return string(b[:])
}

// putHexTS writes ts as 10 lower-case hex digits, zero-padded.
func putHexTS(dst []byte, ts uint64) {
	const digits = "0123456789abcdef"
	for i := tokenTSLen - 1; i >= 0; i-- {
		dst[i] = digits[ts&0xf]
		ts >>= 4
	}
}

func tokenMAC(secret []byte, id int64, ts []byte) [md5.Size]byte {
	var buf [128]byte
	msg := append(buf[:0], secret...)
	msg = strconv.AppendInt(msg, id, 10)
	msg = append(msg, ts...)
	return md5.Sum(msg)
}

// validToken reports whether s has the token layout (42 lower-case hex
// characters) and was issued for id under secret.
func validToken(secret []byte, id int64, s string) bool {
	if len(s) != tokenLen || !isLowerHex(s) {
		return false
	}
	sum := tokenMAC(secret, id, []byte(s[tokenMACLen:]))
	var want [tokenMACLen]byte
	hex.Encode(want[:], sum[:])
	return subtle.ConstantTimeCompare(want[:], []byte(s[:tokenMACLen])) == 1
}

// isLowerHex reports whether s is made of 0-9 and a-f only.
func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// equal compares a presented secret value with a stored one in constant
// time; an empty stored value never matches.
func equal(presented, stored string) bool {
	return stored != "" && subtle.ConstantTimeCompare([]byte(presented), []byte(stored)) == 1
}

// HashPassword returns the hash of a login record: the lower-case hex MD5 of
// <email>:<realm>:<password>, which is the HA1 of HTTP Digest (MD5).
func HashPassword(email, realm, password string) string {
	var buf [128]byte
	msg := append(buf[:0], email...)
	msg = append(msg, ':')
	msg = append(msg, realm...)
	msg = append(msg, ':')
	msg = append(msg, password...)
	sum := md5.Sum(msg)
	return hex.EncodeToString(sum[:])
}

// AdminToken returns the token of the administrator (id 0, e-mail admin):
// the lower-case hex MD5 of admin::<secret>. It is never sent in a response.
func AdminToken(secret []byte) string {
	return HashPassword("admin", "", string(secret))
}
