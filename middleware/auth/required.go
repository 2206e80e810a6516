package auth

import (
	"net/http"

	"github.com/reso-project/reso/core"
)

// Required returns middleware that lets a request through only with an
// identity from a.Login. Otherwise it answers with the status line of the
// failed check (401 Unauthorized, 401 Not Found, 404 Not Found, 429 Too
// Many Requests, ...) and the headers Login set. The identity reaches next through [NewContext] and, when
// the request came through a core router, in its Request.Identity.
func Required(a *Authenticator) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, err := a.Login(w, r)
			if err != nil {
				core.WriteError(w, r, err)
				return
			}
			if req := core.FromContext(r.Context()); req != nil {
				req.Identity = id
			}
			next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), id)))
		})
	}
}
