package auth

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// digestClient is a minimal RFC 7616 client (MD5, qop=auth), written
// independently of the server code.
type digestClient struct {
	user, password string
	realm, nonce   string
	nc             int
}

var challengeParam = regexp.MustCompile(`(\w+)=(?:"([^"]*)"|([^,\s]*))`)

// challenge reads the Digest challenge among WWW-Authenticate values.
func (c *digestClient) challenge(t *testing.T, values []string) map[string]string {
	t.Helper()
	for _, v := range values {
		if rest, ok := strings.CutPrefix(v, "Digest "); ok {
			p := map[string]string{}
			for _, m := range challengeParam.FindAllStringSubmatch(rest, -1) {
				p[m[1]] = m[2] + m[3]
			}
			c.realm, c.nonce, c.nc = p["realm"], p["nonce"], 0
			return p
		}
	}
	t.Fatalf("no Digest challenge in %q", values)
	return nil
}

func h(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// authorization returns the Authorization header line for a request.
func (c *digestClient) authorization(method, uri string) string {
	c.nc++
	nc := fmt.Sprintf("%08x", c.nc)
	cnonce := "0a4f113b"
	ha1 := h(c.user + ":" + c.realm + ":" + c.password)
	ha2 := h(method + ":" + uri)
	resp := h(ha1 + ":" + c.nonce + ":" + nc + ":" + cnonce + ":auth:" + ha2)
	return fmt.Sprintf(`Authorization: Digest username="%s", realm="%s", nonce="%s", uri="%s", `+
		`algorithm=MD5, response="%s", qop=auth, nc=%s, cnonce="%s"`,
		c.user, c.realm, c.nonce, uri, resp, nc, cnonce)
}

func digestFixture(t *testing.T) *fixture {
	return newFixture(t, func(c *Config) { c.Digest = true; c.NonceLifetime = time.Minute })
}

func TestDigestChallenge(t *testing.T) {
	f := digestFixture(t)
	r := f.get(t, "/private/x")
	if r.status != "401 Unauthorized" || len(r.challenge) != 2 || r.challenge[0] != basicChallenge {
		t.Fatalf("%q, WWW-Authenticate %q; want the Basic challenge, then Digest", r.status, r.challenge)
	}
	c := &digestClient{}
	p := c.challenge(t, r.challenge)
	if p["realm"] != "localhost" || p["qop"] != "auth" || p["algorithm"] != "MD5" || len(p["nonce"]) != nonceLen || p["stale"] != "" {
		t.Errorf("Digest challenge %q", r.challenge[1])
	}
	if r2 := f.get(t, "/private/x"); r2.challenge[1] == r.challenge[1] {
		t.Errorf("nonce repeated: %q", r2.challenge[1])
	}
}

func TestDigest(t *testing.T) {
	f := digestFixture(t)
	ctx := context.Background()
	// A user known only by a precomputed hash: Digest needs no password.
	hid, err := f.a.RegisterHash(ctx, "hash@example.com", h("hash@example.com:localhost:hidden"))
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(user, password string) *digestClient {
		c := &digestClient{user: user, password: password}
		c.challenge(t, f.get(t, "/").challenge)
		return c
	}

	t.Run("success", func(t *testing.T) {
		c := fresh(testEmail, testPassword)
		for i := range 2 { // the nonce may be used again with a higher nc
			f.clock.Advance(time.Second)
			r := f.get(t, "/private/a?b=c", c.authorization("GET", "/private/a?b=c"))
			if r.status != "200 OK" || r.body != fmt.Sprintf("%d %s", f.id, testEmail) {
				t.Fatalf("request %d: %q %q", i, r.status, r.body)
			}
			if tok := wantSession(t, r, f.id); tok != f.stored(t, f.id).Token {
				t.Errorf("cookie token %q is not the stored one", tok)
			}
		}
	})
	t.Run("from the stored hash", func(t *testing.T) {
		c := fresh("hash@example.com", "hidden")
		if r := f.get(t, "/x", c.authorization("GET", "/x")); r.status != "200 OK" || r.body != fmt.Sprint(hid)+" hash@example.com" {
			t.Errorf("%q %q", r.status, r.body)
		}
	})
	t.Run("stale nonce", func(t *testing.T) {
		c := fresh(testEmail, testPassword)
		f.clock.Advance(2 * time.Minute)
		r := f.get(t, "/x", c.authorization("GET", "/x"))
		if r.status != "401 Unauthorized" {
			t.Fatalf("status %q", r.status)
		}
		if p := c.challenge(t, r.challenge); p["stale"] != "true" {
			t.Errorf("challenge %q, want stale=true", r.challenge)
		}
		if r := f.get(t, "/x", c.authorization("GET", "/x")); r.status != "200 OK" {
			t.Errorf("with the new nonce: %q", r.status)
		}
	})

	tests := []struct {
		name   string
		header func(c *digestClient) string
		status string
	}{
		{"wrong password", func(c *digestClient) string {
			c.password = "wrong"
			return c.authorization("GET", "/x")
		}, "401 Unauthorized"},
		{"unknown user", func(c *digestClient) string {
			c.user = "nobody@example.com"
			return c.authorization("GET", "/x")
		}, "401 Not Found"},
		{"other realm", func(c *digestClient) string {
			c.realm = "elsewhere"
			return c.authorization("GET", "/x")
		}, "401 Unauthorized"},
		{"forged nonce", func(c *digestClient) string {
			c.nonce = c.nonce[:2*nonceRawLen] + strings.Repeat("0", nonceMACLen)
			return c.authorization("GET", "/x")
		}, "401 Unauthorized"},
		{"nonce from the future", func(c *digestClient) string {
			other := &Authenticator{nonceKey: f.a.nonceKey, realm: f.a.realm}
			c.nonce = other.newNonce(f.clock.Now().Add(time.Hour))
			return c.authorization("GET", "/x")
		}, "401 Unauthorized"},
		{"other uri", func(c *digestClient) string {
			return strings.Replace(c.authorization("GET", "/y"), `uri="/y"`, `uri="/x"`, 1)
		}, "401 Unauthorized"},
		{"uri of another request", func(c *digestClient) string { return c.authorization("GET", "/y") }, "401 Unauthorized"},
		{"other method", func(c *digestClient) string { return c.authorization("POST", "/x") }, "401 Unauthorized"},
		{"SHA-256", func(c *digestClient) string {
			return strings.Replace(c.authorization("GET", "/x"), "algorithm=MD5", "algorithm=SHA-256", 1)
		}, "401 Unauthorized"},
		{"no qop", func(c *digestClient) string {
			return strings.Replace(c.authorization("GET", "/x"), "qop=auth, ", "", 1)
		}, "401 Unauthorized"},
		{"userhash", func(c *digestClient) string { return c.authorization("GET", "/x") + ", userhash=true" }, "401 Unauthorized"},
		{"repeated parameter", func(c *digestClient) string { return c.authorization("GET", "/x") + `, realm="localhost"` }, "401 Unauthorized"},
		{"malformed", func(*digestClient) string { return `Authorization: Digest username="x` }, "401 Unauthorized"},
		{"empty", func(*digestClient) string { return "Authorization: Digest" }, "401 Unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fresh(testEmail, testPassword)
			before := f.stored(t, f.id).Token
			r := f.get(t, "/x", tt.header(c))
			if r.status != tt.status {
				t.Fatalf("status %q, want %q", r.status, tt.status)
			}
			if len(r.challenge) != 2 || r.challenge[0] != basicChallenge || strings.Contains(r.challenge[1], "stale") {
				t.Errorf("WWW-Authenticate %q", r.challenge)
			}
			if len(r.cookies) != 0 || f.stored(t, f.id).Token != before {
				t.Errorf("a failure changed the session")
			}
		})
	}

	t.Run("Basic still works", func(t *testing.T) {
		if r := f.get(t, "/", basic(testEmail, testPassword)); r.status != "200 OK" {
			t.Errorf("%q", r.status)
		}
	})
}

