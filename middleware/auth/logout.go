package auth

import "net/http"

// Logout ends the session of the request's cookies (docs/wire.md#logout): with
// both cookies user_id and token (or the names of [Config].Cookies) present, the token cookie is expired and,
// when the id is not 0, the stored token is cleared if it equals the cookie
// token. Without both cookies it does nothing. It returns only store errors.
func (a *Authenticator) Logout(w http.ResponseWriter, r *http.Request) error {
	uid, token, ok := a.sessionCookies(r)
	if !ok {
		return nil
	}
	a.expireCookie(w, r.TLS != nil, a.cookies.Token)
	id, ok := parseID(uid)
	if !ok || id == 0 {
		return nil
	}
	ctx, cancel := writeContext(r.Context())
	defer cancel()
	a.wmu.Lock()
	defer a.wmu.Unlock()
	cleared, err := a.store.ClearToken(ctx, id, token)
	if err != nil {
		return err
	}
	a.cache.update(id, func(rec *LoginRecord) {
		if cleared || rec.Token == token {
			rec.Token = ""
		}
	})
	return nil
}
