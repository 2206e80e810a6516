package auth

import (
	"net/http"

	"github.com/reso-project/reso/core"
)

// Required returns middleware that lets a request through only with an
// identity from [Authenticator.Check]. Otherwise it answers with the status
// line of the failed check (401 Unauthorized, 401 Not Found, 404 Not Found,
// 429 Too Many Requests, ...) and the headers of its result (the challenge,
// expired cookies, Retry-After). A successful password login sets the
// session cookies. The identity reaches next in the request context, see
// core.IdentityFromContext.
func Required(a *Authenticator) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			res, err := a.Check(r)
			res.Write(w)
			if err != nil {
				core.WriteError(w, r, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(core.NewIdentityContext(r.Context(), res.Identity)))
		})
	}
}
