package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// answer is what the throttle tests look at in an answer served in
// memory: the status code, Retry-After and the body.
type answer struct {
	code       int
	retryAfter string
	body       string
	header     http.Header
}

// from serves a GET of path from the client address addr ("host:port")
// through the fixture's handler, in memory.
func (f *fixture) from(t testing.TB, addr, path string, header ...string) answer {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.RemoteAddr = addr
	for _, h := range header {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Add(k, v)
	}
	w := httptest.NewRecorder()
	f.handler().ServeHTTP(w, req)
	return answer{code: w.Code, retryAfter: w.Header().Get("Retry-After"), body: w.Body.String(), header: w.Header()}
}

// wantCode checks the status code of a, and for 429 the body and a
// Retry-After of retry seconds ("" skips that check).
func wantCode(t testing.TB, what string, a answer, code int, retry string) {
	t.Helper()
	if a.code != code {
		t.Fatalf("%s: status %d, want %d (body %q)", what, a.code, code, a.body)
	}
	if code == http.StatusTooManyRequests {
		if a.body != "429 Too Many Requests\n" {
			t.Errorf("%s: body %q", what, a.body)
		}
		if retry != "" && a.retryAfter != retry {
			t.Errorf("%s: Retry-After %q, want %q", what, a.retryAfter, retry)
		}
		if ch := a.header.Values("Www-Authenticate"); len(ch) != 0 {
			t.Errorf("%s: a 429 with a challenge %q", what, ch)
		}
		if sc := a.header.Values("Set-Cookie"); len(sc) != 0 && !strings.Contains(sc[0], "Max-Age=0") {
			t.Errorf("%s: a 429 sets cookies %q", what, sc)
		}
	} else if a.retryAfter != "" {
		t.Errorf("%s: Retry-After %q on a %d", what, a.retryAfter, a.code)
	}
}

const (
	attacker = "192.0.2.66:4000"
	victim   = "198.51.100.7:5000"
)

// TestThrottlePair: failures of one account from one address are answered
// normally up to the allowance, then 429 with a doubling Retry-After, even
// for the right password; the same account from another address logs in
// at once; a success clears the pair.
func TestThrottlePair(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Throttle = Throttle{MaxBackoff: 10 * time.Second} })
	wrong, right := basic(testEmail, "wrong"), basic(testEmail, testPassword)
	for i := range DefaultLoginAttempts {
		wantCode(t, fmt.Sprint("failure ", i+1), f.from(t, attacker, "/", wrong), 401, "")
	}
	wantCode(t, "right password while throttled", f.from(t, attacker, "/", right), 429, "1")
	wantCode(t, "wrong password while throttled", f.from(t, attacker, "/", wrong), 429, "1")
	wantCode(t, "the account from another address", f.from(t, victim, "/", right), 200, "")
	wantCode(t, "another port of the attacker's address", f.from(t, "192.0.2.66:4001", "/", right), 429, "1")

	// Each further failure doubles the delay, up to MaxBackoff.
	for _, want := range []string{"2", "4", "8", "10", "10"} {
		f.clock.Advance(10 * time.Second)
		wantCode(t, "failure after the delay", f.from(t, attacker, "/", wrong), 401, "")
		wantCode(t, "right password after it", f.from(t, attacker, "/", right), 429, want)
	}
	f.clock.Advance(9 * time.Second)
	wantCode(t, "one second before the end", f.from(t, attacker, "/", right), 429, "1")
	f.clock.Advance(time.Second)
	wantCode(t, "right password after the delay", f.from(t, attacker, "/", right), 200, "")
	// The success cleared the pair: the full allowance again.
	for i := range DefaultLoginAttempts {
		wantCode(t, fmt.Sprint("failure ", i+1, " after a success"), f.from(t, attacker, "/", wrong), 401, "")
	}
	wantCode(t, "throttled again", f.from(t, attacker, "/", right), 429, "1")
}

