// Package channel is the plugin that mounts the doors of the resource tree
// (docs/channel.md), bundled with reso under the name "channel" (what
// -isolate and app.Bundled call it). The tree itself is package
// github.com/reso-project/reso/channel, which the host offers plugins as
// the [plugins.Tree] service; the doors are the handlers of package
// github.com/reso-project/reso/doors, which this plugin routes:
//
//   - GET /channel is a session route: the host's session transport (a
//     WebSocket) turns it into a message session, and each text message
//     of the client is one message for the tree; replies and
//     notifications go back as text messages, several queued ones in one
//     write. Binary messages are ignored (the convention speaks only
//     text). When the tree disconnects the client (a slow consumer, for
//     instance) the session is closed with the tree's close code and
//     reason (doors.Session).
//   - GET, PUT, POST and DELETE /channel/<path> are the HTTP door: one
//     message per request, with the request's JSON body as entity, whose
//     reply becomes the status line and body (doors.Door).
//   - GET /channel/<path> that asks for a stream (Accept:
//     text/event-stream, or ?watch) is kept open: the current state
//     first, then every change (doors.Watch).
//
// The routes take an optional identity: credentials give the caller an
// identity (its e-mail is the identity the tree sees), none leaves it
// anonymous. The doors only translate: permissions, limits on
// subscriptions and queues are the tree's.
package channel
