package pluginrpc

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// ProtocolVersion is the go-plugin protocol version of this package: 3 for
// the protocol package reso.plugin.v3 (pluginv3), which carries sessions
// and tree clients many to a call (Sessions, Trees). (Version 2,
// reso.plugin.v2, had a call per session and per tree client; version 1,
// reso.plugin.v1, had string fields and failed on anything not UTF-8.) A
// host and a plugin built with different versions refuse each other at the
// handshake.
const ProtocolVersion = 3

// handshake is the go-plugin handshake that host and plugin share; the
// magic cookie only tells a plugin program that a reso host started it, and
// stays the same across protocol versions, so that a plugin of another
// version fails on the version, with a message that says so.
var handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "RESO_PLUGIN",
	MagicCookieValue: "d3c9f5e2-reso-plugin-v1",
}

// PluginName is the one name under which host and plugin dispense the
// plugin in go-plugin's plugin map.
const PluginName = "reso"

// pluginSet returns go-plugin's plugin map: the host side when impl is nil.
func pluginSet(impl plugins.Plugin) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &grpcPlugin{impl: impl}}
}

// grpcPlugin ties the contract to go-plugin: GRPCServer in the plugin
// process, GRPCClient in the host.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	impl plugins.Plugin
	srv  *server // the plugin's server, once registered
}

// GRPCServer registers the plugin's gRPC server.
func (p *grpcPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	p.srv = newServer(p.impl, broker)
	pluginv3.RegisterPluginServer(s, p.srv)
	return nil
}

// GRPCClient returns the host's end of one plugin process; exited ends when
// the process exits.
func (p *grpcPlugin) GRPCClient(exited context.Context, broker *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	rpc := pluginv3.NewPluginClient(cc)
	return &conn{rpc: rpc, broker: broker, exited: exited, sessions: &sessionMux{rpc: rpc}}, nil
}

var (
	_ plugin.Plugin     = (*grpcPlugin)(nil)
	_ plugin.GRPCPlugin = (*grpcPlugin)(nil)
)
