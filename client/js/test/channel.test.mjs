// Tests of reso.js against a real reso ($RESO_BIN): run with
//   RESO_BIN=/path/to/reso node --experimental-websocket --test client/js/test/
// (with RESO_JS_WEBSOCKET=ws on the ws package's WebSocket)
// (go test ./tests runs them: tests/js_client_test.go).

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Channel, ChannelError } from "../reso.js";
import { Proxy, Reso, fast, nextState, uniq, until } from "./harness.mjs";

describe("reso.js", () => {
  let reso;
  before(async () => {
    reso = new Reso();
    await reso.start();
  });
  after(async () => {
    await reso.stop();
  });

  it("settles each request by its reply", async () => {
    const ch = new Channel(reso.wsURL, fast);
    try {
      await ch.opened();
      const room = "/" + uniq("room-");
      const seen = [];
      const sub = await ch.subscribe(room, (n) => seen.push(n));
      assert.equal(sub.resource, room);
      const put = await ch.put(room, { topic: "t" }, { persistent: true });
      assert.equal(put.code, "success");
      const get = await ch.get(room);
      assert.deepEqual([get.resource, get.type, get.entity], [room, "application/json", { topic: "t" }]);
      const post = await ch.post(room, { text: "hi" }, { persistent: true });
      assert.equal(typeof post.id, "string");
      const list = await ch.get(room + "?deep=2");
      assert.deepEqual(list.entity, [{ rid: post.id, type: "application/json", entity: { text: "hi" } }]);
      const n = await ch.notify(room, { typing: true });
      assert.equal(n.sent_count, 1);
      await ch.delete(`${room}/${post.id}`);
      // The notifications came in seq order, each once, before the replies
      // of the requests that caused them.
      assert.deepEqual(
        seen.map((m) => m.notify + (m.create ? ":create" : m.delete ? ":delete" : "")),
        ["PUT", "UPDATE:create", "NOTIFY", "UPDATE:delete"],
      );
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i].seq > seen[i - 1].seq, "seq order");
      assert.equal(sub.lastSeq, seen.at(-1).seq);
      await ch.unsubscribe(room);
      await ch.put(room, { topic: "after" }, { persistent: true });
      await ch.get(room); // a round trip: nothing arrived for the old subscription
      assert.equal(seen.length, 4);
    } finally {
      ch.close();
    }
  });

  it("rejects with the reply's code and reason", async () => {
    const ch = new Channel(reso.wsURL, fast);
    try {
      await ch.opened();
      const cases = [
        [() => ch.get("/" + uniq("missing-")), "not found"],
        [() => ch.put("/a/../b", {}), "invalid resource"],
        [() => ch.notify("/" + uniq("nobody-"), 1), "no subscriber"],
        [() => ch.request({ method: "FROB", resource: "/x" }), "unknown method"],
      ];
      for (const [call, reason] of cases) {
        await assert.rejects(call(), (err) => {
          assert.ok(err instanceof ChannelError);
          assert.equal(err.code, "failed");
          assert.equal(err.reason, reason);
          assert.equal(err.reply.code, "failed");
          return true;
        });
      }
      const parent = "/" + uniq("p-");
      await ch.post(parent, {}, { id: "x", persistent: true });
      await assert.rejects(ch.post(parent, {}, { id: "x" }), { code: "failed", reason: "exists" });
      // The connection is still good.
      assert.equal((await ch.put(parent, { ok: 1 })).code, "success");
    } finally {
      ch.close();
    }
  });

  it("passes credentials in headers, and SEND and CANCEL over HTTP", async () => {
    const auth = { Authorization: "Basic " + btoa("user@example.org:example") };
    const ch = new Channel(reso.wsURL, { ...fast, headers: auth });
    const anon = new Channel(reso.wsURL, fast);
    try {
      await ch.opened();
      await anon.opened();
      const top = "/" + uniq("own-");
      await ch.put(top + "/mine", { a: 1 }, { persistent: true });
      const r = await ch.rules(top + "/mine");
      assert.equal(r.owner, "user@example.org");
      await assert.rejects(anon.rules(top + "/mine"), { code: "failed", reason: "forbidden" });
      // Nobody is logged in as the target: 404 Not Logged In.
      await assert.rejects(ch.send("/login/nobody@example.org", { command: "invite", url: "/call/x", id: "i1" }), (err) => {
        assert.equal(err.code, "http");
        assert.equal(err.status, 404);
        assert.equal(err.reason, "Not Logged In");
        return true;
      });
      // A contact makes the target logged in; the message waits (202)
      // until CANCEL withdraws it.
      const login = "/login/user@example.org";
      await ch._http("POST", login, { contact: "sip:u@example.org", expires: 60 });
      const sent = await ch.send(login, { command: "invite", url: "/call/x", id: "i2" });
      assert.equal(sent.status, 202);
      assert.equal(typeof sent.id, "string");
      const cancelled = await ch.cancel(`${login}/${sent.id}`);
      assert.equal(cancelled.status, 200);
      await assert.rejects(ch.cancel(`${login}/${sent.id}`), { code: "http", status: 404 });
    } finally {
      ch.close();
      anon.close();
    }
  });

  it("rejects a request whose connection is lost before the reply, and never resends it", async () => {
    const proxy = new Proxy(reso.port);
    await proxy.listen();
    const ch = new Channel(proxy.wsURL, fast);
    try {
      await ch.opened();
      const res = "/" + uniq("lost-");
      const held = proxy.hold();
      const p = ch.put(res, { n: 1 }, { persistent: true });
      await held;
      proxy.cut();
      await assert.rejects(p, { code: "connection lost" });
      await nextState(ch, "open");
      // The held PUT never reached the server, and was not sent again.
      await assert.rejects(ch.get(res), { code: "failed", reason: "not found" });
    } finally {
      ch.close();
      await proxy.close();
    }
  });

  it("rejects writes while disconnected at once by default, and queues up to options.queue", async () => {
    const proxy = new Proxy(reso.port);
    await proxy.listen();
    const plain = new Channel(proxy.wsURL, fast);
    const queued = new Channel(proxy.wsURL, { ...fast, queue: 2 });
    const direct = new Channel(reso.wsURL, fast);
    try {
      await Promise.all([plain.opened(), queued.opened(), direct.opened()]);
      const room = "/" + uniq("q-");
      const seen = [];
      await direct.subscribe(room, (n) => seen.push(n));
      proxy.down();
      proxy.cut();
      await until(() => plain.state === "reconnecting" && queued.state === "reconnecting", "both to notice");
      await assert.rejects(plain.put(room + "/a", { n: 1 }), (err) => err.code === "disconnected" && err instanceof ChannelError);
      const q1 = queued.put(room + "/b", { n: 1 }, { persistent: true });
      const q2 = queued.put(room + "/c", { n: 2 }, { persistent: true });
      await assert.rejects(queued.put(room + "/d", { n: 3 }), { code: "queue full" });
      proxy.up();
      await Promise.all([q1, q2]);
      await direct.get(room); // after the notifications of the queued writes
      // Each queued write reached the server exactly once; the rejected
      // ones never did.
      assert.deepEqual(
        seen.map((n) => n.update),
        ["b", "c"],
      );
      await assert.rejects(direct.get(room + "/a"), { reason: "not found" });
      await assert.rejects(direct.get(room + "/d"), { reason: "not found" });
    } finally {
      plain.close();
      queued.close();
      direct.close();
      await proxy.close();
    }
  });

  it("resubscribes with since after each reconnect: every notification once, in order, recovered", async () => {
    const proxy = new Proxy(reso.port);
    await proxy.listen();
    const ch = new Channel(proxy.wsURL, fast);
    const writer = new Channel(reso.wsURL, fast);
    try {
      await Promise.all([ch.opened(), writer.opened()]);
      const room = "/" + uniq("r-");
      const seen = [];
      const resyncs = [];
      await writer.put(room, {}, { persistent: true }); // a seq for the subscription to start from
      await ch.subscribe(room, (n) => seen.push(n), { onResync: (r) => resyncs.push(r.recovered) });
      let sent = 0;
      for (let round = 0; round < 5; round++) {
        await writer.post(room, { round, live: true }, { persistent: true });
        sent++;
        await until(() => seen.length === sent, "the live notification");
        proxy.down();
        proxy.cut();
        await until(() => ch.state === "reconnecting", "the drop");
        // Missed while away.
        for (let i = 0; i < 3; i++) {
          await writer.post(room, { round, i }, { persistent: true });
          sent++;
        }
        proxy.up();
        await until(() => resyncs.length === round + 1, "the resync");
      }
      await writer.post(room, { last: true }, { persistent: true });
      sent++;
      await until(() => seen.length >= sent, "every notification");
      await writer.get(room);
      assert.equal(seen.length, sent, "each notification exactly once");
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i].seq > seen[i - 1].seq, `seq order at ${i}`);
      assert.ok(seen.every((n) => n.notify === "UPDATE" && n.create));
      assert.deepEqual(resyncs, [true, true, true, true, true]);
    } finally {
      ch.close();
      writer.close();
      await proxy.close();
    }
  });
});