// TestThrottleStatusLine checks the exact status line and body over a real
// connection.
func TestThrottleStatusLine(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Throttle = Throttle{Attempts: 1, Backoff: time.Minute} })
	if r := f.get(t, "/", basic(testEmail, "wrong")); r.status != "401 Unauthorized" {
		t.Fatalf("first failure: %q", r.status)
	}
	r := f.get(t, "/", basic(testEmail, testPassword))
	if r.status != "429 Too Many Requests" || r.body != "429 Too Many Requests\n" || r.header.Get("Retry-After") != "60" {
		t.Errorf("throttled: %q %q Retry-After %q", r.status, r.body, r.header.Get("Retry-After"))
	}
	if ct := r.header.Get("Content-Type"); ct != "text/plain" {
		t.Errorf("Content-Type %q", ct)
	}
}

// TestThrottleAddress: failures over many accounts from one address (here
// unknown e-mails) throttle the address for every account, and only it.
func TestThrottleAddress(t *testing.T) {
	f := newFixture(t, nil)
	for i := range addrFactor * DefaultLoginAttempts {
		wantCode(t, fmt.Sprint("unknown e-mail ", i), f.from(t, attacker, "/", basic(fmt.Sprintf("u%d@example.com", i), "x")), 401, "")
	}
	wantCode(t, "a real user from the throttled address", f.from(t, attacker, "/", basic(testEmail, testPassword)), 429, "1")
	wantCode(t, "an unknown e-mail from it", f.from(t, attacker, "/", basic("new@example.com", "x")), 429, "1")
	wantCode(t, "the real user from elsewhere", f.from(t, victim, "/", basic(testEmail, testPassword)), 200, "")
	f.clock.Advance(time.Second)
	wantCode(t, "after the delay", f.from(t, attacker, "/", basic(testEmail, testPassword)), 200, "")
}

// TestThrottleAccount: an account that fails from many addresses delays
// every address from its first failure of its own, but never one without
// failures.
func TestThrottleAccount(t *testing.T) {
	f := newFixture(t, nil)
	wrong, right := basic(testEmail, "wrong"), basic(testEmail, testPassword)
	n := 0
	for host := 1; n < accountFactor*DefaultLoginAttempts; host++ {
		for range 2 { // well below the allowance of each address
			wantCode(t, "distributed failure", f.from(t, fmt.Sprintf("203.0.113.%d:1", host), "/", wrong), 401, "")
			n++
		}
	}
	wantCode(t, "an address without failures", f.from(t, victim, "/", right), 200, "")
	wantCode(t, "a new attacker's first failure", f.from(t, "192.0.2.1:1", "/", wrong), 401, "")
	wantCode(t, "the same address next", f.from(t, "192.0.2.1:1", "/", right), 429, "1")
	// An earlier address fails once more: the delay counts all its
	// failures from the first (3 failures: 4 s).
	wantCode(t, "an earlier address fails again", f.from(t, "203.0.113.1:1", "/", wrong), 401, "")
	wantCode(t, "and is delayed at once", f.from(t, "203.0.113.1:1", "/", right), 429, "4")
	wantCode(t, "still no lock-out of a clean address", f.from(t, victim, "/", right), 200, "")
}

// TestThrottleIPv6 throttles an IPv6 client by its /64.
func TestThrottleIPv6(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Throttle = Throttle{Attempts: 1} })
	wantCode(t, "failure", f.from(t, "[2001:db8:1:2::1]:1", "/", basic(testEmail, "x")), 401, "")
	wantCode(t, "same /64", f.from(t, "[2001:db8:1:2:ffff::9]:2", "/", basic(testEmail, testPassword)), 429, "1")
	wantCode(t, "other /64", f.from(t, "[2001:db8:1:3::1]:1", "/", basic(testEmail, testPassword)), 200, "")
}

