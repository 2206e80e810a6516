// Package channelhost serves a resource tree (package
// github.com/reso-project/reso/channel) from the host's side:
//
//   - [TreeOf] offers the tree to plugins as the host service
//     plugins.Tree (plugins.Services.Tree), compiled in or, through
//     package pluginrpc, isolated;
//   - [NewHandler] mounts the tree's doors (package
//     github.com/reso-project/reso/doors) on any net/http server, under
//     any prefix, with a host of its own (package pluginhost) and the
//     WebSocket transport (package websocket): what an embedding server
//     needs without the rest of reso (docs/embedding.md).
//
// reso itself mounts the doors as the bundled plugin "channel" (package
// github.com/reso-project/reso/plugins/channel) and uses TreeOf alone.
package channelhost
