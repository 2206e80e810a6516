package app

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/reso-project/reso/channel"
	chstore "github.com/reso-project/reso/channel/sqlitestore"
	"github.com/reso-project/reso/channelhost"
	"github.com/reso-project/reso/middleware/auth"
	"github.com/reso-project/reso/pluginhost"
	"github.com/reso-project/reso/websocket"
)

// channelOptions are the flags of the resource channel: its tree and its
// WebSocket door.
type channelOptions struct {
	origins        string
	readLimit      int64
	maxConnections int
	ping           time.Duration
	pongTimeout    time.Duration
	queue          int
	queueBytes     int
	subscriptions  int
	history        int
	historyBytes   int
	historyAge     time.Duration
	rulesFile      string
}

// maxReadLimit bounds -channel-read-limit: a message, and the reply or
// notification that carries it back, crosses the boundary of an isolated
// plugin in one gRPC message (at most 4 MiB).
const maxReadLimit = 1 << 20

// channelFlags declares the channel's flags on fs.
func channelFlags(fs *flag.FlagSet, c *channelOptions) {
	fs.StringVar(&c.origins, "channel-origin", "", "origins allowed on a WebSocket handshake besides the server's own host, separated by commas: example.org, *.example.org, http://localhost:3000, or * for any (default: same host only)")
	fs.Int64Var(&c.readLimit, "channel-read-limit", websocket.DefaultReadLimit, fmt.Sprintf("largest WebSocket message in bytes, at most %d (a larger one closes the connection with 1009)", maxReadLimit))
	fs.IntVar(&c.maxConnections, "channel-max-connections", websocket.DefaultMaxConnections, "most open WebSocket connections (past it 503 Too Many Connections)")
	c.ping = websocket.DefaultPingInterval
	fs.Var(durationFlag{&c.ping}, "channel-ping", "interval of WebSocket pings to an idle peer")
	c.pongTimeout = websocket.DefaultPongTimeout
	fs.Var(durationFlag{&c.pongTimeout}, "channel-pong-timeout", "silence after which a WebSocket peer is taken for dead and its connection closed (above -channel-ping)")
	fs.IntVar(&c.queue, "channel-queue", channel.DefaultQueueFrames, "most messages queued for one client; a client that falls further behind is disconnected (1008 slow consumer)")
	fs.IntVar(&c.queueBytes, "channel-queue-bytes", channel.DefaultQueueBytes, "most bytes queued for one client (as -channel-queue)")
	fs.IntVar(&c.subscriptions, "channel-subscriptions", channel.DefaultSubscriptions, "most subscriptions of one client")
	fs.IntVar(&c.history, "channel-history", channel.DefaultHistoryCount, "notifications kept for replay after a reconnect")
	fs.IntVar(&c.historyBytes, "channel-history-bytes", channel.DefaultHistoryBytes, "most bytes of the notifications kept for replay")
	c.historyAge = channel.DefaultHistoryAge
	fs.Var(durationFlag{&c.historyAge}, "channel-history-age", "greatest age of a notification kept for replay")
	fs.StringVar(&c.rulesFile, "channel-rules", "", "file with the permission rules of the channel's top-level paths, one 'PATH RULE' per line (default: every caller may do everything; see docs/channel.md#permissions)")
}

// rules reads the file of -channel-rules; nil when there is none.
func (c *channelOptions) rules() (*channel.Rules, error) {
	if c.rulesFile == "" {
		return nil, nil
	}
	f, err := os.Open(c.rulesFile)
	if err != nil {
		return nil, fmt.Errorf("-channel-rules: %w", err)
	}
	defer f.Close()
	rs, err := channel.ParseRules(f)
	if err != nil {
		return nil, fmt.Errorf("-channel-rules %s: %s", c.rulesFile, strings.TrimPrefix(err.Error(), "channel: rules "))
	}
	return rs, nil
}

// validate checks the channel's flags.
func (c *channelOptions) validate() error {
	for _, v := range []struct {
		name string
		n    int64
	}{
		{"-channel-read-limit", c.readLimit},
		{"-channel-max-connections", int64(c.maxConnections)},
		{"-channel-queue", int64(c.queue)},
		{"-channel-queue-bytes", int64(c.queueBytes)},
		{"-channel-subscriptions", int64(c.subscriptions)},
		{"-channel-history", int64(c.history)},
		{"-channel-history-bytes", int64(c.historyBytes)},
	} {
		if v.n <= 0 {
			return usagef("%s must be a positive number", v.name)
		}
	}
	if c.readLimit > maxReadLimit {
		return usagef("-channel-read-limit must be at most %d", maxReadLimit)
	}
	if c.ping == 0 || c.historyAge == 0 {
		return usagef("-channel-ping and -channel-history-age must be more than 0")
	}
	if c.pongTimeout <= c.ping {
		return usagef("-channel-pong-timeout must be longer than -channel-ping")
	}
	if err := c.transport().Validate(); err != nil {
		return usagef("-channel-origin: %s", strings.TrimPrefix(err.Error(), "websocket: "))
	}
	return nil
}

