package auth

import (
	"net/http"
	"strconv"

	"github.com/reso-project/reso/core"
)

// Result is what [Authenticator.Check] found out about a request, and what
// the answer must carry because of it: the session cookies of a successful
// login, expired cookies, a challenge or a Retry-After. Check makes it
// without touching the response; [Result.Write] puts its headers on the
// response. The zero Result is an anonymous caller with nothing to write.
type Result struct {
	// Identity is the caller; nil unless the check succeeded.
	Identity *core.Identity
	// Anonymous reports that the request carried no credentials at all:
	// no Authorization header, no route groups with a token and no session
	// cookies. Check then fails with 401 Unauthorized and a challenge,
	// which a route that does not insist on an identity need not send.
	Anonymous bool

	a          *Authenticator
	secure     bool   // the request came over TLS: cookies get Secure
	token, uid string // cookie values of a new session (signed when configured); "" for none
	expire     bool   // expire the token and user_id cookies
	challenge  bool   // WWW-Authenticate
	stale      bool   // the Digest challenge says stale=true
	retryAfter int64  // seconds of Retry-After; 0 for none
}

// Write sets the headers of res on w: the token and user id cookies of a new
// session (named as [Config].Cookies says), or both cookies expired; WWW-Authenticate (Basic realm="<realm>",
// then Digest when it is enabled) when the check asks the client for
// credentials; Retry-After when the client is throttled. It writes no status
// and no body: after a failed check the caller answers with
// core.WriteError, after a successful one it goes on.
func (res *Result) Write(w http.ResponseWriter) {
	if res.a == nil {
		return
	}
	if res.retryAfter > 0 {
		w.Header()["Retry-After"] = []string{strconv.FormatInt(res.retryAfter, 10)}
	}
	if res.challenge {
		res.a.writeChallenge(w, res.stale)
	}
	if res.expire {
		res.a.expireCookie(w, res.secure, res.a.cookies.Token)
		res.a.expireCookie(w, res.secure, res.a.cookies.UserID)
	}
	if res.token != "" {
		http.SetCookie(w, res.a.cookie(res.secure, res.a.cookies.Token, res.token))
		http.SetCookie(w, res.a.cookie(res.secure, res.a.cookies.UserID, res.uid))
	}
}

// Challenge sets the WWW-Authenticate headers that ask a client for
// credentials, as a failed check does: Basic realm="<realm>", then Digest
// when it is enabled. A route that lets anonymous callers in (see
// [Optional]) uses it when it answers one of them 401 Unauthorized.
func (a *Authenticator) Challenge(w http.ResponseWriter) {
	a.writeChallenge(w, false)
}

// writeChallenge sets the WWW-Authenticate headers of a 401 answer: Basic
// realm="<realm>", then Digest when it is enabled.
func (a *Authenticator) writeChallenge(w http.ResponseWriter, stale bool) {
	h := w.Header()
	if a.digest {
		h["Www-Authenticate"] = []string{a.basicChallenge, a.digestChallenge(stale)}
	} else {
		h["Www-Authenticate"] = []string{a.basicChallenge}
	}
}

// fail marks res as asking for credentials and returns err.
func (res *Result) fail(err error) error {
	res.challenge = true
	return err
}
