// The Node client of bench/reconnect: reso.js with its default options on
// Node's own WebSocket ("node") or on the ws package of client/js
// ("ws"), subscribed to one resource; writes "state <state>" on each
// change of state, until it is killed.
//   node [--experimental-websocket] bench/reconnect/client.mjs URL node|ws
import { createRequire } from "node:module";

import { Channel } from "../../client/js/reso.js";

const [url, impl] = process.argv.slice(2);
const options = {};
if (impl === "ws") {
  // ws comes from client/js/node_modules (npm ci --prefix client/js).
  const require = createRequire(new URL("../../client/js/package.json", import.meta.url));
  options.WebSocket = require("ws").WebSocket;
}
const ch = new Channel(url, options);
ch.on("state", (s) => process.stdout.write(`state ${s}\n`));
ch.on("error", (err) => process.stderr.write(`error ${err}\n`));
await ch.opened();
await ch.subscribe("/bench/reconnect", () => {});
