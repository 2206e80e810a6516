package auth

import (
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/reso-project/reso/core"
)

// Login throttling. Failed logins are counted in three bounded in-memory
// tables: per client address, per (account, client address) pair and per
// account. A pair past its free attempts, or an address past its own
// (larger) allowance, is answered 429 Too Many Requests with Retry-After
// for a delay that doubles with every further failure. An account under
// attack from many addresses takes away the free attempts of every address
// that fails on it, but never blocks an address without failures of its
// own on that account. A success clears the failures of its pair.
//
// Guessable credentials (a Basic or Digest password, a password hash in the
// route-token form) are checked against the throttle before they are
// verified, so a throttled client learns nothing about them. Session tokens
// and the administrator token are 128-bit MACs that cannot be guessed: a
// valid one is never throttled and costs nothing here; a failed one counts
// against its client address and is answered 429 while the address is
// throttled.

// Defaults of [Throttle].
const (
	// DefaultLoginAttempts is the number of failed logins per account and
	// client address answered normally before the pair is throttled.
	DefaultLoginAttempts = 5
	// DefaultLoginBackoff is the first delay of a throttled client.
	DefaultLoginBackoff = time.Second
	// DefaultMaxLoginBackoff caps the doubling delay.
	DefaultMaxLoginBackoff = 15 * time.Minute
	// DefaultThrottleDecay is how long a throttled key must stay quiet
	// after its delay for its failure count to halve.
	DefaultThrottleDecay = time.Hour
	// DefaultMaxThrottled bounds the keys of each throttle table.
	DefaultMaxThrottled = 1 << 16
)

// Multiples of Throttle.Attempts for the other two tables.
const (
	addrFactor    = 4  // failures from one client address over all accounts
	accountFactor = 10 // failures on one account over all addresses
)

// Throttle configures login throttling. The zero value turns it on with the
// defaults: 5 free failures per account and client address, 20 per client
// address over all accounts, then 429 Too Many Requests with a delay of 1 s
// that doubles with every further failure up to 15 minutes.
type Throttle struct {
	// Off turns login throttling off: every attempt is checked at once,
	// however many failed before it. For tests and benchmarks.
	Off bool
	// Attempts is the number of failed logins per (account, client
	// address) answered normally; the failure that reaches it starts the
	// delay. A client address gets 4×Attempts failures over all accounts.
	// Once an account has 10×Attempts failures over all addresses, every
	// address that fails on it is delayed from its first failure. 0 means
	// [DefaultLoginAttempts].
	Attempts int
	// Backoff is the first delay; it doubles with every further failure.
	// 0 means [DefaultLoginBackoff].
	Backoff time.Duration
	// MaxBackoff caps the delay; 0 means [DefaultMaxLoginBackoff].
	MaxBackoff time.Duration
	// Decay is how long a key must stay without failures after its delay
	// ended for its failure count to halve; 0 means
	// [DefaultThrottleDecay].
	Decay time.Duration
	// MaxTracked bounds the keys each table tracks; the key whose last
	// failure is oldest is forgotten first. 0 means [DefaultMaxThrottled].
	MaxTracked int
}

// errTooMany answers a throttled login attempt.
var errTooMany = core.Status(http.StatusTooManyRequests, "Too Many Requests")

// throttle counts failed logins. A nil *throttle throttles nothing.
type throttle struct {
	free, addrFree, accountFree int
	backoff, max, decay         time.Duration
	addrs                       *table[netip.Addr]
	pairs                       *table[pairKey]
	accounts                    *table[int64]
}

type pairKey struct {
	id   int64
	addr netip.Addr
}

// newThrottle returns the throttle of cfg with its defaults filled in, or
// nil when it is off.
func newThrottle(cfg Throttle) *throttle {
	if cfg.Off {
		return nil
	}
	t := &throttle{free: cfg.Attempts, backoff: cfg.Backoff, max: cfg.MaxBackoff, decay: cfg.Decay}
	if t.free == 0 {
		t.free = DefaultLoginAttempts
	}
	if t.backoff == 0 {
		t.backoff = DefaultLoginBackoff
	}
	if t.max == 0 {
		t.max = DefaultMaxLoginBackoff
	}
	if t.max < t.backoff {
		t.max = t.backoff
	}
	if t.decay == 0 {
		t.decay = DefaultThrottleDecay
	}
	n := cfg.MaxTracked
	if n == 0 {
		n = DefaultMaxThrottled
	}
	t.addrFree, t.accountFree = addrFactor*t.free, accountFactor*t.free
	t.addrs = newTable(n, hashAddr)
	t.pairs = newTable(n, func(k pairKey) uint64 { return hashAddr(k.addr) ^ mix(uint64(k.id)) })
	t.accounts = newTable(n, func(id int64) uint64 { return mix(uint64(id)) })
	return t
}

