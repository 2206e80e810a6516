// Tests of reso.js's requests and subscriptions against a real reso
// ($RESO_BIN): a timeout and a signal per request, the subscription that
// says it ended, the client's own refusals, and a history reset (a server
// restarted with a new state directory: the history's epoch).

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Channel, ChannelError, defaults } from "../reso.js";
import { Proxy, Reso, fast, impl, nextState, uniq, until } from "./harness.mjs";

const basic = (email, password) => ({ Authorization: "Basic " + btoa(`${email}:${password}`) });

describe(`reso.js requests (${impl} WebSocket)`, () => {
  let reso;
  before(async () => {
    reso = new Reso();
    await reso.start();
  });
  after(async () => {
    await reso.stop();
  });

  it("fails a request on a connection that went silent within its timeout, and forgets it", async () => {
    assert.equal(defaults.requestTimeout, 30000);
    const proxy = new Proxy(reso.port);
    await proxy.listen();
    const ch = new Channel(proxy.wsURL, { ...fast, requestTimeout: 300 });
    try {
      await ch.opened();
      const res = "/" + uniq("silent-");
      const held = proxy.hold(); // the connection stays open; nothing reaches the server
      const byDefault = ch.put(res, { n: 1 });
      const own = ch.get(res, { timeout: 100 });
      await held;
      const isTimeout = (err) => {
        assert.ok(err instanceof ChannelError);
        assert.equal(err.code, "timeout");
        return true;
      };
      await assert.rejects(own, isTimeout);
      await assert.rejects(byDefault, isTimeout);
      assert.equal(ch._pending.size, 0, "no pending entry is left");
      assert.equal(ch.state, "open");
      proxy.cut();
      await nextState(ch, "open");
      await assert.rejects(ch.get(res), { code: "failed", reason: "not found" });
    } finally {
      ch.close();
      await proxy.close();
    }
  });

  it("gives a request up when its signal aborts, before or after it was sent", async () => {
    const proxy = new Proxy(reso.port);
    await proxy.listen();
    const ch = new Channel(proxy.wsURL, fast);
    try {
      await ch.opened();
      const res = "/" + uniq("abort-");
      // Aborted before: rejected at once, nothing sent.
      await assert.rejects(ch.put(res, { n: 1 }, { signal: AbortSignal.abort() }), { code: "aborted" });
      await assert.rejects(ch.get(res), { code: "failed", reason: "not found" });
      assert.equal(ch._pending.size, 0);
      // Aborted while it waits for its reply.
      const held = proxy.hold();
      const ctl = new AbortController();
      const p = ch.get(res, { signal: ctl.signal, timeout: 0 });
      await held;
      ctl.abort();
      await assert.rejects(p, (err) => err instanceof ChannelError && err.code === "aborted");
      assert.equal(ch._pending.size, 0, "no pending entry is left");
      // Over HTTP too.
      await assert.rejects(ch.send("/login/nobody@example.org", { command: "invite", url: "/call/x", id: "i" }, { signal: AbortSignal.abort() }), {
        code: "aborted",
      });
    } finally {
      ch.close();
      await proxy.close();
    }
  });

  it("takes a queued request out of the queue when its timeout runs out: it is never sent", async () => {
    const proxy = new Proxy(reso.port);
    await proxy.listen();
    const ch = new Channel(proxy.wsURL, { ...fast, queue: 2 });
    try {
      await ch.opened();
      const res = "/" + uniq("qt-");
      proxy.down();
      proxy.cut();
      await until(() => ch.state === "reconnecting", "the drop");
      await assert.rejects(ch.put(res, { n: 1 }, { persistent: true, timeout: 100 }), { code: "timeout" });
      const ctl = new AbortController();
      const aborted = ch.put(res, { n: 2 }, { persistent: true, signal: ctl.signal });
      ctl.abort();
      await assert.rejects(aborted, { code: "aborted" });
      assert.equal(ch._queue.length, 0);
      // The queue has room again.
      const kept = ch.put("/" + uniq("kept-"), { n: 3 }, { persistent: true });
      proxy.up();
      await kept;
      await assert.rejects(ch.get(res), { code: "failed", reason: "not found" });
    } finally {
      ch.close();
      await proxy.close();
    }
  });

  it("refuses a second subscription of a resource with its own code", async () => {
    const ch = new Channel(reso.wsURL, fast);
    try {
      await ch.opened();
      const room = "/" + uniq("twice-");
      await ch.subscribe(room, () => {});
      await assert.rejects(ch.subscribe(room, () => {}), (err) => {
        assert.ok(err instanceof ChannelError);
        assert.equal(err.code, "subscribed");
        return true;
      });
    } finally {
      ch.close();
    }
  });

  it("says when a subscription ended: unsubscribe, close, and a resubscribe the server refuses", async () => {
    const owner = new Channel(reso.wsURL, { ...fast, headers: basic("user@example.org", "example") });
    const proxy = new Proxy(reso.port);
    await proxy.listen();
    const anon = new Channel(proxy.wsURL, fast);
    try {
      await Promise.all([owner.opened(), anon.opened()]);
      const top = "/" + uniq("end-") + "/room";
      await owner.put(top, {}, { persistent: true });

      // Unsubscribe: ended, without an error.
      const ends = [];
      const a = await anon.subscribe(top, () => {}, { onEnd: (err) => ends.push(["a", err]) });
      assert.equal(a.err, null);
      await anon.unsubscribe(top);
      assert.equal(await a.ended, null);
      assert.deepEqual(ends, [["a", null]]);

      // The owner takes the subscribe right from anonymous callers; on the next
      // connection the server refuses the subscription.
      const errors = [];
      anon.on("error", (e) => errors.push(e));
      const resyncs = [];
      const b = await anon.subscribe(top, () => {}, { onEnd: (err) => ends.push(["b", err]), onResync: (r) => resyncs.push(r) });
      await owner.rules(top, { rules: "self:cruds auth:cruds anon:r" });
      proxy.cut();
      const err = await b.ended;
      assert.ok(err instanceof ChannelError);
      assert.deepEqual([err.code, err.reason], ["failed", "forbidden"]);
      assert.equal(b.err, err);
      assert.equal(b.active, false);
      assert.deepEqual(ends.at(-1), ["b", err]);
      assert.deepEqual(errors, [err]);
      assert.deepEqual(resyncs, []);
      // Forgotten: the resource may be subscribed to again (and refused).
      await assert.rejects(anon.subscribe(top, () => {}), { code: "failed", reason: "forbidden" });

      // Close: every subscription ends with "closed".
      const room2 = "/" + uniq("end-");
      const c = await anon.subscribe(room2, () => {});
      anon.close();
      assert.equal((await c.ended).code, "closed");
      assert.equal(c.err.code, "closed");
    } finally {
      owner.close();
      anon.close();
      await proxy.close();
    }
  });

  it("ends a subscription not confirmed within its timeout, or when its signal aborts", async () => {
    const proxy = new Proxy(reso.port);
    await proxy.listen();
    const ch = new Channel(proxy.wsURL, fast);
    try {
      await ch.opened();
      const room = "/" + uniq("subt-");
      const held = proxy.hold();
      const ends = [];
      const p = ch.subscribe(room, () => {}, { timeout: 100, onEnd: (e) => ends.push(e.code) });
      await held;
      await assert.rejects(p, { code: "timeout" });
      const ctl = new AbortController();
      const q = ch.subscribe(room, () => {}, { signal: ctl.signal, timeout: 0 });
      ctl.abort();
      await assert.rejects(q, { code: "aborted" });
      assert.deepEqual(ends, ["timeout"]);
      proxy.cut();
      await nextState(ch, "open");
      // Neither is subscribed again after the reconnect.
      const seen = [];
      await ch.subscribe(room, (n) => seen.push(n));
      await ch.put(room, { n: 1 });
      await until(() => seen.length === 1, "the notification");
    } finally {
      ch.close();
      await proxy.close();
    }
  });
});

