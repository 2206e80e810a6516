package tests

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gorilla "github.com/gorilla/websocket"
)

// Black-box tests of HTTPS (-tls-cert, -tls-key): reso speaks HTTP/1.1 only
// over TLS, so that exact reason phrases reach the client
// (docs/wire.md#tls).

// testCert writes a self-signed ECDSA certificate for 127.0.0.1 and its key
// to a new directory and returns their paths and a pool trusting it.
func testCert(t *testing.T) (cert, key string, pool *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "reso test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(parsed)
	return cert, key, pool
}

// tlsDial opens a TLS connection to addr offering h2 and http/1.1 (ALPN)
// and checks that the server chose http/1.1.
func tlsDial(t *testing.T, addr string, pool *x509.CertPool) *tls.Conn {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if p := c.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("ALPN: negotiated %q, want http/1.1", p)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// tlsRaw sends the request text on a new TLS connection and reads one
// answer, with its exact status line.
func tlsRaw(t *testing.T, addr string, pool *x509.CertPool, request string) response {
	t.Helper()
	c := tlsDial(t, addr, pool)
	defer c.Close()
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	return readResponse(t, bufio.NewReader(c), strings.HasPrefix(request, "HEAD "))
}

func tlsGet(target string, headers ...string) string {
	var b strings.Builder
	b.WriteString("GET " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n")
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

func TestTLS(t *testing.T) {
	t.Parallel()
	cert, key, pool := testCert(t)
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := authStart(t, m, "-tls-cert", cert, "-tls-key", key)
		if !strings.Contains(s.Log(), `msg="reso listening" addr=`+s.Addr+" tls=true ") {
			t.Errorf("the listening line does not say tls=true:\n%s", s.Log())
		}

		t.Run("reason phrases", func(t *testing.T) {
			for _, c := range []struct{ request, status string }{
				{tlsGet("/nothing"), "HTTP/1.1 404 Not Found"},
				{tlsGet("/files/.."), "HTTP/1.1 400 Invalid Path"},
				{tlsGet("/users/1/name"), "HTTP/1.1 400 Invalid Scope"},
				{tlsGet("/private/x", authBasic("nobody@example.org", "x")), "HTTP/1.1 401 Not Found"},
				{tlsGet("/private/x"), "HTTP/1.1 401 Unauthorized"},
				{"GET /files/.. HTTP/1.0\r\nHost: localhost\r\n\r\n", "HTTP/1.0 400 Invalid Path"},
				{tlsGet("/config"), "HTTP/1.1 200 OK"},
			} {
				r := tlsRaw(t, s.Addr, pool, c.request)
				if r.StatusLine != c.status {
					t.Errorf("%q: status line %q, want %q", strings.SplitN(c.request, "\r\n", 2)[0], r.StatusLine, c.status)
				}
			}
		})

		t.Run("keep-alive", func(t *testing.T) {
			// Two answers on one connection: each phrase stays with its own.
			c := tlsDial(t, s.Addr, pool)
			defer c.Close()
			br := bufio.NewReader(c)
			for _, want := range []struct{ target, status string }{
				{"/files/..", "HTTP/1.1 400 Invalid Path"},
				{"/nothing", "HTTP/1.1 404 Not Found"},
				{"/files/..", "HTTP/1.1 400 Invalid Path"},
			} {
				io.WriteString(c, "GET "+want.target+" HTTP/1.1\r\nHost: localhost\r\n\r\n")
				if r := readResponse(t, br, false); r.StatusLine != want.status {
					t.Errorf("%s: %q, want %q", want.target, r.StatusLine, want.status)
				}
			}
		})

		t.Run("Go client", func(t *testing.T) {
			// A client that prefers HTTP/2 gets HTTP/1.1 and the phrase.
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
			defer tr.CloseIdleConnections()
			cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			resp, err := cl.Get("https://" + s.Addr + "/files/..")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.Proto != "HTTP/1.1" || resp.Status != "400 Invalid Path" {
				t.Errorf("got %s %s, want HTTP/1.1 400 Invalid Path", resp.Proto, resp.Status)
			}
		})

		t.Run("secure cookies", func(t *testing.T) {
			r := tlsRaw(t, s.Addr, pool, tlsGet("/private/x", authBasic(authEmail, authPassword)))
			if r.StatusLine != "HTTP/1.1 200 OK" {
				t.Fatalf("Basic login over TLS: %q %q", r.StatusLine, r.Body)
			}
			for _, name := range []string{"token", "user_id"} {
				c := cookieNamed(r, name)
				if c == nil {
					t.Errorf("no %s cookie in %q", name, r.Header["Set-Cookie"])
					continue
				}
				if !c.Secure || !c.HttpOnly {
					t.Errorf("cookie %s: Secure %v HttpOnly %v, want both (%q)", name, c.Secure, c.HttpOnly, r.Header["Set-Cookie"])
				}
			}
		})

		t.Run("WebSocket", func(t *testing.T) {
			// The channel over wss: a session keeps the TLS connection
			// under core's wrapper (core.Hijacked), never the bare TCP
			// one under TLS.
			d := gorilla.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, HandshakeTimeout: 10 * time.Second}
			dial := func() *gorilla.Conn {
				c, resp, err := d.Dial("wss://"+s.Addr+"/channel", nil)
				if err != nil {
					t.Fatalf("wss dial: %v (%v)", err, resp)
				}
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				return c
			}
			roundTrip := func(c *gorilla.Conn, msg string) string {
				t.Helper()
				if err := c.WriteMessage(gorilla.TextMessage, []byte(msg)); err != nil {
					t.Fatal(err)
				}
				_, b, err := c.ReadMessage()
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			sub, pub := dial(), dial()
			defer sub.Close()
			defer pub.Close()
			if got := roundTrip(sub, `{"method":"SUBSCRIBE","resource":"/tls/room","msg_id":1}`); !strings.HasPrefix(got, `{"msg_id":1,"code":"success","epoch":"`) {
				t.Fatalf("SUBSCRIBE over wss: %s", got)
			}
			if got := roundTrip(pub, `{"method":"NOTIFY","resource":"/tls/room","data":"hi","msg_id":2}`); got != `{"msg_id":2,"code":"success","sent_count":1}` {
				t.Errorf("NOTIFY over wss: %s", got)
			}
			if _, b, err := sub.ReadMessage(); err != nil || !strings.HasPrefix(string(b), `{"notify":"NOTIFY","resource":"/tls/room","data":"hi","from":"`) {
				t.Errorf("notification over wss: %s, %v", b, err)
			}
		})

		t.Run("plain HTTP", func(t *testing.T) {
			r := raw(t, s.Addr, "GET /config HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
			if r.StatusLine != "HTTP/1.0 400 Bad Request" || strings.Contains(r.Body, "directory") {
				t.Errorf("plain HTTP to the TLS port: %q %q", r.StatusLine, r.Body)
			}
		})
	})
}

// TestPlainCookiesNotSecure: without TLS the same login sets cookies
// without Secure, which a browser would not send back over plain HTTP.
func TestPlainCookiesNotSecure(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, m mode) {
		s, _ := authStart(t, m)
		if !strings.Contains(s.Log(), " tls=false ") {
			t.Errorf("the listening line does not say tls=false:\n%s", s.Log())
		}
		r := s.get(t, "/private/x", authBasic(authEmail, authPassword))
		if c := cookieNamed(r, "token"); c == nil || c.Secure {
			t.Errorf("token cookie over plain HTTP: %q", r.Header["Set-Cookie"])
		}
	})
}
