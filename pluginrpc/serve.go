package pluginrpc

import (
	"crypto/tls"
	"errors"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/reso-project/reso/plugins"
)

// ErrNotStartedByHost is returned by [Serve] when the program was not
// started by a reso host (the handshake's magic cookie is missing).
var ErrNotStartedByHost = errors.New("pluginrpc: this program is a reso plugin: load it with reso -plugin NAME=PATH instead of running it")

// Serve serves p to the reso host that started this process and returns
// when the host ends the plugin. It is all a plugin program's main does.
//
// Standard output carries go-plugin's handshake: write nothing to it, before
// or after Serve is called. Log to standard error; the host copies each line
// into its log: a line written by log/slog's text or JSON handler (or
// hclog's JSON format) becomes a host record with the same level, message
// and attributes, and the plugin's name; any other line is logged as text. Serve returns [ErrNotStartedByHost] at once when the program
// was not started by a host.
func Serve(p plugins.Plugin) error {
	return serve(p, handshake)
}

// serve is Serve with a chosen handshake (tests speak a wrong one).
func serve(p plugins.Plugin, hs plugin.HandshakeConfig) error {
	if p == nil {
		return errors.New("pluginrpc: Serve: nil plugin")
	}
	if os.Getenv(hs.MagicCookieKey) != hs.MagicCookieValue {
		return ErrNotStartedByHost
	}
	tlsConf, err := pluginMTLS()
	if err != nil {
		return err
	}
	var tlsProvider func() (*tls.Config, error)
	if tlsConf != nil {
		tlsProvider = func() (*tls.Config, error) { return tlsConf, nil }
	}
	go watchParent(os.Getppid())
	gp := &grpcPlugin{impl: p}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		// The keys the host made (mtls.go); without them, go-plugin's
		// AutoMTLS makes the plugin's.
		TLSProvider: tlsProvider,
		Plugins:     plugin.PluginSet{PluginName: gp},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			// Fixed flow-control windows: no BDP-estimation pings, which
			// would cost the host a round trip on many small requests.
			return grpc.NewServer(append(opts,
				grpc.InitialWindowSize(1<<20),
				grpc.InitialConnWindowSize(4<<20),
			)...)
		},
		// go-plugin's own messages, as JSON lines that the host turns into
		// records of its log.
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       "pluginrpc",
			Level:      hclog.Warn,
			Output:     os.Stderr,
			JSONFormat: true,
		}),
	})
	if gp.srv != nil {
		gp.srv.shutdown()
	}
	return nil
}

// watchParent ends the process when its parent is gone. On Linux the host
// also sets a parent-death signal; this covers the other systems, and a
// parent that dies before the signal is armed.
func watchParent(ppid int) {
	for range time.Tick(500 * time.Millisecond) {
		if os.Getppid() != ppid {
			os.Exit(3)
		}
	}
}
