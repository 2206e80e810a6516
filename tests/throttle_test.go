package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Black-box tests of login throttling (-login-attempts, -login-backoff):
// failed logins past the allowance are answered 429 Too Many Requests with
// Retry-After, per account and client address.

// rawFrom sends a GET of target with the given header lines on a new
// connection from the local address ip ("" for any) and reads one answer.
// It reports false when the address cannot be used on this machine.
func rawFrom(t *testing.T, s *server, ip, target string, headers ...string) (response, bool) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if ip != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(ip)}
	}
	c, err := d.Dial("tcp", s.Addr)
	if err != nil {
		if ip != "" {
			t.Logf("dialing from %s: %v", ip, err)
			return response{}, false
		}
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", target, s.Addr)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	return readResponse(t, bufio.NewReader(c), false), true
}

// wantThrottled checks a 429 answer: exact status line, the body repeating
// it, and a Retry-After of whole seconds within the first delay.
func wantThrottled(t *testing.T, r response, maxRetry int) {
	t.Helper()
	if r.StatusLine != "HTTP/1.1 429 Too Many Requests" {
		t.Fatalf("status line %q, want HTTP/1.1 429 Too Many Requests (body %q)", r.StatusLine, r.Body)
	}
	if r.Body != "429 Too Many Requests\n" {
		t.Errorf("body %q", r.Body)
	}
	if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < 1 || n > maxRetry {
		t.Errorf("Retry-After %q, want 1 to %d seconds", r.Header.Get("Retry-After"), maxRetry)
	}
	if ch := r.Header.Values("Www-Authenticate"); len(ch) != 0 {
		t.Errorf("WWW-Authenticate %q on a 429", ch)
	}
	if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
		t.Errorf("Set-Cookie %q on a 429", sc)
	}
}

// TestAuthThrottle: 20 wrong Basic logins from one address are answered
// 401 Unauthorized five times, then 429 Too Many Requests; the right
// password from that address is refused while it is throttled; another
// client address logs in at once, and its session works from the
// throttled address.
func TestAuthThrottle(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		// A first delay of a minute: longer than the test runs.
		s, _ := authStart(t, m, "-login-backoff", "1m")
		wrong, right := authBasic(authEmail, "wrong"), authBasic(authEmail, authPassword)
		for i := range 20 {
			r, _ := rawFrom(t, s, "127.0.0.1", "/private/x", wrong)
			if i < 5 {
				authWant(t, r, "401 Unauthorized", "401 Unauthorized\n")
			} else {
				wantThrottled(t, r, 60)
			}
		}
		r, _ := rawFrom(t, s, "127.0.0.1", "/private/x", right)
		wantThrottled(t, r, 60)

		r, ok := rawFrom(t, s, "127.0.0.2", "/private/x", right)
		if !ok {
			t.Skip("cannot dial from 127.0.0.2 to simulate a second client address")
		}
		authWant(t, r, "200 OK", `{"path": "x"}`)
		tok := cookieNamed(r, "token")
		if tok == nil {
			t.Fatalf("no token cookie: %q", r.Header.Values("Set-Cookie"))
		}
		// A valid session is never throttled, even from the throttled
		// address; a bad one from there is.
		r, _ = rawFrom(t, s, "127.0.0.1", "/private/s", authCookies("1", tok.Value))
		authWant(t, r, "200 OK", `{"path": "s"}`)
		r, _ = rawFrom(t, s, "127.0.0.2", "/private/x", wrong)
		authWant(t, r, "401 Unauthorized", "401 Unauthorized\n")
	})
}

// TestAuthThrottleOff: -login-attempts 0 turns throttling off.
func TestAuthThrottleOff(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := authStart(t, m, "-login-attempts", "0")
		for range 20 {
			authWant(t, s.get(t, "/private/x", authBasic(authEmail, "wrong")), "401 Unauthorized", "401 Unauthorized\n")
		}
		authWant(t, s.get(t, "/private/x", authBasic(authEmail, authPassword)), "200 OK", `{"path": "x"}`)
	})
}

// TestAuthThrottleFlags rejects unusable values of the throttle flags.
func TestAuthThrottleFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-login-attempts", "-1"}, {"-login-backoff", "0s"}, {"-login-backoff", "-1s"}} {
		out, err := command(binary, append([]string{"-addr", "127.0.0.1:0", "-db", ":memory:"}, args...)...).CombinedOutput()
		raceFree(t, string(out))
		if err == nil || !strings.Contains(string(out), args[0]) {
			t.Errorf("reso %q: %v, output %q; want an error naming the flag", args, err, out)
		}
	}
}
