package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/channel/fleet"
	"github.com/reso-project/reso/middleware/auth/natsstore"
)

// fleetOptions are the flags that make the node a member of a fleet
// (docs/fleet.md): the NATS servers, how to reach them, the fleet's name.
type fleetOptions struct {
	urls      string
	name      string
	heartbeat time.Duration
	snapshot  time.Duration // least time between two snapshots
	maxLag    time.Duration // behind the log past it (fleet.Config.MaxLag)
	replicas  int
	creds     string
	tlsCA     string
	tlsCert   string
	tlsKey    string
}

// fleetFlags declares the fleet's flags on fs. The reso user subcommands
// take the connection flags only (heartbeats are the server's).
func fleetFlags(fs *flag.FlagSet, f *fleetOptions, server bool) {
	fs.StringVar(&f.urls, "nats", "", "NATS servers, URL[,URL...]: the node joins a fleet whose tree, login records and instance secret live in JetStream (docs/fleet.md); -db and -secret-file are then not used")
	fs.StringVar(&f.name, "fleet", fleet.DefaultName, "name of the fleet in NATS (several fleets may share one NATS); with -nats")
	fs.StringVar(&f.creds, "nats-creds", "", "NATS credentials file (JWT and NKey seed); with -nats")
	fs.StringVar(&f.tlsCA, "nats-tls-ca", "", "CA certificates (PEM) that NATS servers' certificates must chain to; with -nats")
	fs.StringVar(&f.tlsCert, "nats-tls-cert", "", "client certificate (PEM) for NATS servers that ask for one, with -nats-tls-key")
	fs.StringVar(&f.tlsKey, "nats-tls-key", "", "private key (PEM) of -nats-tls-cert")
	fs.IntVar(&f.replicas, "nats-replicas", fleet.DefaultReplicas, "replicas of the fleet's streams and buckets when they are created (1 for a single NATS server)")
	if server {
		f.heartbeat = fleet.DefaultHeartbeat
		fs.Var(durationFlag{&f.heartbeat}, "fleet-heartbeat", "silence after which the other nodes take a node for dead and delete its transient resources: the floor, up to half more (at most 3s) for a node whose heartbeats come late (at most 15s recommended)")
		f.snapshot = fleet.DefaultSnapshotInterval
		fs.Var(durationFlag{&f.snapshot}, "fleet-snapshot-interval", "least time between two snapshots of the tree (and at least 10000 entries of the log)")
		f.maxLag = fleet.DefaultMaxLag
		fs.Var(durationFlag{&f.maxLag}, "fleet-max-lag", "how long the node may know of an entry of the log without applying it: past it the node is behind, not ready, and answers new WebSockets and GETs kept open 503 Behind the Log with Retry-After")
	}
}

// on reports whether -nats was given.
func (f *fleetOptions) on() bool { return f.urls != "" }

// validate checks the fleet's flags.
func (f *fleetOptions) validate() error {
	if !f.on() {
		return nil
	}
	for _, u := range strings.Split(f.urls, ",") {
		if strings.TrimSpace(u) == "" {
			return usagef("-nats %s: an empty URL", f.urls)
		}
	}
	if f.replicas < 1 || f.replicas > 5 {
		return usagef("-nats-replicas must be from 1 to 5")
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return usagef("-nats-tls-cert and -nats-tls-key go together")
	}
	if f.heartbeat < 0 || f.heartbeat > 0 && f.heartbeat < 100*time.Millisecond {
		return usagef("-fleet-heartbeat must be at least 100ms")
	}
	if f.snapshot < 0 || f.snapshot > 0 && f.snapshot < time.Second {
		return usagef("-fleet-snapshot-interval must be at least 1s")
	}
	if f.maxLag < 0 || f.maxLag > 0 && f.maxLag < 100*time.Millisecond {
		return usagef("-fleet-max-lag must be at least 100ms")
	}
	return nil
}

// Sizes of the node's NATS connection (docs/fleet.md#overload).
const (
	// natsDialTimeout bounds a connection's dial and handshake (nats.go:
	// 2 s), which a loaded node's reconnect may need more of.
	natsDialTimeout = 10 * time.Second
	// natsReconnectBuf bounds what the node's publishes buffer while it
	// reconnects (nats.go: 8 MB): four of the largest messages
	// (max_payload, 1 MB). Past it a publish fails at once and its batch
	// is sent again with the same Nats-Msg-Id by its retry, so a cluster
	// that comes back is not handed a pile of stale publishes at once.
	natsReconnectBuf = 4 << 20
)

// connect opens the node's NATS connection: reconnecting forever, every
// 2 s with jitter, so that the node recovers by itself when NATS returns.
// Asynchronous errors, such as a subscription whose messages the node
// did not take in time (nats: slow consumer), are logged.
func (f *fleetOptions) connect(logger *slog.Logger) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name("reso"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(2 * time.Second),
		nats.RetryOnFailedConnect(false),
		nats.Timeout(natsDialTimeout),
		nats.ReconnectBufSize(natsReconnectBuf),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if sub != nil {
				logger.Warn("nats", "subject", sub.Subject, "err", err)
				return
			}
			logger.Warn("nats", "err", err)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				logger.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { logger.Info("nats reconnected", "url", nc.ConnectedUrlRedacted()) }),
	}
	if f.creds != "" {
		opts = append(opts, nats.UserCredentials(f.creds))
	}
	if f.tlsCA != "" {
		opts = append(opts, nats.RootCAs(f.tlsCA))
	}
	if f.tlsCert != "" {
		opts = append(opts, nats.ClientCert(f.tlsCert, f.tlsKey))
	}
	nc, err := nats.Connect(f.urls, opts...)
	if err != nil {
		return nil, fmt.Errorf("-nats %s: %w", f.urls, err)
	}
	return nc, nil
}

// openLogins opens the fleet's login store and its instance secret.
func (f *fleetOptions) openLogins(ctx context.Context, nc *nats.Conn) (*natsstore.Store, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := natsstore.Open(ctx, nc, f.name, f.replicas)
	if err != nil {
		return nil, nil, fmt.Errorf("-nats: %w", err)
	}
	secret, err := st.Secret(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("-nats: %w", err)
	}
	return st, secret, nil
}

// fleetMember joins the fleet with a tree that applies its log, caught
// up; rejoined is told each rejoin (fleet.Config.Rejoined).
func fleetMember(ctx context.Context, cfg *options, opt channel.Options, logger *slog.Logger, rejoined func(node, was string)) (*fleet.Member, error) {
	f := &cfg.fleet
	jctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	sum := sha256.Sum256([]byte(opt.Rules.Canonical()))
	rules := hex.EncodeToString(sum[:])
	fc := fleet.Config{
		Name: f.name, Replicas: f.replicas, Heartbeat: f.heartbeat, SnapshotInterval: f.snapshot,
		MaxLag: f.maxLag, RulesHash: rules, Logger: logger, Rejoined: rejoined,
	}
	if o := cfg.ops; o != nil && o.metrics != nil {
		fc.Observer = o.metrics.fleetObserver()
	}
	logger.Info("channel rules", "sha256", rules)
	m, err := fleet.Join(jctx, cfg.nats, fc, opt)
	var refused *fleet.Refused
	switch {
	case errors.As(err, &refused):
		return nil, refused
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("-nats: no JetStream answer within a minute: %w", err)
	case err != nil:
		return nil, fmt.Errorf("-nats: %w", err)
	}
	return m, nil
}