describe("reso.js across kill -9", () => {
  it("is told that the server did not recover, and reloads with GET", async () => {
    const reso = new Reso();
    await reso.start();
    const ch = new Channel(reso.wsURL, fast);
    try {
      await ch.opened();
      const room = "/" + uniq("k-");
      await ch.put(room, { topic: "t" }, { persistent: true });
      const seen = [];
      const resyncs = [];
      await ch.subscribe(room, (n) => seen.push(n), { onResync: (r) => resyncs.push(r) });
      await ch.post(room, { text: "before" }, { persistent: true });
      await until(() => seen.length === 1, "the notification");
      await reso.kill9();
      await until(() => ch.state === "reconnecting", "the drop");
      await assert.rejects(ch.put(room + "/x", {}), { code: "disconnected" });
      await reso.start();
      await until(() => resyncs.length === 1, "the resync");
      assert.equal(resyncs[0].recovered, false);
      const state = await resyncs[0].reload("?deep=2");
      assert.deepEqual(
        state.entity.map((c) => c.entity.text),
        ["before"],
      );
      // The subscription is back: new changes arrive, with seqs above the
      // ones before the crash.
      await ch.post(room, { text: "after" }, { persistent: true });
      await until(() => seen.length === 2, "the notification after the restart");
      assert.ok(seen[1].seq > seen[0].seq);
      assert.equal(seen[1].entity.text, "after");
    } finally {
      ch.close();
      await reso.stop();
    }
  });
});