// TestDigestCurl logs in with curl --digest, when curl is installed.
func TestDigestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	f := digestFixture(t)
	run := func(user string) (code, body, headers string) {
		out, err := exec.Command(curl, "-sS", "--digest", "-u", user, "-D", "-",
			"-w", "\n%{http_code}", f.srv.URL+"/private/a%20b?x=1").CombinedOutput()
		if err != nil {
			t.Fatalf("curl: %v\n%s", err, out)
		}
		s := string(out)
		i := strings.LastIndexByte(s, '\n')
		head, b, _ := strings.Cut(s[:i], "\r\n\r\n")
		// The first response is the challenge; keep the last one.
		for strings.HasPrefix(b, "HTTP/") {
			head, b, _ = strings.Cut(b, "\r\n\r\n")
		}
		return s[i+1:], b, head
	}
	code, body, head := run(testEmail + ":" + testPassword)
	if code != "200" || body != fmt.Sprintf("%d %s", f.id, testEmail) {
		t.Fatalf("curl --digest: %s %q\n%s", code, body, head)
	}
	tok := f.stored(t, f.id).Token
	if !strings.Contains(head, "Set-Cookie: token="+tok+"; Path=/; HttpOnly; SameSite=Lax") ||
		!strings.Contains(head, fmt.Sprintf("Set-Cookie: user_id=%d; Path=/; HttpOnly; SameSite=Lax", f.id)) {
		t.Errorf("cookies of the curl login:\n%s", head)
	}
	if code, _, head := run(testEmail + ":wrong"); code != "401" || !strings.HasPrefix(head, "HTTP/1.1 401 Unauthorized") {
		t.Errorf("curl --digest, wrong password: %s\n%s", code, head)
	}
	if code, _, head := run("nobody@example.com:x"); code != "401" || !strings.HasPrefix(head, "HTTP/1.1 401 Not Found") {
		t.Errorf("curl --digest, unknown user: %s\n%s", code, head)
	}
}

