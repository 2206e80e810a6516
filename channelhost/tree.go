package channelhost

import (
	"context"
	"errors"

	"github.com/reso-project/reso/channel"
	"github.com/reso-project/reso/plugins"
)

// TreeOf returns t as the host service [plugins.Tree] (for
// plugins.Services.Tree). Its clients can also be drained without a
// goroutine waiting in Next, which the WebSocket door does (see
// doors.Session):
// an idle session then keeps no goroutine of its own.
func TreeOf(t *channel.Tree) plugins.Tree { return channelTree{t} }

// channelTree adapts *channel.Tree to plugins.Tree.
type channelTree struct{ t *channel.Tree }

// Connect attaches a client to the tree.
func (c channelTree) Connect(_ context.Context, id, identity string) (plugins.TreeClient, error) {
	cl, err := c.t.Connect(id, identity)
	if err != nil {
		return nil, err
	}
	return &channelClient{c: cl}, nil
}

// Call executes one message without a client; the tree in process never
// fails to answer.
func (c channelTree) Call(ctx context.Context, from, identity string, msg []byte) ([]byte, error) {
	return c.t.Call(ctx, from, identity, msg), nil
}

// channelClient adapts *channel.Client to plugins.TreeClient, with the
// TryNext and OnReady that let the WebSocket door (doors.Session) drain it
// without a goroutine waiting in Next.
// Like Next, TryNext is not safe for concurrent use (they share scratch).
type channelClient struct {
	c       *channel.Client
	scratch []channel.Frame
}

// Exec executes one message of the client; it cannot fail in process.
func (c *channelClient) Exec(ctx context.Context, msg []byte) error {
	c.c.Exec(ctx, msg)
	return nil
}

// Next returns the frames queued, waiting for one.
func (c *channelClient) Next(ctx context.Context, buf []plugins.TreeFrame) ([]plugins.TreeFrame, error) {
	fs, err := c.c.Next(ctx, c.scratch)
	return c.take(buf, fs, err)
}

// TryNext returns the frames queued, without waiting.
func (c *channelClient) TryNext(buf []plugins.TreeFrame) ([]plugins.TreeFrame, error) {
	fs, err := c.c.TryNext(c.scratch)
	return c.take(buf, fs, err)
}

// OnReady passes f on to the tree's client.
func (c *channelClient) OnReady(f func()) { c.c.OnReady(f) }

// Err returns the client's *plugins.TreeGone once it is disconnected, nil
// while it lives, without taking frames: a drainer that leaves frames
// queued while its own consumer catches up (pluginrpc's host side) learns
// from it that the tree dropped the client.
func (c *channelClient) Err() error { return goneOf(c.c.Err()) }

// Disconnect detaches the client.
func (c *channelClient) Disconnect() { c.c.Disconnect() }

// take appends fs to buf[:0] as the contract's frames, keeps fs's array
// (cleared, so that idle clients hold no frame) for the next call, and
// turns the tree's *channel.Gone into the contract's *plugins.TreeGone.
func (c *channelClient) take(buf []plugins.TreeFrame, fs []channel.Frame, err error) ([]plugins.TreeFrame, error) {
	buf = buf[:0]
	for _, f := range fs {
		buf = append(buf, plugins.TreeFrame(f))
	}
	clear(fs)
	c.scratch = fs[:0]
	return buf, goneOf(err)
}

// goneOf turns the tree's *channel.Gone into the contract's
// *plugins.TreeGone; other errors (nil, a context's) pass as they are.
func goneOf(err error) error {
	if err == nil {
		return nil // the common case, without errors.As's reflection
	}
	var gone *channel.Gone
	if errors.As(err, &gone) {
		return &plugins.TreeGone{Code: gone.Code, Reason: gone.Reason}
	}
	return err
}

var (
	_ plugins.Tree       = channelTree{}
	_ plugins.TreeClient = (*channelClient)(nil)
)

// What doors.Session drains without a goroutine waiting in Next.
var _ interface {
	TryNext(buf []plugins.TreeFrame) ([]plugins.TreeFrame, error)
	OnReady(f func())
} = (*channelClient)(nil)
