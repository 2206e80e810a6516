package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
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
	// Cookies names the session cookies and sets their Path; the zero
	// value is the cookies token and user_id with Path=/ (see [Cookies]).
	Cookies Cookies
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
	// OnCheck, when set, is told the outcome of every check of a request
	// that carries credentials: the scheme ("basic", "digest", "route"
	// for the route's user and token, "cookie", "other" for an unchecked
	// scheme) and whether they were accepted. Anonymous requests are not
	// reported. It is called concurrently and must be quick (a metrics
	// counter).
	OnCheck func(scheme string, ok bool)
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
	onCheck        func(scheme string, ok bool)
	codec          *securecookie.SecureCookie
	cookies        Cookies // with every default filled in
	now            func() time.Time
	nonceLifetime  time.Duration
	nonceKey       []byte
	cache          *cache
	throttle       *throttle  // nil when off
	wmu            sync.Mutex // serializes store writes with their cache updates

	emu   sync.Mutex // serializes the calls of onEnd
	onEnd []func(email string)
	ends  endLog
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
	cookies, err := cfg.Cookies.withDefaults()
	if err != nil {
		return nil, err
	}
	a := &Authenticator{
		cookies:       cookies,
		onCheck:       cfg.OnCheck,
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