func TestParseDigest(t *testing.T) {
	good := `Digest username="Mufasa", realm="http-auth@example.org", uri="/dir/index.html", ` +
		`algorithm=MD5, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", nc=00000001, ` +
		`cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ", qop=auth, ` +
		`response="8ca523f5e9506fed4657c9700eebdbec", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"`
	d, ok := parseDigest(good)
	if !ok || d.username != "Mufasa" || d.realm != "http-auth@example.org" || d.uri != "/dir/index.html" ||
		d.nc != "00000001" || d.qop != "auth" || d.algorithm != "MD5" || d.response != "8ca523f5e9506fed4657c9700eebdbec" {
		t.Fatalf("parseDigest = %+v, %v", d, ok)
	}
	for _, tt := range []struct {
		in   string
		ok   bool
		user string
	}{
		{`digest username="a\"b\\c", realm=r, nonce=n, uri="/", response=x`, true, `a"b\c`},
		{`Digest  ,username = "a" ,, realm=r,nonce=n,uri="/",response=x, `, true, "a"},
		{`Digest username="a", realm=r, nonce=n, uri="/", response=x, future="ignored"`, true, "a"},
		{`Digest username="a", realm=r, nonce=n, uri="/"`, false, ""},
		{`Digest username="a" realm=r, nonce=n, uri="/", response=x`, false, ""},
		{`Digest username="a, realm=r, nonce=n, uri="/", response=x`, false, ""},
		{`Digest username=, realm=r, nonce=n, uri="/", response=x`, false, ""},
		{`Digest =a, realm=r, nonce=n, uri="/", response=x`, false, ""},
		{`Digest username="a\`, false, ""},
		{"Digest username=\"a\x01\", realm=r, nonce=n, uri=\"/\", response=x", false, ""},
		{`Basic username="a", realm=r, nonce=n, uri="/", response=x`, false, ""},
		{`Digest`, false, ""},
	} {
		d, ok := parseDigest(tt.in)
		if ok != tt.ok || d.username != tt.user {
			t.Errorf("parseDigest(%q) = %q, %v; want %q, %v", tt.in, d.username, ok, tt.user, tt.ok)
		}
	}
}
