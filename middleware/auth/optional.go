package auth

import (
	"net/http"

	"github.com/reso-project/reso/core"
)

// Optional returns middleware for a route that serves anonymous callers and
// known ones alike. A request without any credentials (no Authorization
// header, no route groups with a token, no session cookies) passes on with
// no identity, and nothing is written: no challenge, no cookie. A request
// with credentials is checked as [Required] checks it: valid ones pass with
// the identity in the request context (see core.IdentityFromContext), and a
// password login sets the session cookies as it does on a required route;
// wrong ones (a wrong password, a stale or forged session cookie, an
// unchecked scheme) are answered as on a required route, with the status
// line of the failed check and its headers, so that a mistyped password
// never passes silently as an anonymous caller. Throttling works as on a
// required route: a throttled client with credentials gets 429 Too Many
// Requests; anonymous callers are never throttled.
func Optional(a *Authenticator) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			res, err := a.Check(r)
			if err != nil && res.Anonymous {
				next.ServeHTTP(w, r)
				return
			}
			res.Write(w)
			if err != nil {
				core.WriteError(w, r, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(core.NewIdentityContext(r.Context(), res.Identity)))
		})
	}
}
