package pluginrpc

import (
	"sync"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/reso-project/reso/core"
	"github.com/reso-project/reso/pluginrpc/pluginv3"
	"github.com/reso-project/reso/plugins"
)

// server is the plugin's end: it serves the Plugin service for impl.
type server struct {
	pluginv3.UnimplementedPluginServer
	impl     plugins.Plugin
	broker   *plugin.GRPCBroker
	contents *contentTable

	streams *eventTable

	mu       sync.RWMutex
	handlers []core.Handler
	sessions []core.SessionHandler
	host     *remoteHost
	hostConn *grpc.ClientConn
}

func newServer(impl plugins.Plugin, broker *plugin.GRPCBroker) *server {
	return &server{impl: impl, broker: broker, contents: newContentTable(ContentIdle), streams: newEventTable(ContentIdle)}
}

// shutdown releases what the server holds.
func (s *server) shutdown() {
	s.contents.closeAll()
	s.streams.closeAll()
	s.mu.Lock()
	if s.hostConn != nil {
		s.hostConn.Close()
		s.hostConn = nil
	}
	s.mu.Unlock()
}

var _ pluginv3.PluginServer = (*server)(nil)
