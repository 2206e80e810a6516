package app

import (
	"crypto/tls"
	"flag"
)

// tlsOptions are the flags -tls-cert and -tls-key: with both, the server
// answers HTTPS on -addr instead of plain HTTP (HTTP/1.1 only, see package
// server).
type tlsOptions struct {
	cert, key string
	pair      *tls.Certificate // loaded by validate
}

// tlsFlags declares -tls-cert and -tls-key on fs, filling o.
func tlsFlags(fs *flag.FlagSet, o *tlsOptions) {
	fs.StringVar(&o.cert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS (HTTP/1.1 only) on -addr; needs -tls-key")
	fs.StringVar(&o.key, "tls-key", "", "PEM private key file of -tls-cert")
}

// enabled reports whether the server serves HTTPS.
func (o *tlsOptions) enabled() bool { return o.pair != nil }

// validate checks that -tls-cert and -tls-key come together and loads the
// pair: a missing or unreadable file or a key that does not match the
// certificate is a usage error.
func (o *tlsOptions) validate() error {
	switch {
	case o.cert == "" && o.key == "":
		return nil
	case o.key == "":
		return usagef("-tls-cert needs -tls-key")
	case o.cert == "":
		return usagef("-tls-key needs -tls-cert")
	}
	pair, err := tls.LoadX509KeyPair(o.cert, o.key)
	if err != nil {
		return usagef("-tls-cert %s, -tls-key %s: %s", o.cert, o.key, describe(err))
	}
	o.pair = &pair
	return nil
}

// config returns the server's TLS configuration, nil without TLS.
func (o *tlsOptions) config() *tls.Config {
	if !o.enabled() {
		return nil
	}
	return &tls.Config{Certificates: []tls.Certificate{*o.pair}}
}
