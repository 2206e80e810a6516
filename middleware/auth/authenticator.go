package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/securecookie"
	"github.com/reso-project/reso/core"
)

// DefaultRealm is the realm used when [Config].Realm is empty, the fixed
// realm of the example application (docs/wire.md#authentication).
const DefaultRealm = "localhost"

// AdminEmail is the e-mail of the administrator, who has id 0 and no stored
// record.
const AdminEmail = "admin"

// Status errors of the checks, with the status lines of
// docs/wire.md#authentication-failures.
var (
	errUnknownEmail  = core.Status(http.StatusUnauthorized, "Not Found")
	errUnauthorized  = core.Status(http.StatusUnauthorized, "Unauthorized")
	errNotAuthorized = core.Status(http.StatusUnauthorized, "Not Authorized")
	errNotAdmin      = core.Status(http.StatusUnauthorized, "Not Authorized as Admin")
	errNoRecord      = core.Status(http.StatusNotFound, "Not Found")
)

// Config configures an [Authenticator].
type Config struct {
	// Store keeps the login records; required.
	Store Store
	// Secret is the instance secret (see [LoadSecret]); required.
	Secret []byte
	// Realm is the authentication realm; "" means [DefaultRealm].
	Realm string
	// Digest enables HTTP Digest (RFC 7616, MD5, qop=auth): Digest
	// credentials are checked and every challenge gets a second
	// WWW-Authenticate header of scheme Digest. When false, Digest
	// credentials are a scheme the server does not check.
	Digest bool
	// SignedCookies makes the token and user_id cookie values signed with
	// gorilla/securecookie under a key derived from Secret; a cookie that
	// does not verify counts as absent.
	SignedCookies bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// NonceLifetime is how long a Digest nonce is accepted; 0 means
	// [DefaultNonceLifetime].
	NonceLifetime time.Duration
	// MaxCached bounds the login records kept in memory; 0 means
	// [DefaultMaxCached].
	MaxCached int
	// Throttle configures login throttling; the zero value is on with
	// safe defaults (see [Throttle]).
	Throttle Throttle
}

// Authenticator checks the credentials of requests in the order of
// docs/wire.md#check-order (Authorization header, route groups user_id or
// email with token, cookies user_id and token) and keeps login records in a
// [Store]. Build it with [New]; it is safe for concurrent use.
type Authenticator struct {
	store          Store
	secret         []byte
	adminToken     string
	realm          string
	quotedRealm    string
	basicChallenge string
	digest         bool
	codec          *securecookie.SecureCookie
	now            func() time.Time
	nonceLifetime  time.Duration
	nonceKey       []byte
	cache          *cache
	throttle       *throttle  // nil when off
	wmu            sync.Mutex // serializes store writes with their cache updates
}

// New returns an authenticator for cfg, or an error when cfg is incomplete.
func New(cfg Config) (*Authenticator, error) {
	if cfg.Store == nil {
		return nil, errors.New("auth: config without a store")
	}
	if len(cfg.Secret) == 0 {
		return nil, errors.New("auth: config without a secret")
	}
	realm := cfg.Realm
	if realm == "" {
		realm = DefaultRealm
	}
	for i := 0; i < len(realm); i++ {
		if c := realm[i]; c < ' ' || c > '~' {
			return nil, fmt.Errorf("auth: realm %q: want printable ASCII", realm)
		}
	}
	if cfg.NonceLifetime < 0 {
		return nil, fmt.Errorf("auth: negative nonce lifetime %v", cfg.NonceLifetime)
	}
	if cfg.MaxCached < 0 {
		return nil, fmt.Errorf("auth: negative cache size %d", cfg.MaxCached)
	}
	if th := cfg.Throttle; th.Attempts < 0 || th.Backoff < 0 || th.MaxBackoff < 0 || th.Decay < 0 || th.MaxTracked < 0 {
		return nil, fmt.Errorf("auth: negative throttle setting %+v", th)
	}
	a := &Authenticator{
		store:         cfg.Store,
		secret:        append([]byte(nil), cfg.Secret...),
		adminToken:    AdminToken(cfg.Secret),
		realm:         realm,
		quotedRealm:   quote(realm),
		digest:        cfg.Digest,
		now:           cfg.Now,
		nonceLifetime: cfg.NonceLifetime,
		nonceKey:      deriveKey(cfg.Secret, "reso auth digest nonce"),
		cache:         newCache(realm, cfg.MaxCached),
		throttle:      newThrottle(cfg.Throttle),
	}
	a.basicChallenge = "Basic realm=" + a.quotedRealm
	if a.now == nil {
		a.now = time.Now
	}
	if a.nonceLifetime == 0 {
		a.nonceLifetime = DefaultNonceLifetime
	}
	if a.cache.max == 0 {
		a.cache.max = DefaultMaxCached
	}
	if cfg.SignedCookies {
		a.codec = newCodec(cfg.Secret)
	}
	return a, nil
}