// TestThrottleSessions: failed session and administrator tokens count
// against the address; a valid session is never throttled; a throttled
// address keeps getting its bad cookies expired.
func TestThrottleSessions(t *testing.T) {
	f := newFixture(t, nil)
	good := wantSession(t, f.get(t, "/", basic(testEmail, testPassword)), f.id)
	id := fmt.Sprint(f.id)
	bad := strings.Repeat("0", tokenLen)
	for i := range addrFactor*DefaultLoginAttempts - 1 {
		wantCode(t, fmt.Sprint("bad cookie ", i), f.from(t, attacker, "/", cookies(id, bad)), 401, "")
	}
	wantCode(t, "bad administrator cookie", f.from(t, attacker, "/", cookies("0", bad)), 401, "")
	a := f.from(t, attacker, "/", cookies(id, bad))
	wantCode(t, "bad cookie while throttled", a, 429, "1")
	if sc := a.header.Values("Set-Cookie"); len(sc) != 2 {
		t.Errorf("Set-Cookie %q, want both cookies expired", sc)
	}
	wantCode(t, "bad route token while throttled", f.from(t, attacker, "/u/"+id+"/"+bad), 429, "1")
	wantCode(t, "bad administrator route token", f.from(t, attacker, "/e/admin/"+bad), 429, "1")
	wantCode(t, "valid session from the throttled address", f.from(t, attacker, "/", cookies(id, good)), 200, "")
	wantCode(t, "valid route token from it", f.from(t, attacker, "/u/"+id+"/"+good), 200, "")
	wantCode(t, "administrator from it", f.from(t, attacker, "/e/admin/"+AdminToken(testSecret)), 200, "")
	wantCode(t, "Basic from it", f.from(t, attacker, "/", basic(testEmail, testPassword)), 429, "1")
	wantCode(t, "bad cookie from elsewhere", f.from(t, victim, "/", cookies(id, bad)), 401, "")
}

// TestThrottleRouteHash: the password hash in the route-token form is a
// password guess, throttled like Basic, even for unknown ids.
func TestThrottleRouteHash(t *testing.T) {
	f := newFixture(t, nil)
	id := fmt.Sprint(f.id)
	hash := HashPassword(testEmail, "localhost", testPassword)
	for i := range DefaultLoginAttempts {
		wantCode(t, fmt.Sprint("wrong hash ", i), f.from(t, attacker, "/u/"+id+"/"+strings.Repeat("a", hashLen)), 401, "")
	}
	wantCode(t, "right hash while throttled", f.from(t, attacker, "/u/"+id+"/"+hash), 429, "1")
	wantCode(t, "right hash by e-mail while throttled", f.from(t, attacker, "/e/"+testEmail+"/"+hash), 429, "1")
	wantCode(t, "right hash from elsewhere", f.from(t, victim, "/e/"+testEmail+"/"+hash), 200, "")

	g := newFixture(t, nil)
	for i := range addrFactor * DefaultLoginAttempts {
		wantCode(t, fmt.Sprint("unknown id ", i), g.from(t, attacker, fmt.Sprintf("/u/%d/%s", 100+i, hash)), 404, "")
	}
	wantCode(t, "unknown id while throttled", g.from(t, attacker, "/u/999/"+hash), 429, "1")
}

