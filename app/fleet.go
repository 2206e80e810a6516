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
	return nil
}

// connect opens the node's NATS connection: reconnecting forever, every
// 2 s with jitter, so that the node recovers by itself when NATS returns.
func (f *fleetOptions) connect(logger *slog.Logger) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name("reso"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(2 * time.Second),
		nats.RetryOnFailedConnect(false),
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

// fleetTree joins the fleet and returns the tree that applies its log,
// caught up, and the membership (Close it after the tree).
func fleetTree(ctx context.Context, cfg *options, opt channel.Options, logger *slog.Logger) (*channel.Tree, *fleet.Fleet, error) {
	f := &cfg.fleet
	jctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	sum := sha256.Sum256([]byte(opt.Rules.Canonical()))
	rules := hex.EncodeToString(sum[:])
	fc := fleet.Config{
		Name: f.name, Replicas: f.replicas, Heartbeat: f.heartbeat, SnapshotInterval: f.snapshot,
		RulesHash: rules, Logger: logger,
	}
	if o := cfg.ops; o != nil && o.metrics != nil {
		fc.Observer = o.metrics.fleetObserver()
	}
	fl, err := fleet.Open(jctx, cfg.nats, fc)
	var refused *fleet.Refused
	if errors.As(err, &refused) {
		return nil, nil, refused
	}
	if err != nil {
		return nil, nil, fmt.Errorf("-nats: %w", err)
	}
	logger.Info("channel rules", "sha256", rules)
	logger.Info("fleet node", "node", fl.Node(), "fleet", fl.Name())
	opt.Log, opt.Node = fl, fl.Node()
	tree, err := channel.New(ctx, nil, opt)
	if err != nil {
		fl.Close()
		return nil, nil, err
	}
	if err := fl.Run(jctx, tree); err != nil {
		tree.Close()
		fl.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, fmt.Errorf("-nats: no JetStream answer within a minute: %w", err)
		}
		return nil, nil, fmt.Errorf("-nats: %w", err)
	}
	return tree, fl, nil
}