// deriveKey derives a key for one purpose from the instance secret.
func deriveKey(secret []byte, label string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// Realm returns the authentication realm.
func (a *Authenticator) Realm() string { return a.realm }

// Register registers email with password in the authenticator's realm and
// issues a token; it returns the record id. Registering an existing e-mail
// updates its hash and issues a new token, which ends the sessions of the old
// password; registering it again with the same password changes nothing, so
// a server that registers its users at every start keeps their sessions. The
// empty password is allowed (it is the default).
func (a *Authenticator) Register(ctx context.Context, email, password string) (int64, error) {
	return a.RegisterHash(ctx, email, HashPassword(email, a.realm, password))
}

// RegisterHash is like [Authenticator.Register] with the hash precomputed:
// 32 hex characters of MD5 over <email>:<realm>:<password>.
func (a *Authenticator) RegisterHash(ctx context.Context, email, hash string) (int64, error) {
	if err := validEmail(email); err != nil {
		return 0, err
	}
	if len(hash) != hashLen || !isHex(hash) {
		return 0, fmt.Errorf("auth: register %q: hash is not 32 hex characters", email)
	}
	hash = strings.ToLower(hash)
	a.wmu.Lock()
	defer a.wmu.Unlock()
	old, err := a.store.ByEmail(ctx, email, a.realm)
	switch {
	case err == nil && old.Hash == hash && validToken(a.secret, old.ID, old.Token):
		// Registered before with this password (a server restarting with
		// the same -login): the current session stays valid.
		a.cache.put(old)
		return old.ID, nil
	case err != nil && !errors.Is(err, ErrNoRecord):
		return 0, readError(ctx, err)
	}
	// From here on the registration is a write that runs to its end.
	ctx, cancel := writeContext(ctx)
	defer cancel()
	id, err := a.store.Register(ctx, email, a.realm, hash)
	if err != nil {
		return 0, err
	}
	if id <= 0 {
		return 0, fmt.Errorf("auth: register %q: store returned id %d", email, id)
	}
	rec := Record{ID: id, Email: email, Realm: a.realm, Hash: hash, Token: makeToken(a.secret, id, a.now())}
	if err := a.store.SetToken(ctx, id, rec.Token); err != nil {
		a.cache.drop(id)
		return 0, err
	}
	a.cache.put(rec)
	return id, nil
}

// validEmail checks an e-mail for registration: not empty, not the
// administrator's, and usable as a Basic and Digest user name (no colon, no
// control characters).
func validEmail(email string) error {
	switch {
	case email == "":
		return errors.New("auth: register: empty e-mail")
	case email == AdminEmail:
		return errors.New("auth: register: the administrator has no record")
	case len(email) > 320:
		return errors.New("auth: register: e-mail too long")
	}
	for i := 0; i < len(email); i++ {
		if c := email[i]; c < ' ' || c == 0x7f || c == ':' {
			return fmt.Errorf("auth: register %q: e-mail with a colon or a control character", email)
		}
	}
	return nil
}

// ParseLogin splits the EMAIL:PASSWORD of a -login flag at the first colon;
// the password may contain colons.
func ParseLogin(s string) (email, password string, err error) {
	email, password, ok := strings.Cut(s, ":")
	if !ok || email == "" {
		return "", "", fmt.Errorf("auth: login %q: want EMAIL:PASSWORD", s)
	}
	return email, password, nil
}

// writeTimeout bounds a store write. A write runs to its end (or this
// limit) even when the request that started it is cancelled, so that a
// client that goes away never leaves a token half-changed.
const writeTimeout = 10 * time.Second

// writeContext returns the context of a store write: the values of ctx,
// without its cancellation, and with [writeTimeout].
func writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
}