// clientAddr returns the throttle key of the request's client: the host
// part of r.RemoteAddr, an IPv6 address cut to its /64. Headers such as
// X-Forwarded-For are not trusted. Clients whose address does not parse
// share the zero key.
func clientAddr(r *http.Request) netip.Addr {
	ip, err := netip.ParseAddr(hostOf(r.RemoteAddr))
	if err != nil {
		return netip.Addr{}
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

// hostOf returns the host of a host:port (without brackets), or s itself
// when it has no port.
func hostOf(s string) string {
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}

// refuse puts the Retry-After of a delay that ends at until in res and
// returns errTooMany.
func refuse(res *Result, now time.Time, until int64) error {
	secs := (until - now.UnixNano() + int64(time.Second) - 1) / int64(time.Second)
	res.retryAfter = max(secs, 1)
	return errTooMany
}

// delay returns the delay after count failures with free of them allowed:
// none below free, then backoff doubled per failure past free, capped.
func (t *throttle) delay(count, free int) time.Duration {
	if count < free {
		return 0
	}
	d := t.backoff
	for i := free; i < count && d < t.max; i++ {
		d *= 2
	}
	return min(d, t.max)
}

// attempt is one check of a guessable credential (a password, or a
// password hash) under the throttle. Keys that already have failures are
// charged one failure before the credential is verified, so that parallel
// guesses see each other; keys without failures are charged only when the
// credential turns out wrong, so that a client without failures is never
// delayed by its own parallel requests. The methods of the attempt of a
// nil throttle do nothing.
type attempt struct {
	t          *throttle
	now        time.Time
	addr       netip.Addr
	id         int64  // the record, once known (records have ids > 0)
	addrCharge charge // the advance charge of the address, if any
	pairCharge charge // the advance charge of the pair, if any
}

// begin starts an attempt from addr: 429 when addr is throttled.
func (t *throttle) begin(res *Result, now time.Time, addr netip.Addr) (attempt, error) {
	at := attempt{t: t, now: now, addr: addr}
	if t == nil {
		return at, nil
	}
	c := t.addrs.charge(now, addr, t.addrFree, false, true, false, t)
	if c.blocked {
		return at, refuse(res, now, c.until)
	}
	at.addrCharge = c
	return at, nil
}

// account continues the attempt on the record id: 429 when the pair of id
// and the address is throttled.
func (at *attempt) account(res *Result, id int64) error {
	t := at.t
	if t == nil {
		return nil
	}
	at.id = id
	k := pairKey{id, at.addr}
	c := t.pairs.charge(at.now, k, t.free, false, true, false, t)
	if c.blocked {
		at.abort()
		return refuse(res, at.now, c.until)
	}
	if c.ok && t.accounts.count(at.now, id, t) >= t.accountFree {
		// The account is under attack: the pair's delay counts from its
		// first failure.
		t.pairs.force(k, &c, t)
	}
	at.pairCharge = c
	return nil
}

// fail records that the credential was wrong: a failure of the address and,
// when the account is known, of the pair and the account.
func (at *attempt) fail() {
	t := at.t
	if t == nil {
		return
	}
	if !at.addrCharge.ok {
		t.addrs.charge(at.now, at.addr, t.addrFree, false, false, true, t)
	}
	if at.id == 0 {
		return
	}
	if !at.pairCharge.ok {
		force := t.accounts.count(at.now, at.id, t) >= t.accountFree
		t.pairs.charge(at.now, pairKey{at.id, at.addr}, t.free, force, false, true, t)
	}
	t.accounts.charge(at.now, at.id, noLimit, false, false, true, t)
}

// succeed records that the credential was right: the failures of the pair
// are forgotten and taken off the address and the account, and the advance
// charge of the address is taken back.
func (at *attempt) succeed() {
	t := at.t
	if t == nil {
		return
	}
	prior := t.pairs.remove(pairKey{at.id, at.addr})
	if at.pairCharge.ok && prior > 0 {
		prior-- // this attempt's own charge
	}
	t.addrs.sub(at.now, at.addr, prior+b2i(at.addrCharge.ok), t.addrFree, &at.addrCharge, t)
	t.accounts.sub(at.now, at.id, prior, noLimit, nil, t)
}

// abort takes back the advance charges of an attempt that ends without a
// verdict (a store error, or a throttled pair).
func (at *attempt) abort() {
	t := at.t
	if t == nil {
		return
	}
	if at.addrCharge.ok {
		t.addrs.sub(at.now, at.addr, 1, t.addrFree, &at.addrCharge, t)
		at.addrCharge = charge{}
	}
	if at.pairCharge.ok {
		t.pairs.sub(at.now, pairKey{at.id, at.addr}, 1, t.free, &at.pairCharge, t)
		at.pairCharge = charge{}
	}
}

// failed records a failed unguessable credential (a session or
// administrator token) from addr: 429 when addr is throttled, else the
// failure is charged to addr and nil is returned.
func (t *throttle) failed(res *Result, now time.Time, addr netip.Addr) error {
	if t == nil {
		return nil
	}
	if c := t.addrs.charge(now, addr, t.addrFree, false, true, true, t); c.blocked {
		return refuse(res, now, c.until)
	}
	return nil
}

// noLimit is the allowance of the account table, which delays no one by
// itself.
const noLimit = 1 << 30

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