// TestThrottleDigest: wrong Digest responses count like wrong Basic
// passwords; a throttled client gets no challenge and no stale hint.
func TestThrottleDigest(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Digest = true; c.NonceLifetime = time.Minute })
	wrong := &digestClient{user: testEmail, password: "wrong"}
	wrong.challenge(t, f.from(t, attacker, "/").header.Values("Www-Authenticate"))
	right := &digestClient{user: testEmail, password: testPassword}
	right.challenge(t, f.from(t, attacker, "/").header.Values("Www-Authenticate"))
	for i := range DefaultLoginAttempts {
		wantCode(t, fmt.Sprint("wrong response ", i), f.from(t, attacker, "/d", wrong.authorization("GET", "/d")), 401, "")
	}
	wantCode(t, "right response while throttled", f.from(t, attacker, "/d", right.authorization("GET", "/d")), 429, "1")
	f.clock.Advance(2 * time.Minute) // the nonce is stale now
	a := f.from(t, attacker, "/d", right.authorization("GET", "/d"))
	wantCode(t, "right response with a stale nonce", a, 401, "")
	if ch := a.header.Values("Www-Authenticate"); len(ch) != 2 || !strings.HasSuffix(ch[1], "stale=true") {
		t.Errorf("challenge %q, want stale=true", ch)
	}
	// The right password (even with a stale nonce) cleared the pair.
	for i := range DefaultLoginAttempts {
		wantCode(t, fmt.Sprint("failure after clearing ", i), f.from(t, attacker, "/", basic(testEmail, "x")), 401, "")
	}
}

// TestThrottleOff: with Throttle.Off every attempt is checked.
func TestThrottleOff(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Throttle = Throttle{Off: true} })
	for i := range 50 {
		wantCode(t, fmt.Sprint("failure ", i), f.from(t, attacker, "/", basic(testEmail, "x")), 401, "")
	}
	wantCode(t, "right password", f.from(t, attacker, "/", basic(testEmail, testPassword)), 200, "")
	if f.a.throttle != nil {
		t.Error("throttle tables kept although off")
	}
}

// TestThrottleDecay: the failure count halves for every quiet Decay after
// the delay ended.
func TestThrottleDecay(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.Throttle = Throttle{Attempts: 2, Backoff: time.Second, MaxBackoff: time.Hour, Decay: time.Hour}
	})
	wrong := basic(testEmail, "x")
	for range 6 { // counts 1..6: delays 0, 1, 2, 4, 8, 16 s
		f.from(t, attacker, "/", wrong)
		f.clock.Advance(time.Minute)
	}
	// 6 failures; the last delay ended 44 s ago. Two quiet hours later the
	// count is 6/4 = 1, so the next failure (2) is delayed by 1 s.
	f.clock.Advance(2 * time.Hour)
	wantCode(t, "failure after the decay", f.from(t, attacker, "/", wrong), 401, "")
	wantCode(t, "delay after the decay", f.from(t, attacker, "/", wrong), 429, "1")
}

// TestThrottleBounded: each table keeps at most MaxTracked keys and forgets
// the oldest first.
func TestThrottleBounded(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Throttle = Throttle{Attempts: 1, MaxTracked: 32, Backoff: time.Hour} })
	for i := range 1000 {
		f.from(t, fmt.Sprintf("10.0.%d.%d:1", i/256, i%256), "/", basic(testEmail, "x"))
	}
	th := f.a.throttle
	for name, n := range map[string]int64{"addresses": th.addrs.n.Load(), "pairs": th.pairs.n.Load(), "accounts": th.accounts.n.Load()} {
		if n > 32+tableShards {
			t.Errorf("%s: %d keys tracked, want about 32", name, n)
		}
	}
	for i := range th.pairs.shards {
		if s := &th.pairs.shards[i]; len(s.m) > s.max {
			t.Errorf("shard %d holds %d keys, max %d", i, len(s.m), s.max)
		}
	}
	wantCode(t, "the newest address", f.from(t, "10.0.3.231:1", "/", basic(testEmail, testPassword)), 429, "3600")
	wantCode(t, "the oldest address, forgotten", f.from(t, "10.0.0.0:1", "/", basic(testEmail, testPassword)), 200, "")
}