// readError returns the error of a store read: the context's own error when
// ctx ended (the client went away; no server failure), else err.
func readError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, ErrNoRecord) {
		return cerr
	}
	return err
}

// byID returns the record with the given id, from memory when it is there.
func (a *Authenticator) byID(ctx context.Context, id int64) (Record, error) {
	if rec, ok := a.cache.id(id); ok {
		return rec, nil
	}
	gen := a.cache.generation()
	rec, err := a.store.ByID(ctx, id)
	if err != nil {
		return Record{}, readError(ctx, err)
	}
	a.cache.fill(gen, rec)
	return rec, nil
}

// byEmail returns the record of email in the realm, from memory when it is
// there.
func (a *Authenticator) byEmail(ctx context.Context, email string) (Record, error) {
	if rec, ok := a.cache.email(email); ok {
		return rec, nil
	}
	gen := a.cache.generation()
	rec, err := a.store.ByEmail(ctx, email, a.realm)
	if err != nil {
		return Record{}, readError(ctx, err)
	}
	a.cache.fill(gen, rec)
	return rec, nil
}

// issue stores a new token for rec and returns the record with it. Tokens
// have a resolution of one second, so a token issued again within the same
// second is the stored one and costs no write.
func (a *Authenticator) issue(ctx context.Context, rec Record) (Record, error) {
	token := makeToken(a.secret, rec.ID, a.now())
	if token == rec.Token {
		return rec, nil
	}
	ctx, cancel := writeContext(ctx)
	defer cancel()
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if err := a.store.SetToken(ctx, rec.ID, token); err != nil {
		return Record{}, err
	}
	rec.Token = token
	a.cache.setToken(rec)
	return rec, nil
}

// grant issues a new token for rec, sets the session cookies and returns
// the identity.
func (a *Authenticator) grant(w http.ResponseWriter, r *http.Request, rec Record) (*core.Identity, error) {
	rec, err := a.issue(r.Context(), rec)
	if err != nil {
		return nil, err
	}
	if err := a.setSession(w, r, rec.ID, rec.Token); err != nil {
		return nil, err
	}
	return &core.Identity{ID: rec.ID, Email: rec.Email}, nil
}

// challenge sets the WWW-Authenticate headers of a 401 answer and returns
// err: Basic realm="<realm>", then Digest when it is enabled.
func (a *Authenticator) challenge(w http.ResponseWriter, stale bool, err error) error {
	h := w.Header()
	if a.digest {
		h["Www-Authenticate"] = []string{a.basicChallenge, a.digestChallenge(stale)}
	} else {
		h["Www-Authenticate"] = []string{a.basicChallenge}
	}
	return err
}

func admin() *core.Identity { return &core.Identity{ID: 0, Email: AdminEmail} }