// transport returns the WebSocket door's options.
func (c *channelOptions) transport() websocket.Options {
	var origins []string
	for _, o := range strings.Split(c.origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			origins = append(origins, o)
		}
	}
	return websocket.Options{
		ReadLimit:      c.readLimit,
		Origins:        origins,
		MaxConnections: c.maxConnections,
		PingInterval:   c.ping,
		PongTimeout:    c.pongTimeout,
	}
}

// openChannelStore opens the channel's store in the -db file with
// -db-sync's setting.
func openChannelStore(cfg *options) (*chstore.Store, error) {
	return chstore.OpenSync(cfg.db, cfg.dbSync.channel())
}

// setupChannel opens the tree over the channel's tables in the -db file
// (opened by the login store before it) and gives the host the tree and
// the WebSocket transport of session routes. The returned function closes
// the tree (its clients get 1001) and then the store. The clients of a
// user whose sessions a ends (removed, or a new password) are ended. The
// returned middleware, nil on a single node, refuses new long-lived
// connections while the node cannot take them (setupFleetChannel).
func setupChannel(ctx context.Context, cfg *options, host *pluginhost.Host, a *auth.Authenticator, logger *slog.Logger) (func(), func(http.Handler) http.Handler, error) {
	c := &cfg.channel
	rules, err := c.rules()
	if err != nil {
		return nil, nil, err
	}
	opt := channel.Options{
		QueueFrames:   c.queue,
		QueueBytes:    c.queueBytes,
		Subscriptions: c.subscriptions,
		HistoryCount:  c.history,
		HistoryBytes:  c.historyBytes,
		HistoryAge:    c.historyAge,
		Rules:         rules,
		Pipeline:      true,
	}
	if cfg.nats != nil {
		return setupFleetChannel(ctx, cfg, opt, host, a, logger)
	}
	st, err := openChannelStore(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("-db %s: %w", cfg.db, err)
	}
	tree, err := channel.New(ctx, st, opt)
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("-db %s: %w", cfg.db, err)
	}
	host.Services.Tree = endedTree{channelhost.TreeOf(tree), tree.EndSession, a}
	a.OnEnd(tree.EndIdentity)
	ws := websocket.New(c.transport())
	host.Sessions = ws
	if o := cfg.ops; o != nil {
		o.addCheck("sqlite "+cfg.db, st.Ping)
		if o.metrics != nil {
			o.metrics.channel(tree, st, ws)
		}
	}
	return func() {
		if err := tree.Close(); err != nil {
			logger.Error("closing the channel's tree", "err", err)
		}
		if err := st.Close(); err != nil {
			logger.Error("closing the channel's store", "err", err)
		}
	}, nil, nil
}

// setupFleetChannel is setupChannel for a node of a fleet: the tree
// applies the fleet's log (docs/fleet.md) instead of keeping a store.
// The returned function closes the tree (its clients get 1001 and the
// others delete its transient resources at once) and then leaves. A node
// the others took for dead while it lived rejoins, keeping its
// connections (fleet.Member). The node's clients of a user whose sessions
// end, whichever node or reso user ended them, are ended. While the node
// is behind the log, the returned middleware answers WebSocket handshakes
// and GETs kept open 503 Behind the Log (admission.go).
func setupFleetChannel(ctx context.Context, cfg *options, opt channel.Options, host *pluginhost.Host, a *auth.Authenticator, logger *slog.Logger) (func(), func(http.Handler) http.Handler, error) {
	o := cfg.ops
	m, err := fleetMember(ctx, cfg, opt, logger, func(id, _ string) {
		if o != nil {
			o.node.Store(&id)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if o != nil {
		id := m.Node()
		o.node.Store(&id)
	}
	tree := m.Tree()
	host.Services.Tree = endedTree{channelhost.TreeOf(tree), tree.EndSession, a}
	a.OnEnd(tree.EndIdentity)
	ws := websocket.New(cfg.channel.transport())
	host.Sessions = ws
	if o != nil {
		o.addCheck("fleet "+m.Name(), m.Ready)
		if o.metrics != nil {
			o.metrics.channel(tree, nil, ws)
			o.metrics.fleet(m)
		}
	}
	return m.Close, admission(m, &cfg.fleet), nil
}
