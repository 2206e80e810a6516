package auth

import (
	"errors"
	"net/http"
	"strings"

	"github.com/reso-project/reso/core"
)

// Check authenticates r with the checks of docs/wire.md#check-order, in
// order:
//
//  1. An Authorization header: Basic (and Digest when enabled). Success
//     stores a new token, and the result sets the token and user_id
//     cookies. Any other scheme, or a malformed value, is 401 Unauthorized.
//  2. The route groups user_id or email, with token (from the request
//     context of the core router): the administrator token for e-mail admin
//     (or id 0), else the stored token or hash of the record; a value other
//     than the stored token is replaced by a new token and the result sets
//     the cookies.
//  3. The cookies user_id and token: the administrator token for id 0, else
//     the stored token of the record; a mismatch expires both cookies.
//  4. Otherwise 401 Unauthorized, with [Result].Anonymous set.
//
// On success the result holds the identity, with the mark of the ends of
// sessions so far in its Checked (see [Authenticator.EndedSince]). On
// failure Check returns a *core.StatusError with the status line listed in
// docs/wire.md#authentication-failures, or "429 Too Many Requests" when the
// client is throttled (see [Throttle]), or a store error (the context's own
// error when the request was cancelled); every 401 result carries the
// challenge, a 429 result a Retry-After.
//
// Check writes nothing to the response: [Result.Write] is the separate step
// that sets the cookies and headers of the result. It does change the
// server's state as a login does: it counts the attempt against the login
// throttle and stores the new token of a password login, so that the cookies
// of the result are valid.
func (a *Authenticator) Check(r *http.Request) (Result, error) {
	res := Result{a: a, secure: r.TLS != nil}
	// Before any record is read: an end logged after this mark may have
	// come after the records that let the credentials through.
	mark := a.ends.mark()
	err := a.check(&res, r)
	if err == nil && res.Identity != nil {
		res.Identity.Checked = mark
	}
	if a.onCheck != nil && !res.Anonymous {
		a.onCheck(schemeOf(r), err == nil)
	}
	return res, err
}

// schemeOf names the credentials r carries for Config.OnCheck, in the
// order check looks at them.
func schemeOf(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, _ := splitAuthorization(h)
		switch {
		case strings.EqualFold(scheme, "Basic"):
			return "basic"
		case strings.EqualFold(scheme, "Digest"):
			return "digest"
		}
		return "other"
	}
	if req := core.FromContext(r.Context()); req != nil && req.Vars["token"] != "" {
		return "route"
	}
	return "cookie"
}

// check runs the checks of [Authenticator.Check] on res.
func (a *Authenticator) check(res *Result, r *http.Request) error {
	if h := r.Header.Get("Authorization"); h != "" {
		return a.checkHeader(res, r, h)
	}
	if req := core.FromContext(r.Context()); req != nil {
		uid, email, token := req.Vars["user_id"], req.Vars["email"], req.Vars["token"]
		if (uid != "" || email != "") && token != "" {
			return a.checkRoute(res, r, uid, email, token)
		}
	}
	if uid, token, ok := a.sessionCookies(r); ok {
		return a.checkCookie(res, r, uid, token)
	}
	res.Anonymous = true
	return res.fail(errUnauthorized)
}

// checkHeader is step 1: the Authorization header.
func (a *Authenticator) checkHeader(res *Result, r *http.Request, h string) error {
	scheme, _ := splitAuthorization(h)
	switch {
	case strings.EqualFold(scheme, "Basic"):
		email, password, ok := parseBasic(h)
		if !ok {
			return res.fail(errUnauthorized)
		}
		return a.checkBasic(res, r, email, password)
	case a.digest && strings.EqualFold(scheme, "Digest"):
		d, ok := parseDigest(h)
		if !ok {
			return res.fail(errUnauthorized)
		}
		rec, err := a.checkDigest(res, r, &d)
		if err == errTooMany {
			return err
		}
		if _, isStatus := core.AsStatus(err); isStatus {
			return res.fail(err)
		}
		if err != nil {
			return err
		}
		return a.grant(res, r, rec)
	}
	// A scheme the server does not check never grants access.
	return res.fail(errUnauthorized)
}

// checkBasic checks Basic credentials, under the login throttle.
func (a *Authenticator) checkBasic(res *Result, r *http.Request, email, password string) error {
	at, err := a.begin(res, r)
	if err != nil {
		return err
	}
	hash := HashPassword(email, a.realm, password)
	rec, err := a.byEmail(r.Context(), email, func(rec LoginRecord) bool { return equal(hash, rec.Hash) })
	if errors.Is(err, ErrNoRecord) {
		at.fail()
		return res.fail(errUnknownEmail)
	}
	if err != nil {
		at.abort()
		return err
	}
	if err := at.account(res, rec.ID); err != nil {
		return err
	}
	if !equal(hash, rec.Hash) {
		at.fail()
		return res.fail(errUnauthorized)
	}
	at.succeed()
	return a.grant(res, r, rec)
}