// Login authenticates r with the checks of docs/wire.md#check-order, in order:
//
//  1. An Authorization header: Basic (and Digest when enabled). Success
//     stores a new token and sets the token and user_id cookies. Any other
//     scheme, or a malformed value, is 401 Unauthorized.
//  2. The route groups user_id or email, with token (from the request
//     context of the core router): the administrator token for e-mail admin
//     (or id 0), else the stored token or hash of the record; a value other
//     than the stored token is replaced by a new token and the cookies are
//     set.
//  3. The cookies user_id and token: the administrator token for id 0, else
//     the stored token of the record; a mismatch expires both cookies.
//  4. Otherwise 401 Unauthorized.
//
// On failure it returns a *core.StatusError with the status line listed in
// docs/wire.md#authentication-failures, or "429 Too Many Requests" when the
// client is throttled (see [Throttle]), or a store error (the context's own
// error when the request was cancelled), and leaves the headers of the answer
// (WWW-Authenticate, Set-Cookie, Retry-After) on w for the caller to write
// with core.WriteError; every 401 carries the challenge, a 429 none. Login
// writes no status itself.
func (a *Authenticator) Login(w http.ResponseWriter, r *http.Request) (*core.Identity, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		return a.loginHeader(w, r, h)
	}
	if req := core.FromContext(r.Context()); req != nil {
		uid, email, token := req.Vars["user_id"], req.Vars["email"], req.Vars["token"]
		if (uid != "" || email != "") && token != "" {
			return a.loginRoute(w, r, uid, email, token)
		}
	}
	if uid, token, ok := a.sessionCookies(r); ok {
		return a.loginCookie(w, r, uid, token)
	}
	return nil, a.challenge(w, false, errUnauthorized)
}

// loginHeader is step 1: the Authorization header.
func (a *Authenticator) loginHeader(w http.ResponseWriter, r *http.Request, h string) (*core.Identity, error) {
	scheme, _ := splitAuthorization(h)
	switch {
	case strings.EqualFold(scheme, "Basic"):
		email, password, ok := parseBasic(h)
		if !ok {
			return nil, a.challenge(w, false, errUnauthorized)
		}
		return a.loginBasic(w, r, email, password)
	case a.digest && strings.EqualFold(scheme, "Digest"):
		d, ok := parseDigest(h)
		if !ok {
			return nil, a.challenge(w, false, errUnauthorized)
		}
		rec, stale, err := a.checkDigest(w, r, &d)
		if err == errTooMany {
			return nil, err
		}
		if _, isStatus := core.AsStatus(err); isStatus {
			return nil, a.challenge(w, stale, err)
		}
		if err != nil {
			return nil, err
		}
		return a.grant(w, r, rec)
	}
	// A scheme the server does not check never grants access.
	return nil, a.challenge(w, false, errUnauthorized)
}

// loginBasic checks Basic credentials, under the login throttle.
func (a *Authenticator) loginBasic(w http.ResponseWriter, r *http.Request, email, password string) (*core.Identity, error) {
	at, err := a.begin(w, r)
	if err != nil {
		return nil, err
	}
	rec, err := a.byEmail(r.Context(), email)
	if errors.Is(err, ErrNoRecord) {
		at.fail()
		return nil, a.challenge(w, false, errUnknownEmail)
	}
	if err != nil {
		at.abort()
		return nil, err
	}
	if err := at.account(w, rec.ID); err != nil {
		return nil, err
	}
	if !equal(HashPassword(email, a.realm, password), rec.Hash) {
		at.fail()
		return nil, a.challenge(w, false, errUnauthorized)
	}
	at.succeed()
	return a.grant(w, r, rec)
}