// TestThrottleParallel runs parallel logins (run with -race): a client
// without failures is never throttled by its own parallel requests, and
// parallel wrong guesses from an address with failures do not get past the
// allowance.
func TestThrottleParallel(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Throttle = Throttle{Backoff: time.Hour} })
	f.from(t, victim, "/", basic(testEmail, testPassword)) // cache the record
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			if a := f.from(t, victim, "/", basic(testEmail, testPassword)); a.code != 200 {
				t.Errorf("parallel login %d: %d", i, a.code)
			}
		})
	}
	wg.Wait()

	// One failure first, so the attacker's keys are tracked: from then on
	// every guess is charged before it is checked.
	f.from(t, attacker, "/", basic(testEmail, "x"))
	var mu sync.Mutex
	checked := 1
	for i := range 200 {
		wg.Go(func() {
			a := f.from(t, attacker, "/", basic(testEmail, fmt.Sprint("guess", i)))
			if a.code == 401 {
				mu.Lock()
				checked++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if checked != DefaultLoginAttempts {
		t.Errorf("%d guesses checked, want %d", checked, DefaultLoginAttempts)
	}
}

// TestClientAddr checks the throttle key of a client address.
func TestClientAddr(t *testing.T) {
	for _, tt := range []struct{ remote, want string }{
		{"192.0.2.1:1234", "192.0.2.1"},
		{"192.0.2.1", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:80", "2001:db8:1:2::"},
		{"[::ffff:192.0.2.1]:80", "192.0.2.1"},
		{"[fe80::1%eth0]:80", "fe80::"},
		{"", "invalid IP"},
		{"@", "invalid IP"},
		{"pipe:1", "invalid IP"},
	} {
		r := &http.Request{RemoteAddr: tt.remote}
		if got := clientAddr(r); got.String() != tt.want {
			t.Errorf("clientAddr(%q) = %s, want %s", tt.remote, got, tt.want)
		}
	}
}

// TestThrottleConfig rejects negative settings.
func TestThrottleConfig(t *testing.T) {
	for _, th := range []Throttle{{Attempts: -1}, {Backoff: -1}, {MaxBackoff: -1}, {Decay: -1}, {MaxTracked: -1}} {
		if _, err := New(Config{Store: &countingStore{}, Secret: testSecret, Throttle: th}); err == nil {
			t.Errorf("New with %+v: no error", th)
		}
	}
}

// TestLoginCancelled: a login whose request context is already cancelled
// still stores its new token (the write runs to its end), and a cancelled
// read surfaces as the context's error.
func TestLoginCancelled(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.clock.Advance(time.Second) // a new token, hence a write
	req := httptest.NewRequestWithContext(ctx, "GET", "/", nil)
	req.SetBasicAuth(testEmail, testPassword)
	w := httptest.NewRecorder()
	id, err := login(f.a, w, req)
	if err != nil || id == nil || id.ID != f.id {
		t.Fatalf("Login with a cancelled context: %v, %v", id, err)
	}
	var tok string
	for _, c := range w.Result().Cookies() {
		if c.Name == CookieToken {
			tok = c.Value
		}
	}
	if got := f.stored(t, f.id).Token; got != tok || tok == "" {
		t.Errorf("stored token %q, cookie %q", got, tok)
	}

	// Logout with a cancelled context clears the stored token.
	req = httptest.NewRequestWithContext(ctx, "GET", "/", nil)
	req.Header.Set("Cookie", fmt.Sprintf("user_id=%d; token=%s", f.id, tok))
	if err := f.a.Logout(httptest.NewRecorder(), req); err != nil {
		t.Fatal(err)
	}
	if got := f.stored(t, f.id).Token; got != "" {
		t.Errorf("token %q after a logout with a cancelled context", got)
	}

	// A read that misses the memory: the context's own error.
	a, err := New(Config{Store: f.store, Secret: testSecret, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	req = httptest.NewRequestWithContext(ctx, "GET", "/", nil)
	req.SetBasicAuth(testEmail, testPassword)
	_, err = login(a, httptest.NewRecorder(), req)
	if !errors.Is(err, context.Canceled) || err.Error() != context.Canceled.Error() {
		t.Errorf("cancelled read: %v, want %v", err, context.Canceled)
	}
}
