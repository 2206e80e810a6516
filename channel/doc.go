// Package channel is the resource tree of the persistent-channel convention
// (docs/channel.md): resources addressed by
// paths, their subscribers and notifications, transient resources owned by
// a client's connection, one increasing sequence of changes (seq) and a
// bounded history of recent notifications for replay.
//
// The tree knows nothing of HTTP or WebSocket. A door (a WebSocket
// session, an HTTP request, a GET kept open) attaches a [Client] with
// [Tree.Connect], passes it the client's messages with [Client.Exec] and
// writes what [Client.Next] returns: replies and notifications, each a
// [Frame] holding one JSON object. Notifications are serialized once and
// shared by all their receivers; each client's queue is bounded, and a
// client that does not keep up is disconnected rather than allowed to slow
// the tree or other clients down.
//
// Persistent resources are kept by a [Store]; transient ones only in
// memory.
package channel
