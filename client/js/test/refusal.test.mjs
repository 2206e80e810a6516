// A SUBSCRIBE refused for now (a fleet node without its log answers
// "unavailable", a server shutting down "closed") does not end the
// subscription: the channel moves on to a new connection, which
// subscribes again with since, and the notifications go on where they
// were (issue 36: survivors of a node's death refused some of the
// reconnect storm's resubscriptions). A refusal for good (forbidden)
// still ends it.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { WebSocketServer } from "ws";

import { Channel } from "../reso.js";
import { WebSocketImpl, impl, until } from "./harness.mjs";

describe(`reso.js resubscribes after a refusal for now (${impl} WebSocket)`, () => {
  let wss;
  let url;
  const conns = []; // each connection's SUBSCRIBEs, answered by script
  before(async () => {
    wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await new Promise((r) => wss.on("listening", r));
    url = `ws://127.0.0.1:${wss.address().port}/channel`;
    wss.on("connection", (ws) => {
      const conn = { ws, subs: [] };
      conns.push(conn);
      ws.on("message", (data) => {
        const m = JSON.parse(String(data));
        if (m.method === "SUBSCRIBE") conn.subs.push(m);
      });
    });
  });
  after(async () => {
    for (const c of wss.clients) c.terminate();
    await new Promise((r) => wss.close(r));
  });

  it("moves on to a new connection on unavailable, closed and disconnected, and ends on forbidden", async () => {
    const ch = new Channel(url, { backoffMin: 20, backoffMax: 50, WebSocket: WebSocketImpl });
    const seen = [];
    const resyncs = [];
    let ended = null;
    try {
      const p = ch.subscribe("/r", (n) => seen.push(n.seq), {
        onResync: (r) => resyncs.push(r.recovered),
        onEnd: (err) => (ended = err),
      });
      await until(() => conns.length === 1 && conns[0].subs.length === 1, "the first SUBSCRIBE");
      let c = conns[0];
      c.ws.send(JSON.stringify({ msg_id: c.subs[0].msg_id, code: "success", epoch: "e1" }));
      await p;
      c.ws.send(JSON.stringify({ notify: "POST", resource: "/r", create: "c7", entity: {}, seq: 7 }));
      await until(() => seen.length === 1, "seq 7");
      c.ws.terminate();
      for (const reason of ["unavailable", "closed", "disconnected"]) {
        const n = conns.length;
        await until(() => conns.length === n + 1 && conns[n].subs.length === 1, `the SUBSCRIBE before ${reason}`);
        c = conns[n];
        assert.equal(c.subs[0].since, 7);
        assert.equal(c.subs[0].epoch, "e1");
        c.ws.send(JSON.stringify({ msg_id: c.subs[0].msg_id, code: "failed", reason }));
        // The channel gives this connection up: the next one comes.
      }
      const n = conns.length;
      await until(() => conns.length === n + 1 && conns[n].subs.length === 1, "the SUBSCRIBE answered");
      c = conns[n];
      assert.equal(c.subs[0].since, 7);
      c.ws.send(JSON.stringify({ msg_id: c.subs[0].msg_id, code: "success", recovered: true, epoch: "e1" }));
      c.ws.send(JSON.stringify({ notify: "POST", resource: "/r", create: "c8", entity: {}, seq: 8 }));
      await until(() => seen.length === 2, "seq 8");
      assert.deepEqual(seen, [7, 8]);
      assert.deepEqual(resyncs, [true]);
      assert.equal(ended, null);

      c.ws.terminate();
      const m = conns.length;
      await until(() => conns.length === m + 1 && conns[m].subs.length === 1, "the SUBSCRIBE refused for good");
      c = conns[m];
      c.ws.send(JSON.stringify({ msg_id: c.subs[0].msg_id, code: "failed", reason: "forbidden" }));
      await until(() => ended !== null, "the end of the subscription");
    } finally {
      ch.close();
    }
  });
});
