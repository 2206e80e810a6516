package pluginrpc

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
)

// TestMTLSRefusesOthers checks that a plugin process serves only its
// host: a TLS client without a certificate, or with a certificate of its
// own making, is refused at the handshake; the host itself is served
// (TestContract).
func TestMTLSRefusesOthers(t *testing.T) {
	c := load(t, Config{Name: "test", Cmd: childCmd("serve")})
	addr := c.cur.Load().pc.ReattachConfig().Addr
	other, err := newKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	for name, certs := range map[string][]tls.Certificate{
		"no certificate":      nil,
		"another certificate": {other.cert},
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := tls.Dial(addr.Network(), addr.String(), &tls.Config{
				Certificates: certs,
				// The plugin's certificate is not what is checked here.
				InsecureSkipVerify: true,
				NextProtos:         []string{"h2"},
			})
			if err != nil {
				return // refused at the handshake
			}
			defer conn.Close()
			// TLS 1.3: the server checks the client's certificate after
			// the client's part of the handshake; its refusal comes as
			// an alert on the first read.
			if _, err := conn.Read(make([]byte, 64)); err == nil || !strings.Contains(err.Error(), "certificate") {
				t.Errorf("a client with %s: read %v, want the refusal of its certificate", name, err)
			}
		})
	}
}

// TestMTLSBundle checks what a plugin does with what its host hands it:
// the three PEM blocks make its TLS, anything else is an error that says
// what it wanted; no descriptor named means no keys from the host (an
// older host, AutoMTLS).
func TestMTLSBundle(t *testing.T) {
	host, err := newKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	plug, err := newKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	good := string(plug.certPEM) + string(plug.keyPEM) + string(host.certPEM)
	conf, err := parseBundle([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(conf.Certificates) != 1 || !conf.Certificates[0].Leaf.Equal(plug.cert.Leaf) || conf.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Errorf("the plugin's TLS: %+v", conf)
	}
	if _, err := host.cert.Leaf.Verify(x509.VerifyOptions{Roots: conf.ClientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the host's certificate is not the plugin's root: %v", err)
	}
	for name, b := range map[string]string{
		"empty":            "",
		"two blocks":       string(plug.certPEM) + string(plug.keyPEM),
		"four blocks":      good + string(host.certPEM),
		"trailing text":    good + "x",
		"key of another":   string(plug.certPEM) + string(host.keyPEM) + string(host.certPEM),
		"key for the host": string(plug.certPEM) + string(plug.keyPEM) + string(host.keyPEM),
	} {
		if _, err := parseBundle([]byte(b)); err == nil || !strings.HasPrefix(err.Error(), "pluginrpc: the TLS keys from the host: ") {
			t.Errorf("%s: %v", name, err)
		}
	}

	t.Setenv(mtlsFDEnv, "")
	os.Unsetenv(mtlsFDEnv)
	if conf, err := pluginMTLS(); conf != nil || err != nil {
		t.Errorf("no %s: %v, %v", mtlsFDEnv, conf, err)
	}
	for _, v := range []string{"x", "1", "99999"} {
		t.Setenv(mtlsFDEnv, v)
		if _, err := pluginMTLS(); err == nil || !strings.Contains(err.Error(), mtlsFDEnv) && !strings.Contains(err.Error(), "TLS keys") {
			t.Errorf("%s=%s: %v", mtlsFDEnv, v, err)
		}
	}
}
