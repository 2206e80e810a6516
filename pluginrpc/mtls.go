package pluginrpc

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// The connection between the host and a plugin process is mutual TLS, as
// go-plugin's AutoMTLS makes it: each side has a certificate of its own,
// made for this process, and trusts only the other's. AutoMTLS makes its
// keys on P-521, which Go computes without assembly: a plugin's start cost
// the two sides about 50 ms of CPU for the keys and handshakes, 0.4 s of
// CPU for the nine processes of -isolate all (2.2 s of wall time under the
// race detector). The host makes both pairs of keys here instead, on P-256,
// and hands the plugin its own key over a pipe that only the child inherits
// (never in the environment, which a process of the same user can read,
// nor on disk):
//
//   - mtlsFDEnv names the plugin's descriptor of the pipe, which holds the
//     PEM blocks of the plugin's certificate, its private key and the
//     host's certificate, in that order; [Serve] reads it at start and
//     serves with go-plugin's TLSProvider.
//   - PLUGIN_CLIENT_CERT carries the host's certificate as AutoMTLS does,
//     for a plugin built before: it makes its own keys and sends its
//     certificate in the handshake, which go-plugin then trusts instead.
const (
	mtlsFDEnv     = "RESO_PLUGIN_TLS_FD"
	clientCertEnv = "PLUGIN_CLIENT_CERT"
	// mtlsMax bounds what a plugin reads from the pipe.
	mtlsMax = 64 << 10
)

// keyPair is a certificate with its key, and both in PEM.
type keyPair struct {
	cert    tls.Certificate
	certPEM []byte
	keyPEM  []byte
}

// newKeyPair makes a self-signed certificate for "localhost", good for
// the client and the server side of TLS, as go-plugin's AutoMTLS makes
// them (each side's certificate is the other's only root).
func newKeyPair() (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "localhost", Organization: []string{"reso plugin"}},
		DNSNames:              []string{"localhost"},
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SerialNumber:          sn,
		// A plugin process lives as long as its host; the validity only
		// has to outlast both, whatever the clock does meanwhile.
		NotBefore: now.Add(-time.Hour),
		NotAfter:  now.Add(30 * 365 * 24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pairOf(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

// pairOf parses a certificate and its key in PEM.
func pairOf(certPEM, keyPEM []byte) (*keyPair, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &keyPair{cert: cert, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// mtlsConfig is one side's TLS: its own certificate, and the other side's
// as the only root, for either role (the plugin serves the host's calls,
// the host serves the plugin's through go-plugin's broker).
func mtlsConfig(own *keyPair, peer *x509.Certificate) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(peer)
	return &tls.Config{
		Certificates: []tls.Certificate{own.cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ServerName:   "localhost",
		MinVersion:   tls.VersionTLS12,
	}
}

// hostMTLS makes the keys of one plugin process and prepares cmd to hand
// the plugin its own: the pipe's read end among cmd's extra files, the
// environment (the host's, unless cmd has one of its own) with
// mtlsFDEnv and PLUGIN_CLIENT_CERT last, so that they win over values
// inherited. It returns the host's TLS and the pipe's read end, which
// the caller closes once the process started (or failed to).
func hostMTLS(cmd *exec.Cmd) (*tls.Config, *os.File, error) {
	host, err := newKeyPair()
	if err != nil {
		return nil, nil, fmt.Errorf("pluginrpc: TLS keys: %w", err)
	}
	plug, err := newKeyPair()
	if err != nil {
		return nil, nil, fmt.Errorf("pluginrpc: TLS keys: %w", err)
	}
	bundle := bytes.Join([][]byte{plug.certPEM, plug.keyPEM, host.certPEM}, nil)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("pluginrpc: TLS keys: %w", err)
	}
	// A few kilobytes: the pipe's buffer holds them before the child
	// reads.
	_, werr := w.Write(bundle)
	if cerr := w.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		r.Close()
		return nil, nil, fmt.Errorf("pluginrpc: TLS keys: %w", werr)
	}
	addEnv(cmd,
		mtlsFDEnv+"="+strconv.Itoa(3+len(cmd.ExtraFiles)),
		clientCertEnv+"="+string(host.certPEM))
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	return mtlsConfig(host, plug.cert.Leaf), r, nil
}

// pluginMTLS returns the plugin's TLS from the pipe its host handed it,
// nil when the host handed none (an older host: go-plugin's AutoMTLS
// then makes the plugin's keys). The variable is removed from the
// environment, so that the plugin's own children do not see it.
func pluginMTLS() (*tls.Config, error) {
	v, ok := os.LookupEnv(mtlsFDEnv)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(mtlsFDEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("pluginrpc: %s=%q: not a descriptor the host hands a plugin", mtlsFDEnv, v)
	}
	f := os.NewFile(uintptr(fd), "reso-plugin-tls")
	if f == nil {
		return nil, fmt.Errorf("pluginrpc: %s=%d: no such descriptor", mtlsFDEnv, fd)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, mtlsMax+1))
	if err != nil {
		return nil, fmt.Errorf("pluginrpc: the TLS keys from the host: %w", err)
	}
	if len(b) > mtlsMax {
		return nil, errors.New("pluginrpc: the TLS keys from the host: more than 64 KiB")
	}
	return parseBundle(b)
}

// parseBundle reads the plugin's certificate, its key and the host's
// certificate, as hostMTLS writes them, into the plugin's TLS.
func parseBundle(b []byte) (*tls.Config, error) {
	var blocks []*pem.Block
	for len(blocks) < 3 {
		var p *pem.Block
		if p, b = pem.Decode(b); p == nil {
			break
		}
		blocks = append(blocks, p)
	}
	if len(blocks) != 3 || len(bytes.TrimSpace(b)) != 0 || blocks[2].Type != "CERTIFICATE" {
		return nil, errors.New("pluginrpc: the TLS keys from the host: want three PEM blocks (the plugin's certificate and key, the host's certificate)")
	}
	own, err := pairOf(pem.EncodeToMemory(blocks[0]), pem.EncodeToMemory(blocks[1]))
	if err != nil {
		return nil, fmt.Errorf("pluginrpc: the TLS keys from the host: %w", err)
	}
	host, err := x509.ParseCertificate(blocks[2].Bytes)
	if err != nil {
		return nil, fmt.Errorf("pluginrpc: the TLS keys from the host: the host's certificate: %w", err)
	}
	return mtlsConfig(own, host), nil
}
