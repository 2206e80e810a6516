package middleware

import (
	"net/http"
)

// Cookies drops, when the answer starts, every Set-Cookie header that would
// set a cookie to the value the request already carries, with no expiry
// (cookies unchanged from the request are omitted, docs/wire.md#responses).
// Added, changed and expiring cookies pass.
//
// The writer passed on has the optional interfaces of the one given, and
// shares [Log]'s wrapper; a request without cookies gets the writer given.
func Cookies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// As r.Header.Get("Cookie") == "", without canonicalizing the key.
		if c := r.Header["Cookie"]; len(c) == 0 || c[0] == "" {
			next.ServeHTTP(w, r)
			return
		}
		s, made := wrap(w, r)
		prev := s.cookies
		s.cookies = r
		returned := false
		defer func() {
			s.cookies = prev
			if made {
				s.release(returned)
			}
		}()
		next.ServeHTTP(s.out, r)
		returned = true
	})
}

// dropUnchanged drops from h the Set-Cookie lines that set a cookie of r
// to the value r carries, with no expiry.
func dropUnchanged(h http.Header, r *http.Request) {
	set := h["Set-Cookie"]
	if len(set) == 0 {
		return
	}
	kept := set[:0:0]
	for _, line := range set {
		sc, err := http.ParseSetCookie(line)
		if err == nil && sc.MaxAge == 0 && sc.Expires.IsZero() {
			if rc, err := r.Cookie(sc.Name); err == nil && rc.Value == sc.Value {
				continue
			}
		}
		kept = append(kept, line)
	}
	if len(kept) == 0 {
		h.Del("Set-Cookie")
		return
	}
	h["Set-Cookie"] = kept
}
