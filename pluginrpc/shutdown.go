package pluginrpc

import (
	"context"
	"fmt"

	"google.golang.org/grpc/status"

	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// The plugin's Close (Plugin.Close): the host calls it at shutdown, before
// it stops the process; the plugin runs its plugins.Closer.

// Shutdown calls the plugin's Close (plugins.Closer), if it has one, in
// its process, and returns its error; the process keeps running until
// Close. The host calls it at shutdown (see pluginhost.Host.Close).
func (c *Client) Shutdown(ctx context.Context) error {
	cn := c.cur.Load()
	if cn == nil {
		return nil
	}
	resp, err := cn.rpc.Close(ctx, &pluginv3.ClosePluginRequest{})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("pluginrpc: plugin %q: close: %s", c.cfg.Name, status.Convert(err).Message())
	}
	if e := resp.GetError(); e != nil {
		return decodeError(e)
	}
	return nil
}

// Close calls the plugin's Close, if it has one.
func (s *server) Close(ctx context.Context, _ *pluginv3.ClosePluginRequest) (*pluginv3.ClosePluginResponse, error) {
	c, ok := s.impl.(plugins.Closer)
	if !ok {
		return &pluginv3.ClosePluginResponse{}, nil
	}
	if err := c.Close(ctx); err != nil {
		return &pluginv3.ClosePluginResponse{Error: encodeError(err)}, nil
	}
	return &pluginv3.ClosePluginResponse{}, nil
}

var _ plugins.Shutdowner = (*Client)(nil)
