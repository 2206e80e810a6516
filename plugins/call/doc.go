// Package call is the bundled call-control plugin (docs/call.md): logins
// with expiring contacts at /login, calls with participants at /call,
// user records with inboxes at /user, and invitations delivered with SEND
// to the live sessions of a logged-in user and withdrawn with CANCEL.
//
// Its resources live in the channel's tree (the host's plugins.Tree), so
// the same paths are reachable over the channel's WebSocket with its
// messages, and the channel's permissions guard them there: the plugin
// gives /login/<email> to that user with the rule self:cruds, calls and
// participants to their creators, user records to their e-mail. Over
// HTTP the plugin checks the caller itself and then acts on the tree as
// the administrator (plugins.Admin), with the caller's e-mail as the
// "from" of the notifications it causes.
//
// The plugin runs the same compiled in and isolated: its state is in the
// tree, but for the invitations waiting for a session, which it keeps in
// memory for at most the wait (a restart of its process drops them).
package call
