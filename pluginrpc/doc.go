// Package pluginrpc runs a [plugins.Plugin] in a separate process: the server
// (the host) starts the plugin program with hashicorp/go-plugin and talks to
// it over gRPC (protocol package reso.plugin.v3, see package pluginv3), with
// go-plugin's automatic mutual TLS.
//
// A plugin program serves one plugin and does nothing else:
//
//	func main() {
//		if err := pluginrpc.Serve(hello.Plugin{}); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//	}
//
// It must not write to standard output: go-plugin's handshake goes there.
// Log to standard error; the host copies those lines into its own log. A
// line that log/slog's text or JSON handler wrote becomes one record of the
// host's log, with the plugin's level, message and attributes and the
// attribute plugin (the plugin's name); any other line is logged as text.
//
// The host loads it with [Load] and mounts the returned [*Client] like any
// other plugin. The client asks the plugin for its routes once; each matched
// request then crosses to the plugin and back:
//
//   - The request (method, paths, query, variables, header, the caller's
//     identity) goes in one message. A small body with a declared length
//     goes inline; any other body stays with the host, and the plugin pulls
//     it when it reads req.Body, so a handler that never reads the body never
//     costs a read, as in process.
//   - Requests travel on one long-lived bidirectional gRPC stream per
//     plugin process (method Requests), each tagged with an id; the plugin
//     answers each with its id as its handler finishes. Whatever queued
//     while the previous message went out goes as one message, in both
//     directions, so under load a message carries many requests or
//     answers, and no request costs a call of its own. Cancelling the
//     request's context sends a cancel with its id, which cancels the
//     handler's context in the plugin. A plugin without Requests (an older
//     build of protocol version 3) gets its requests on a pool of Exchange
//     streams, one request at a time per stream.
//   - An error crosses explicitly: a [core.StatusError] as its code and exact
//     reason phrase, any other error as its text (500).
//   - A download ([core.Response].Content) stays open in the plugin; the
//     host reads it through a server-streaming call in chunks of 256 KiB,
//     sequentially ahead of http.ServeContent, and a Range request starts a
//     stream at its offset. The plugin closes the content when the host
//     closes it, or after [ContentIdle] without use.
//   - A streamed answer ([core.Response].Stream) stays open in the plugin;
//     the host reads it through the server-streaming call Events. The
//     plugin renders each event's value with [core.RenderEvent] exactly as
//     the host would, and the host writes the bytes with its own framing
//     (Server-Sent Events or NDJSON, keep-alives), so a stream is byte for
//     byte the same compiled in or isolated. gRPC's flow control carries a
//     slow client's back-pressure to the source; cancelling the call (the
//     client went away, the server shuts down) ends the source's context,
//     and the plugin closes the source once. A GET kept open of the tree
//     (doors.Watch) is run by the host instead, when [Config.Watch] is set
//     (watch.go).
//   - Sessions (plugins.Route.Session) cross multiplexed: the host opens
//     up to 4 bidirectional gRPC streams (Sessions) per plugin process and
//     spreads its sessions over them, each message tagged with its
//     session's number, so an isolated plugin serves sessions like a
//     compiled-in one and an idle isolated session costs the host what a
//     compiled-in one does: its connection and its one goroutine, which
//     reads the client (the plugin's messages are written by a goroutine
//     started when some are queued). Flow control is per session and per
//     direction, in credit windows of bytes (credit.go): a handler that
//     does not read stops the host reading its client after one window,
//     and a client that does not read holds the host to one window of the
//     plugin's messages while the plugin's Send waits. The transport that
//     owns the client's connection (the WebSocket) stays in the host, and
//     the host assigns
//     the session's id and runs the end hooks ([pluginhost.Host].OnSessionEnd):
//     when the plugin process dies, the calls break, the host closes the
//     session with 1011 and still runs them once. State tied to a session
//     (transient resources) thus lives in the host and is released however
//     the session ends.
//   - At shutdown the host calls Close, which runs the plugin's Close
//     ([plugins.Closer]) in its process, before it stops the process.
//   - The plugin reaches the host's services (the fields of
//     [plugins.Services], such as its Settings and its Tree) through
//     go-plugin's broker; it shares no memory with the host. The host
//     names the services it offers, and the plugin's Services sets
//     exactly those fields, so a plugin finds the same fields set as it
//     would in process. A tree client's frames cross unchanged on one of
//     up to 4 streams (Trees) that the plugin opens to the host, tagged
//     with the client's number, and the host disconnects the client when
//     the plugin releases it or that stream ends, so a dead plugin leaves
//     none attached. The host sends a client's frames while the plugin's
//     credit for it lasts (one writer goroutine per stream, no goroutine
//     per client); what waits for a plugin that does not read is the
//     client's queue in the tree, bounded as any client's: when it
//     overflows, the client is ended (1008 "slow consumer") and the host
//     tells the plugin at once. A client's messages go up on its stream
//     too, in order, under a credit of their own. A client that a
//     session's handler connects for its session with ConnectSession
//     (the channel door's) has its frames written by the host to that
//     session itself: a notification to many sessions of one plugin
//     does not cross the boundary per session (splice.go).
//
// When a client goes away (a request cancelled, a GET kept open closed),
// what the plugin holds for it ends with it: the answer of a request the
// host cancelled is released at once (in the plugin, or by the host when
// the answer crossed the cancel), and so is a streamed answer whose Events
// call never reached the plugin.
//
// A plugin process that exits or is killed costs only its own routes: they
// answer [ErrUnavailable] (503 Plugin Unavailable) while the client restarts
// the process with backoff (100 ms doubling to 2 s). The route list is
// taken once; a restarted plugin that gives other routes is logged. On
// Linux every plugin process gets SIGKILL when the host dies, and
// [Client.Close] ends it.
package pluginrpc
