package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writePair writes a self-signed certificate and its key to dir.
func writePair(t *testing.T, dir string) (cert, key string) {
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
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func TestTLSFlags(t *testing.T) {
	dir := t.TempDir()
	cert, key := writePair(t, dir)
	other, _ := writePair(t, t.TempDir())
	cases := []struct {
		args []string
		want string // "" for no error, else part of the usage error
	}{
		{nil, ""},
		{[]string{"-tls-cert", cert, "-tls-key", key}, ""},
		{[]string{"-tls-cert", cert}, "-tls-cert needs -tls-key"},
		{[]string{"-tls-key", key}, "-tls-key needs -tls-cert"},
		{[]string{"-tls-cert", filepath.Join(dir, "missing.pem"), "-tls-key", key}, "no such file or directory"},
		{[]string{"-tls-cert", other, "-tls-key", key}, "does not match"},
		{[]string{"-tls-cert", key, "-tls-key", cert}, "-tls-cert"},
	}
	for _, c := range cases {
		cfg, err := parseFlags(append([]string{"-directory", dir}, c.args...), io.Discard)
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.args, err)
			} else if got := cfg.tls.enabled(); got != (c.args != nil) {
				t.Errorf("%q: enabled %v", c.args, got)
			}
			continue
		}
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want a usage error with %q", c.args, err, c.want)
		}
		if code := exitCode(err, io.Discard); code != 2 {
			t.Errorf("%q: exit code %d, want 2", c.args, code)
		}
	}
}

func TestLogFormatFlag(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want logFormat
		err  bool
	}{
		{nil, logText, false},
		{[]string{"-log-format", "text"}, logText, false},
		{[]string{"-log-format", "json"}, logJSON, false},
		{[]string{"-log-format", "xml"}, "", true},
	} {
		cfg, err := parseFlags(append([]string{"-directory", dir}, c.args...), io.Discard)
		if c.err {
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), "want text or json") {
				t.Errorf("%q: error %v, want a usage error", c.args, err)
			}
			continue
		}
		if err != nil || cfg.logFormat != c.want {
			t.Errorf("%q: %v, %v; want %v", c.args, cfg, err, c.want)
		}
	}
}
