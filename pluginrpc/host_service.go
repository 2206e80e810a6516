package pluginrpc

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc/status"

	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// The Host service, which the host serves to each plugin process over
// go-plugin's broker, and its settings calls at both ends (ReadBody is in
// body.go). The plugin sees a plugins.Services that offers exactly the
// capabilities the host named (capability.go).

// hostServer serves the host's services to one plugin process.
type hostServer struct {
	pluginv3.UnimplementedHostServer
	host   plugins.Services
	bodies *bodyTable
	trees  treeClients // the tree clients the plugin attached
	// sessions are the process's sessions, for a tree client connected
	// for one (splice.go); nil for none.
	sessions *sessionMux
	crossed  *crossings // the frames sent on Trees calls
	// requests are the process's requests, whose GETs kept open watch
	// runs (watch.go); nil for none.
	requests *requestMux
	watch    WatchFunc // Config.Watch
}

// errNoSettings answers a settings call when the host offers none (the
// plugin's host did not offer them either, so only a plugin that ignored
// that gets it).
var errNoSettings = errors.New("pluginrpc: the host offers no settings")

// Setting returns a shared setting; the host's error crosses in band.
func (s *hostServer) Setting(ctx context.Context, req *pluginv3.SettingRequest) (*pluginv3.SettingResponse, error) {
	settings := s.host.Settings
	if settings == nil {
		return &pluginv3.SettingResponse{Error: encodeError(errNoSettings)}, nil
	}
	v, err := settings.Setting(ctx, string(req.GetName()))
	if err != nil {
		return &pluginv3.SettingResponse{Error: encodeError(err)}, nil
	}
	return &pluginv3.SettingResponse{Value: wire(v)}, nil
}

// SetSetting changes a shared setting; the host's error crosses in band.
func (s *hostServer) SetSetting(ctx context.Context, req *pluginv3.SetSettingRequest) (*pluginv3.SetSettingResponse, error) {
	settings := s.host.Settings
	if settings == nil {
		return &pluginv3.SetSettingResponse{Error: encodeError(errNoSettings)}, nil
	}
	if err := settings.SetSetting(ctx, string(req.GetName()), string(req.GetValue())); err != nil {
		return &pluginv3.SetSettingResponse{Error: encodeError(err)}, nil
	}
	return &pluginv3.SetSettingResponse{}, nil
}

// remoteHost is the host's services as the plugin sees them.
type remoteHost struct {
	client pluginv3.HostClient
	trees  treeCalls // the Trees calls of the plugin's tree clients
	watch  bool      // the host runs GETs kept open (capWatch)
	doors  bool      // the host serves door routes (capDoor)
}

// view returns the services the plugin sees: exactly those the host named
// (capability.go), each reached over the plugin's connection, so that the
// plugin finds the same fields set as it would in process.
func (h *remoteHost) view(capabilities []string) plugins.Services {
	var s plugins.Services
	if slices.Contains(capabilities, capSettings) {
		s.Settings = h
	}
	if slices.Contains(capabilities, capTree) {
		s.Tree = treeHost{h}
		h.watch = slices.Contains(capabilities, capWatch)
		h.doors = slices.Contains(capabilities, capDoor)
	}
	return s
}

// Setting asks the host for a shared setting. The host's own error comes
// back as it was written; a failure to reach the host is the context's
// error when the context ended, else names the setting.
func (h *remoteHost) Setting(ctx context.Context, name string) (string, error) {
	resp, err := h.client.Setting(ctx, &pluginv3.SettingRequest{Name: wire(name)})
	if err != nil {
		return "", hostCallError(ctx, err, "host setting", name)
	}
	if e := resp.GetError(); e != nil {
		return "", decodeError(e)
	}
	return string(resp.GetValue()), nil
}

// SetSetting asks the host to change a shared setting.
func (h *remoteHost) SetSetting(ctx context.Context, name, value string) error {
	resp, err := h.client.SetSetting(ctx, &pluginv3.SetSettingRequest{Name: wire(name), Value: wire(value)})
	if err != nil {
		return hostCallError(ctx, err, "host set setting", name)
	}
	if e := resp.GetError(); e != nil {
		return decodeError(e)
	}
	return nil
}

// hostCallError is the error of a host service call that failed in gRPC.
func hostCallError(ctx context.Context, err error, what, name string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return fmt.Errorf("pluginrpc: %s %q: %s", what, name, status.Convert(err).Message())
}

var (
	_ pluginv3.HostServer = (*hostServer)(nil)
	_ plugins.Settings    = (*remoteHost)(nil)
)
