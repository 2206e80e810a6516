// Package client is the Go client of reso's resource channel
// (docs/channel.md, docs/clients.md): one WebSocket to GET /channel that
// reconnects and recovers by itself.
//
// Every request ([Client.Do], [Client.Get], [Client.Put], ...) takes a
// context and returns the reply with the same msg_id, a [*Error] with the
// server's reason when the server refused it, [ErrConnectionLost] when
// the connection ended before the reply (the request may or may not have
// been applied; it is never sent again), or the context's error. The
// refusals of the client itself, when nothing was sent, are errors of
// their own: [ErrDisconnected], [ErrQueueFull], [ErrSubscribed],
// [ErrEncode], and once the client has ended [Client.Err] ([ErrClosed],
// [ErrUnauthorized]).
//
// Subscriptions are remembered. After a dropped connection the client
// reconnects with jittered, bounded back-off, subscribes again with
// "since" set to the last seq it delivered (and the epoch of that seq's
// history, which the server's replies give), and tells the subscription
// whether the server recovered what it missed ([Event].Resync); when it
// did not, the app reads the state again ([Subscription.Reload]), and the
// subscription's seq order starts afresh. Notifications reach the app
// once each, in seq order within a history, across any number of
// reconnects, as a channel ([Subscription.Events]) or a callback
// ([Client.SubscribeFunc]).
//
// A client may be given several URLs ([Options].URLs): it starts at a
// random one and moves to the next after each failed attempt and each
// connection that ends. [Options].HeaderFunc gives fresh credentials to
// each attempt; a handshake refused with 401 or 403 ends the client in
// the state [Unauthorized] instead of trying again.
//
// Requests made while disconnected fail at once with [ErrDisconnected],
// or, with [Options].Queue, wait for the connection (up to that many; past
// it [ErrQueueFull]) and are sent once after the reconnect.
//
// A Client is safe for concurrent use. [Client.Close] ends it and every
// goroutine it started.
package client
