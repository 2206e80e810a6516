// Package websocket is the host's session transport over WebSocket
// (RFC 6455): it turns a handshake request into a [core.Session] for a
// session route, with the limits a public server needs on by default.
//
// Give it to the plugin host as its session transport
// (pluginhost.SessionTransport, package github.com/reso-project/reso/pluginhost):
//
//	host.Sessions = websocket.New(websocket.Options{})
//
// Defaults (see [Options]): messages up to 64 KiB (a larger one closes the
// connection with 1009), browsers only from the request's own host (an
// Origin elsewhere is refused with 403 before anything is written), at most
// 10,000 open connections (503 over that), a ping every 25 s and a peer
// that has sent nothing for 60 s closed as dead, a write to a client that
// takes over 10 s ends its connection.
//
// A session's Close returns at once and its close handshake ends in the
// background; [Transport.Wait] waits for every one of them, so that a
// server that shuts down does not exit in their middle (the host's Close
// calls it).
//
// Text messages travel in text frames, binary ones in binary frames. The
// transport starts no goroutine per idle connection: pings are sent by a
// timer per connection and a dead peer is found by the read deadline that
// every frame from it pushes back. [core.BatchSender] is implemented: a
// batch goes to the network in one write.
package websocket

import "github.com/reso-project/reso/core"

// The package's contracts, named so the doc links above resolve.
var _ core.BatchSender = (*session)(nil)
