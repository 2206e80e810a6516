// Package doors holds the doors of the resource tree (docs/channel.md) as
// transport-neutral handlers over the host's [core.Tree] service, so
// that the same code serves compiled in or in a plugin's own process:
//
//   - [Session] is the WebSocket door: a session handler; each text
//     message of the client is one message for the tree, and replies and
//     notifications go back as text messages, several queued ones in one
//     write.
//   - [Door] is the HTTP door: one message per request, with the
//     request's JSON body as entity, whose reply becomes the status line
//     and body; a GET that asks for a stream is kept open.
//   - [Watch] answers a request with a GET kept open (the current state
//     first, then every change), and [StreamWanted] tells when a request
//     asks for one: a plugin whose resources live in the tree (package
//     call) uses them for its own GETs kept open.
//
// The plugin that mounts them under /channel is package
// github.com/reso-project/reso/plugins/channel. The doors only translate:
// permissions, limits on subscriptions and queues are the tree's.
package doors