// loginRoute is step 2: route groups user_id or email, with token.
func (a *Authenticator) loginRoute(w http.ResponseWriter, r *http.Request, uid, email, token string) (*core.Identity, error) {
	id, idOK := parseID(uid)
	if email == AdminEmail && uid == "" || uid != "" && idOK && id == 0 {
		if !equal(token, a.adminToken) {
			if err := a.failedSession(w, r); err != nil {
				return nil, err
			}
			return nil, a.challenge(w, false, errNotAuthorized)
		}
		return admin(), nil
	}
	// A value that cannot be a session token of the record is a guess (the
	// password hash is one): a throttled address learns nothing, not even
	// whether the record exists.
	session := len(token) == tokenLen && (uid == "" || idOK && validToken(a.secret, id, token))
	var at attempt
	if !session {
		var err error
		if at, err = a.begin(w, r); err != nil {
			return nil, err
		}
	}
	var rec Record
	var err error
	switch {
	case uid != "" && !idOK:
		err = ErrNoRecord
	case uid != "":
		rec, err = a.byID(r.Context(), id)
	default:
		rec, err = a.byEmail(r.Context(), email)
	}
	switch {
	case errors.Is(err, ErrNoRecord) && session:
		if err := a.failedSession(w, r); err != nil {
			return nil, err
		}
		return nil, errNoRecord
	case errors.Is(err, ErrNoRecord):
		at.fail()
		return nil, errNoRecord
	case err != nil:
		at.abort()
		return nil, err
	}
	if session {
		if validToken(a.secret, rec.ID, token) && equal(token, rec.Token) {
			return &core.Identity{ID: rec.ID, Email: rec.Email}, nil
		}
		if err := a.failedSession(w, r); err != nil {
			return nil, err
		}
		return nil, a.challenge(w, false, errUnauthorized)
	}
	if err := at.account(w, rec.ID); err != nil {
		return nil, err
	}
	if len(token) == hashLen && equal(token, rec.Hash) {
		at.succeed()
		return a.grant(w, r, rec)
	}
	at.fail()
	return nil, a.challenge(w, false, errUnauthorized)
}

// loginCookie is step 3: cookies user_id and token. A valid session costs
// the throttle nothing; a failed one counts against the client address.
func (a *Authenticator) loginCookie(w http.ResponseWriter, r *http.Request, uid, token string) (*core.Identity, error) {
	id, ok := parseID(uid)
	if ok && id == 0 {
		if !equal(token, a.adminToken) {
			if err := a.failedSession(w, r); err != nil {
				return nil, err
			}
			return nil, a.challenge(w, false, errNotAdmin)
		}
		return admin(), nil
	}
	if ok && validToken(a.secret, id, token) {
		rec, err := a.byID(r.Context(), id)
		if err != nil && !errors.Is(err, ErrNoRecord) {
			return nil, err
		}
		if err == nil && equal(token, rec.Token) {
			return &core.Identity{ID: rec.ID, Email: rec.Email}, nil
		}
	}
	expireCookie(w, r, CookieToken)
	expireCookie(w, r, CookieUserID)
	if err := a.failedSession(w, r); err != nil {
		return nil, err
	}
	return nil, a.challenge(w, false, errUnauthorized)
}

// failedSession counts a failed session or administrator token against the
// client address; it returns errTooMany when the address is throttled.
func (a *Authenticator) failedSession(w http.ResponseWriter, r *http.Request) error {
	if a.throttle == nil {
		return nil
	}
	return a.throttle.failed(w, a.now(), clientAddr(r))
}

// begin starts a throttled attempt of a guessable credential from the
// client of r; it returns errTooMany (with Retry-After set on w) when the
// client address is throttled.
func (a *Authenticator) begin(w http.ResponseWriter, r *http.Request) (attempt, error) {
	if a.throttle == nil {
		return attempt{}, nil
	}
	return a.throttle.begin(w, a.now(), clientAddr(r))
}

// Logout ends the session of the request's cookies (docs/wire.md#logout): with
// both cookies user_id and token present, the token cookie is expired and,
// when the id is not 0, the stored token is cleared if it equals the cookie
// token. Without both cookies it does nothing. It returns only store errors.
func (a *Authenticator) Logout(w http.ResponseWriter, r *http.Request) error {
	uid, token, ok := a.sessionCookies(r)
	if !ok {
		return nil
	}
	expireCookie(w, r, CookieToken)
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
	a.cache.update(id, func(rec *Record) {
		if cleared || rec.Token == token {
			rec.Token = ""
		}
	})
	return nil
}

// parseID parses a record id: decimal digits only, at most 18 of them.
func parseID(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }
