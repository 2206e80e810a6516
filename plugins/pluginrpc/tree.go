package pluginrpc

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reso-project/reso/plugins"
	"github.com/reso-project/reso/plugins/pluginrpc/pluginv2"
)

// The tree (plugins.Tree) across the process boundary, both ends: the
// host's hostServer attaches clients to its tree and streams their frames
// on TreeConnect; the plugin's treeHost is a plugins.Tree over the Host
// service. Frames and messages cross as bytes, unchanged.

// errNoTree answers a tree call when the host offers no tree.
var errNoTree = errors.New("pluginrpc: the host offers no tree")

// errNoTreeClient answers TreeExec for an id that no TreeConnect of this
// plugin process holds.
var errNoTreeClient = errors.New("pluginrpc: no tree client of that id")

// disconnectTimeout bounds a plugin's TreeDisconnect call, which has no
// context of its own: the host may be gone.
const disconnectTimeout = 5 * time.Second

// treeClients is the host's table of the tree clients one plugin process
// attached, by id.
type treeClients struct {
	mu sync.Mutex
	m  map[string]plugins.TreeClient
}

func (t *treeClients) get(id string) plugins.TreeClient {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

func (t *treeClients) put(id string, c plugins.TreeClient) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[string]plugins.TreeClient)
	}
	t.m[id] = c
}

func (t *treeClients) remove(id string, c plugins.TreeClient) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[id] == c {
		delete(t.m, id)
	}
}

// TreeConnect attaches a client and streams its frames until the tree
// disconnects it or the call ends; the client is disconnected either way.
func (s *hostServer) TreeConnect(req *pluginv2.TreeConnectRequest, stream pluginv2.Host_TreeConnectServer) error {
	tree := s.host.Tree
	if tree == nil {
		return stream.Send(&pluginv2.TreeFrames{Error: encodeError(errNoTree)})
	}
	ctx := stream.Context()
	id := string(req.GetId())
	c, err := tree.Connect(ctx, id, string(req.GetIdentity()))
	if err != nil {
		return stream.Send(&pluginv2.TreeFrames{Error: encodeError(err)})
	}
	s.trees.put(id, c)
	defer func() {
		s.trees.remove(id, c)
		c.Disconnect()
	}()
	if err := stream.Send(&pluginv2.TreeFrames{}); err != nil {
		return nil
	}
	if r, ok := c.(treeReadier); ok {
		return sendReady(ctx, stream, r)
	}
	return sendNext(ctx, stream, c)
}

// treeReadier is a tree client that can be drained without a goroutine
// waiting in Next: the clients of the tree in process (doors.TreeOf), which
// the host hands over as they are. How a client is drained is the tree
// adapter's business, not the plugin contract's, so this is found by type
// assertion; another client is drained with Next (sendNext).
type treeReadier interface {
	// TryNext is Next without the wait: the frames queued, appended to
	// buf[:0]; none and nil while the client lives, its *plugins.TreeGone
	// once it is disconnected.
	TryNext(buf []plugins.TreeFrame) ([]plugins.TreeFrame, error)
	// OnReady sets f to be called when frames are queued while none were,
	// and when the client is disconnected; f must return quickly.
	OnReady(f func())
	// Err returns the client's *plugins.TreeGone once it is disconnected,
	// nil while it lives, without taking frames.
	Err() error
}

// sendReady streams the frames of a client of the tree in process. A Send
// waits while the plugin does not read the call (gRPC's flow control), so
// it runs in a goroutine of its own, and while it waits no frame is taken:
// what waits for the plugin is the client's queue in the tree, bounded as
// for any client. When the queue overflows, the tree ends the client (1008
// "slow consumer"), and the call ends at once with that Gone in its status
// (see goneStatus), rather than when the plugin reads again: the host then
// holds neither the client's frames nor a goroutine for it.
func sendReady(ctx context.Context, stream pluginv2.Host_TreeConnectServer, r treeReadier) error {
	wake := make(chan struct{}, 1)
	r.OnReady(func() { wakeUp(wake) })
	defer r.OnReady(nil)
	sent := make(chan error, 1)
	sending := false
	var frames []plugins.TreeFrame
	var out []*pluginv2.TreeFrame
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-sent:
			sending = false
			clear(out)
			clear(frames)
			if err != nil {
				return nil
			}
		case <-wake:
		}
		if sending {
			if err := r.Err(); err != nil {
				// The Send under way gets a moment to finish, so what it
				// carries reaches the plugin before the end; a plugin
				// that does not read lets it wait no longer than that.
				grace := time.NewTimer(sendGrace)
				select {
				case serr := <-sent:
					grace.Stop()
					sending = false
					clear(out)
					clear(frames)
					if serr != nil {
						return nil
					}
					// Take what is left, then the end, as a client ended
					// while no Send waited.
					wakeUp(wake)
					continue
				case <-grace.C:
					return goneStatus(err)
				case <-ctx.Done():
					grace.Stop()
					return nil
				}
			}
			continue
		}
		var err error
		frames, err = r.TryNext(frames)
		if len(frames) > 0 {
			out = appendFrames(out[:0], frames)
			m := &pluginv2.TreeFrames{Frames: out}
			sending = true
			go func() { sent <- stream.Send(m) }()
			if r.Err() != nil {
				// The client ended before this take and the wake of its
				// end was spent on it: nothing else wakes the loop while
				// the plugin lets this Send wait, so look again now.
				wakeUp(wake)
			}
			continue
		}
		if err != nil {
			return sendGoneBounded(ctx, stream, err)
		}
	}
}

// sendGoneBounded sends the end err of a client whose frames were all
// sent, as sendGone does, unless the plugin lets that Send wait past
// sendGrace (it reads nothing, and the Sends before filled the call's
// window): the call then ends with goneStatus, which reaches the plugin
// after those frames however long it waits, rather than holding the
// client's call until the plugin reads.
func sendGoneBounded(ctx context.Context, stream pluginv2.Host_TreeConnectServer, err error) error {
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		sendGone(stream, err)
	}()
	grace := time.NewTimer(sendGrace)
	defer grace.Stop()
	select {
	case <-sent:
		return nil
	case <-grace.C:
		return goneStatus(err)
	case <-ctx.Done():
		return nil
	}
}

// sendGrace is how long a TreeConnect call whose client the tree ended
// waits for the Send under way before it ends with goneStatus.
const sendGrace = time.Second

// wakeUp makes sure a wake is pending on wake.
func wakeUp(wake chan struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// sendNext streams the frames of a client that has no TryNext (a Tree
// other than the host's own): one Next, one Send.
func sendNext(ctx context.Context, stream pluginv2.Host_TreeConnectServer, c plugins.TreeClient) error {
	var frames []plugins.TreeFrame
	var out []*pluginv2.TreeFrame
	for {
		var err error
		frames, err = c.Next(ctx, frames)
		if len(frames) > 0 {
			out = appendFrames(out[:0], frames)
			if serr := stream.Send(&pluginv2.TreeFrames{Frames: out}); serr != nil {
				return nil
			}
			clear(out)
			clear(frames)
		}
		if err != nil {
			sendGone(stream, err)
			return nil
		}
	}
}

// appendFrames appends frames to out as protocol messages.
func appendFrames(out []*pluginv2.TreeFrame, frames []plugins.TreeFrame) []*pluginv2.TreeFrame {
	for _, f := range frames {
		out = append(out, &pluginv2.TreeFrame{Seq: f.Seq, Data: f.Data})
	}
	return out
}

// sendGone sends the client's end when err is its *plugins.TreeGone (the
// call's end is then the plugin's cancel or the host's).
func sendGone(stream pluginv2.Host_TreeConnectServer, err error) {
	var gone *plugins.TreeGone
	if errors.As(err, &gone) {
		_ = stream.Send(&pluginv2.TreeFrames{Gone: &pluginv2.TreeGone{Code: int32(gone.Code), Reason: wire(gone.Reason)}})
	}
}

// goneStatus is the status that ends a TreeConnect call whose client the
// tree ended while a Send waited for the plugin: ABORTED, with the
// client's end as a TreeGone in its details, which the plugin's Next
// returns after the frames sent before it (treeGoneOf).
func goneStatus(err error) error {
	st := status.New(codes.Aborted, "pluginrpc: tree client ended")
	var gone *plugins.TreeGone
	if !errors.As(err, &gone) {
		return st.Err()
	}
	if withGone, derr := st.WithDetails(&pluginv2.TreeGone{Code: int32(gone.Code), Reason: wire(gone.Reason)}); derr == nil {
		st = withGone
	}
	return st.Err()
}

// treeGoneOf returns the client's end that a TreeConnect call's status
// carries (goneStatus), nil when it carries none.
func treeGoneOf(err error) *plugins.TreeGone {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Aborted {
		return nil
	}
	for _, d := range st.Details() {
		if g, ok := d.(*pluginv2.TreeGone); ok {
			return &plugins.TreeGone{Code: int(g.GetCode()), Reason: string(g.GetReason())}
		}
	}
	return nil
}

// TreeExec executes a message of a client of this plugin process.
func (s *hostServer) TreeExec(ctx context.Context, req *pluginv2.TreeExecRequest) (*pluginv2.TreeExecResponse, error) {
	c := s.trees.get(string(req.GetId()))
	if c == nil {
		return &pluginv2.TreeExecResponse{Error: encodeError(errNoTreeClient)}, nil
	}
	if err := c.Exec(ctx, req.GetMsg()); err != nil {
		return &pluginv2.TreeExecResponse{Error: encodeError(err)}, nil
	}
	return &pluginv2.TreeExecResponse{}, nil
}

// TreeDisconnect disconnects a client of this plugin process; an unknown
// id is already gone.
func (s *hostServer) TreeDisconnect(_ context.Context, req *pluginv2.TreeDisconnectRequest) (*pluginv2.TreeDisconnectResponse, error) {
	if c := s.trees.get(string(req.GetId())); c != nil {
		c.Disconnect()
	}
	return &pluginv2.TreeDisconnectResponse{}, nil
}

// TreeCall executes one message without a client.
func (s *hostServer) TreeCall(ctx context.Context, req *pluginv2.TreeCallRequest) (*pluginv2.TreeCallResponse, error) {
	tree := s.host.Tree
	if tree == nil {
		return &pluginv2.TreeCallResponse{Error: encodeError(errNoTree)}, nil
	}
	reply, err := tree.Call(ctx, string(req.GetFrom()), string(req.GetIdentity()), req.GetMsg())
	if err != nil {
		return &pluginv2.TreeCallResponse{Error: encodeError(err)}, nil
	}
	return &pluginv2.TreeCallResponse{Reply: reply}, nil
}

// treeHost is the host's tree as the plugin sees it.
type treeHost struct{ h *remoteHost }

// Connect attaches a client through the host. The client's frames come on
// a call of their own, which lives until Disconnect (or a Next whose ctx
// ends, or the host's end).
func (t treeHost) Connect(ctx context.Context, id, identity string) (plugins.TreeClient, error) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stream, err := t.h.client.TreeConnect(sctx, &pluginv2.TreeConnectRequest{Id: wire(id), Identity: wire(identity)})
	if err != nil {
		cancel()
		return nil, hostCallError(ctx, err, "tree connect", id)
	}
	stop := context.AfterFunc(ctx, cancel)
	ack, err := stream.Recv()
	stop()
	if err != nil {
		cancel()
		return nil, hostCallError(ctx, err, "tree connect", id)
	}
	if e := ack.GetError(); e != nil {
		cancel()
		return nil, decodeError(e)
	}
	return &remoteTreeClient{h: t.h, id: id, stream: stream, cancel: cancel}, nil
}

// Call asks the host's tree to execute one message.
func (t treeHost) Call(ctx context.Context, from, identity string, msg []byte) ([]byte, error) {
	resp, err := t.h.client.TreeCall(ctx, &pluginv2.TreeCallRequest{From: wire(from), Identity: wire(identity), Msg: msg})
	if err != nil {
		return nil, hostCallError(ctx, err, "tree call", from)
	}
	if e := resp.GetError(); e != nil {
		return nil, decodeError(e)
	}
	return resp.GetReply(), nil
}

// remoteTreeClient is a tree client attached through the host.
type remoteTreeClient struct {
	h      *remoteHost
	id     string
	stream pluginv2.Host_TreeConnectClient
	cancel context.CancelFunc

	err          error // what Next returns from now on
	disconnected atomic.Bool
	once         sync.Once
}

// errHostGone ends a client whose call to the host broke.
var errHostGone = &plugins.TreeGone{Code: 1011, Reason: "tree unavailable"}

// errDisconnected ends a client after Disconnect.
var errDisconnected = &plugins.TreeGone{Code: 1000, Reason: "disconnected"}

// Exec sends a message of the client to the host's tree.
func (c *remoteTreeClient) Exec(ctx context.Context, msg []byte) error {
	resp, err := c.h.client.TreeExec(ctx, &pluginv2.TreeExecRequest{Id: wire(c.id), Msg: msg})
	if err != nil {
		return hostCallError(ctx, err, "tree exec", c.id)
	}
	if e := resp.GetError(); e != nil {
		return decodeError(e)
	}
	return nil
}

// Next returns the frames of one message of the client's call; when ctx
// ends, the call is cancelled (the host then disconnects the client).
func (c *remoteTreeClient) Next(ctx context.Context, buf []plugins.TreeFrame) ([]plugins.TreeFrame, error) {
	buf = buf[:0]
	if c.err != nil {
		return buf, c.err
	}
	stop := context.AfterFunc(ctx, c.cancel)
	m, err := c.stream.Recv()
	stop()
	if err != nil {
		gone := treeGoneOf(err)
		switch {
		case c.disconnected.Load():
			c.err = errDisconnected
		case gone != nil:
			c.err = gone
		case ctx.Err() != nil:
			c.err = ctx.Err()
		default:
			c.err = errHostGone
		}
		c.cancel()
		return buf, c.err
	}
	for _, f := range m.GetFrames() {
		buf = append(buf, plugins.TreeFrame{Seq: f.GetSeq(), Data: f.GetData()})
	}
	if g := m.GetGone(); g != nil {
		c.err = &plugins.TreeGone{Code: int(g.GetCode()), Reason: string(g.GetReason())}
		c.cancel()
		if len(buf) == 0 {
			return buf, c.err
		}
	}
	return buf, nil
}

// Disconnect asks the host to disconnect the client, then ends its call.
func (c *remoteTreeClient) Disconnect() {
	c.once.Do(func() {
		c.disconnected.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), disconnectTimeout)
		_, _ = c.h.client.TreeDisconnect(ctx, &pluginv2.TreeDisconnectRequest{Id: wire(c.id)})
		cancel()
		c.cancel()
	})
}

var (
	_ plugins.Tree       = treeHost{}
	_ plugins.TreeClient = (*remoteTreeClient)(nil)
)