describe(`reso.js across a history reset (${impl} WebSocket)`, () => {
  it("starts the seq order afresh when the server's history is another one (a new state directory)", async (t) => {
    const reso = new Reso();
    await reso.start();
    const ch = new Channel(reso.wsURL, fast);
    const writer = new Channel(reso.wsURL, fast);
    try {
      await Promise.all([ch.opened(), writer.opened()]);
      const room = "/" + uniq("epoch-");
      await writer.put(room, {}, { persistent: true });
      const seen = [];
      const resyncs = [];
      // Does this server say which history it has? (Asked on the wire, not of the client.)
      const asked = await writer.request({ method: "SUBSCRIBE", resource: "/" + uniq("probe-") });
      if (typeof asked.epoch !== "string") {
        t.skip("this reso sends no epoch in SUBSCRIBE's reply (docs/channel.md, Replay after a reconnect): nothing to tell histories apart by");
        return;
      }
      const sub = await ch.subscribe(room, (n) => seen.push(n), { onResync: (r) => resyncs.push(r) });
      const before = sub.epoch;
      assert.equal(before, asked.epoch);
      for (let i = 0; i < 5; i++) await writer.post(room, { text: `before ${i}` }, { persistent: true });
      await until(() => seen.length === 5, "the notifications before the reset");

      // The same server, restarted on a new state directory: its seq
      // starts again from 1, below the ones the app has.
      await reso.kill9();
      await until(() => ch.state === "reconnecting", "the drop");
      reso.freshState();
      await reso.start();
      await until(() => resyncs.length === 1, "the resync");
      assert.equal(resyncs[0].recovered, false);
      assert.notEqual(sub.epoch, before, "a new epoch");
      await writer.opened();
      await writer.put(room, {}, { persistent: true });
      await writer.post(room, { text: "after 0" }, { persistent: true });
      await writer.post(room, { text: "after 1" }, { persistent: true });
      await until(() => seen.length === 8, "the notifications after the reset");
      assert.deepEqual(
        seen.slice(5).map((n) => n.notify + (n.entity?.text ? ` ${n.entity.text}` : "")),
        ["PUT", "UPDATE after 0", "UPDATE after 1"],
      );
      assert.ok(seen[5].seq <= seen[4].seq, "the new history numbers from below the old one");
      assert.ok(seen[7].seq > seen[6].seq && seen[6].seq > seen[5].seq);
    } finally {
      ch.close();
      writer.close();
      await reso.stop();
    }
  });
});
