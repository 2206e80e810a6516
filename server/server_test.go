package server

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/internal/poll"
)

// selfSigned returns a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "reso test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k, Leaf: leaf}, pool
}

// TestServe checks what the server adds to each connection, over plain
// HTTP and TLS: the exact reason phrase, r.TLS over TLS with HTTP/1.1, the
// request in flight, and the shutdown hooks.
func TestServe(t *testing.T) {
	cert, pool := selfSigned(t)
	for _, withTLS := range []bool{false, true} {
		name := map[bool]string{false: "http", true: "tls"}[withTLS]
		t.Run(name, func(t *testing.T) {
			inside := make(chan struct{})
			release := make(chan struct{})
			var sawTLS bool
			var starts []time.Duration // the starts noted on the connection
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sawTLS = r.TLS != nil
				if l := core.ConnLocalFrom(r.Context()); l != nil {
					starts = append(starts, l.Start)
				}
				if r.URL.Path == "/slow" {
					close(inside)
					<-release
				}
				core.WriteError(w, r, core.Status(http.StatusBadRequest, "Invalid Path"))
			})
			var o Options
			client := &http.Client{}
			if withTLS {
				o.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
				client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
			}
			srv := New(h, o)
			wentAway := make(chan struct{})
			srv.RegisterOnShutdown(func() { close(wentAway) })
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(ln)
			defer srv.Close()
			base := map[bool]string{false: "http://", true: "https://"}[withTLS] + ln.Addr().String()

			resp, err := client.Get(base + "/x")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.Status != "400 Invalid Path" || resp.Proto != "HTTP/1.1" || string(body) != "400 Invalid Path\n" || sawTLS != withTLS {
				t.Errorf("%s %s %q, r.TLS set %v", resp.Proto, resp.Status, body, sawTLS)
			}
			// A second request on the same connection has a start of its
			// own noted on it, for middleware (core.ConnLocal).
			resp, err = client.Get(base + "/x")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			// The handler flushed its status line before it returned (a
			// reason phrase of its own), so the client can have the answer
			// while the request is still in flight: wait until it is not.
			if !poll.Wait(10*time.Second, func() bool { return len(srv.InFlight()) == 0 }) {
				t.Fatalf("in flight after the answers: %+v", srv.InFlight())
			}
			if len(starts) != 2 || starts[0] <= 0 || starts[1] <= starts[0] || starts[1] > core.Clock() {
				t.Errorf("request starts noted on the connection: %v", starts)
			}

			done := make(chan struct{})
			go func() {
				defer close(done)
				if resp, err := client.Get(base + "/slow?a=1"); err == nil {
					resp.Body.Close()
				}
			}()
			<-inside
			if got := srv.InFlight(); len(got) != 1 || got[0].Method != "GET" || got[0].Target != "/slow?a=1" {
				t.Errorf("in flight: %+v", got)
			}
			close(release)
			<-done
			if err := srv.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			<-wentAway
			// Shutdown returned once every connection was idle: the
			// handlers have returned.
			if got := srv.InFlight(); len(got) != 0 {
				t.Errorf("in flight after shutdown: %+v", got)
			}
		})
	}
}

// TestPlainOnTLS checks that a plain HTTP request on the TLS port gets
// 400 Bad Request.
func TestPlainOnTLS(t *testing.T) {
	cert, _ := selfSigned(t)
	srv := New(http.NotFoundHandler(), Options{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.HasPrefix(line, "HTTP/1.0 400 Bad Request") {
		t.Errorf("%q", line)
	}
}
