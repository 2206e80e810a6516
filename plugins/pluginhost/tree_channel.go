package pluginhost

import (
	"context"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/plugins"
)

// TreeOf returns t as the host service [Tree], for [Host].Tree.
func TreeOf(t *channel.Tree) plugins.Tree { return channelTree{t} }

// channelTree adapts *channel.Tree to Tree.
type channelTree struct{ t *channel.Tree }

// Connect attaches a client to the tree.
func (c channelTree) Connect(_ context.Context, id, identity string) (plugins.TreeClient, error) {
	cl, err := c.t.Connect(id, identity)
	if err != nil {
		return nil, err
	}
	return channelClient{cl}, nil
}

// Call executes one message without a client; the tree in process never
// fails to answer.
func (c channelTree) Call(ctx context.Context, from, identity string, msg []byte) ([]byte, error) {
	return c.t.Call(ctx, from, identity, msg), nil
}

// channelClient adapts *channel.Client to TreeClient and TreeReadier: its
// Exec cannot fail in process.
type channelClient struct{ *channel.Client }

// Exec executes one message of the client.
func (c channelClient) Exec(ctx context.Context, msg []byte) error {
	c.Client.Exec(ctx, msg)
	return nil
}

var (
	_ plugins.Tree        = channelTree{}
	_ plugins.TreeClient  = channelClient{}
	_ plugins.TreeReadier = channelClient{}
)