// checkRoute is step 2: route groups user_id or email, with token.
func (a *Authenticator) checkRoute(res *Result, r *http.Request, uid, email, token string) error {
	id, idOK := parseID(uid)
	if email == AdminEmail && uid == "" || uid != "" && idOK && id == 0 {
		if !equal(token, a.adminToken) {
			if err := a.failedSession(res, r); err != nil {
				return err
			}
			return res.fail(errNotAuthorized)
		}
		res.Identity = admin()
		return nil
	}
	// A value that cannot be a session token of the record is a guess (the
	// password hash is one): a throttled address learns nothing, not even
	// whether the record exists.
	session := len(token) == tokenLen && (uid == "" || idOK && validToken(a.secret, id, token))
	var at attempt
	if !session {
		var err error
		if at, err = a.begin(res, r); err != nil {
			return err
		}
	}
	want := func(rec LoginRecord) bool {
		if session {
			return equal(token, rec.Token)
		}
		return len(token) == hashLen && equal(token, rec.Hash)
	}
	var rec LoginRecord
	var err error
	switch {
	case uid != "" && !idOK:
		err = ErrNoRecord
	case uid != "":
		rec, err = a.byID(r.Context(), id, want)
	default:
		rec, err = a.byEmail(r.Context(), email, want)
	}
	switch {
	case errors.Is(err, ErrNoRecord) && session:
		if err := a.failedSession(res, r); err != nil {
			return err
		}
		return errNoRecord
	case errors.Is(err, ErrNoRecord):
		at.fail()
		return errNoRecord
	case err != nil:
		at.abort()
		return err
	}
	if session {
		if validToken(a.secret, rec.ID, token) && equal(token, rec.Token) {
			res.Identity = &core.Identity{ID: rec.ID, Email: rec.Email}
			return nil
		}
		if err := a.failedSession(res, r); err != nil {
			return err
		}
		return res.fail(errUnauthorized)
	}
	if err := at.account(res, rec.ID); err != nil {
		return err
	}
	if len(token) == hashLen && equal(token, rec.Hash) {
		at.succeed()
		return a.grant(res, r, rec)
	}
	at.fail()
	return res.fail(errUnauthorized)
}

// checkCookie is step 3: cookies user_id and token. A valid session costs
// the throttle nothing; a failed one counts against the client address.
func (a *Authenticator) checkCookie(res *Result, r *http.Request, uid, token string) error {
	id, ok := parseID(uid)
	if ok && id == 0 {
		if !equal(token, a.adminToken) {
			if err := a.failedSession(res, r); err != nil {
				return err
			}
			return res.fail(errNotAdmin)
		}
		res.Identity = admin()
		return nil
	}
	if ok && validToken(a.secret, id, token) {
		rec, err := a.byID(r.Context(), id, func(rec LoginRecord) bool { return equal(token, rec.Token) })
		if err != nil && !errors.Is(err, ErrNoRecord) {
			return err
		}
		if err == nil && equal(token, rec.Token) {
			res.Identity = &core.Identity{ID: rec.ID, Email: rec.Email}
			return nil
		}
	}
	res.expire = true
	if err := a.failedSession(res, r); err != nil {
		return err
	}
	return res.fail(errUnauthorized)
}

// grant issues a new token for rec and puts the identity and the cookies of
// the new session in res.
func (a *Authenticator) grant(res *Result, r *http.Request, rec LoginRecord) error {
	rec, err := a.issue(r.Context(), rec)
	switch {
	case errors.Is(err, errStale):
		// Checked against a password another process has replaced since.
		return res.fail(errUnauthorized)
	case errors.Is(err, ErrNoRecord):
		// Removed since it was read.
		return res.fail(errUnknownEmail)
	case err != nil:
		return err
	}
	if res.uid, res.token, err = a.sessionValues(rec.ID, rec.Token); err != nil {
		return err
	}
	res.Identity = &core.Identity{ID: rec.ID, Email: rec.Email}
	return nil
}

func admin() *core.Identity { return &core.Identity{ID: 0, Email: AdminEmail} }

// failedSession counts a failed session or administrator token against the
// client address; it returns errTooMany (with the delay in res) when the
// address is throttled.
func (a *Authenticator) failedSession(res *Result, r *http.Request) error {
	if a.throttle == nil {
		return nil
	}
	return a.throttle.failed(res, a.now(), clientAddr(r))
}

// begin starts a throttled attempt of a guessable credential from the
// client of r; it returns errTooMany (with the delay in res) when the
// client address is throttled.
func (a *Authenticator) begin(res *Result, r *http.Request) (attempt, error) {
	if a.throttle == nil {
		return attempt{}, nil
	}
	return a.throttle.begin(res, a.now(), clientAddr(r))
}
