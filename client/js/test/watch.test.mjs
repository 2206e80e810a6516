// Tests of watch's back-off (docs/clients.md, "The GET kept open") against
// a scripted server: an EventSource given up (a refusal, 503) counts as a
// failed attempt and the waits grow, unless a stream proved itself since
// (an event came); a stream that opens and ends before any event proves
// nothing, as a WebSocket closed before any frame proves nothing to the
// Channel. Run on the runtime's EventSource: Node's own, behind
// --experimental-eventsource (tests/js_client_test.go passes it when Node
// knows it), else skipped.

import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, it } from "node:test";

import { watch } from "../reso.js";
import { until } from "./harness.mjs";

const ES = globalThis.EventSource;
const want = 4; // refusals to see
const quick = { backoffMin: 20, backoffMax: 100 };

// scripted answers the requests of a stream in turn: the first of each
// pair 200 with a stream (retry: 10 ms, so that the EventSource reconnects
// at once; with event, one notification) that ends at once, the second
// 503, which makes the EventSource give up. refused counts the 503s.
function scripted(event) {
  const s = { n: 0, refused: 0 };
  s.server = http.createServer((req, res) => {
    if (s.n++ % 2 === 1) {
      s.refused++;
      res.writeHead(503, { "Content-Type": "text/plain", "Retry-After": "1" });
      res.end("503 Behind the Log");
      return;
    }
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    res.write("retry: 10\n\n");
    if (event) res.write(`id: ${s.n}\ndata: ${JSON.stringify({ notify: "UPDATE", resource: "/r", seq: s.n })}\n\n`);
    res.end();
  });
  s.close = () => {
    s.server.closeAllConnections();
    return new Promise((r) => s.server.close(r));
  };
  return s;
}

function listen(server) {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server.address().port)));
}

describe("watch's back-off", { skip: typeof ES !== "function" && "no EventSource (Node without --experimental-eventsource)" }, () => {
  const servers = { silent: scripted(false), event: scripted(true) };
  before(async () => {
    for (const s of Object.values(servers)) s.port = await listen(s.server);
  });
  after(async () => {
    for (const s of Object.values(servers)) await s.close();
  });

  it("grows across streams that open and end before any event, each followed by a refusal", async () => {
    const s = servers.silent;
    const w = watch(`http://127.0.0.1:${s.port}/channel/r`, { ...quick, EventSource: ES });
    try {
      await until(() => s.refused >= want, `${want} refusals`);
      // Each refusal the client has taken counted: no open reset it.
      assert.ok(w._attempt >= want - 1, `attempt count ${w._attempt} after ${s.refused} refusals`);
    } finally {
      w.close();
    }
  });

  it("starts again from backoffMin after a stream that proved itself (an event came)", async () => {
    const s = servers.event;
    let events = 0;
    const w = watch(`http://127.0.0.1:${s.port}/channel/r`, { ...quick, EventSource: ES, onNotification: () => events++ });
    try {
      await until(() => s.refused >= want && events >= want - 1, `${want} refusals and ${want - 1} events`);
      // The count never passes the one refusal since the last event.
      assert.ok(w._attempt <= 1, `attempt count ${w._attempt} after ${s.refused} refusals, ${events} events`);
    } finally {
      w.close();
    }
  });
});
