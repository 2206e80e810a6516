// Tests of reso.js against a fleet of reso nodes (docs/fleet.md), which
// tests/fleet_client_test.go (TestJSClientFleet) starts: RESO_FLEET holds
// its nodes as a JSON list of {addr, pid}. Without it the tests are
// skipped.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Channel } from "../reso.js";
import { Proxy, until, uniq } from "./harness.mjs";

const fast = { backoffMin: 20, backoffMax: 200, connectTimeout: 500 };

const fleet = process.env.RESO_FLEET ? JSON.parse(process.env.RESO_FLEET) : null;
const port = (node) => Number(node.addr.split(":").at(-1));

describe("reso.js on a fleet", { skip: fleet ? false : "RESO_FLEET is not set (go test ./tests -run TestJSClientFleet sets it)" }, () => {
  it("moves to another node after kill -9 of its own: every notification once, in order, recovered", async () => {
    // The client on node 0 through a proxy; the writer on node 2.
    const proxy = new Proxy(port(fleet[0]));
    await proxy.listen();
    const ch = new Channel(proxy.wsURL, fast);
    const writer = new Channel(`ws://${fleet[2].addr}/channel`, fast);
    try {
      await Promise.all([ch.opened(), writer.opened()]);
      const room = "/" + uniq("fleet-");
      await writer.put(room, {}, { persistent: true });
      const seen = [];
      const resyncs = [];
      await ch.subscribe(room, (n) => seen.push(n), { onResync: (r) => resyncs.push(r.recovered) });
      const sent = [];
      const post = async (text) => {
        await writer.post(room, { text }, { persistent: true });
        sent.push(text);
      };
      for (let i = 0; i < 3; i++) {
        await post(`live ${i}`);
        await until(() => seen.length === sent.length, "the live notification");
      }

      // Node 0 dies; the client stays away (the proxy refuses it) while
      // the writer goes on; then the proxy sends it to node 1.
      proxy.down();
      process.kill(fleet[0].pid, "SIGKILL");
      await until(() => ch.state === "reconnecting", "the drop");
      for (let i = 0; i < 3; i++) await post(`away ${i}`);
      proxy.to(port(fleet[1]));
      proxy.up();
      await until(() => resyncs.length === 1, "the resync");
      assert.deepEqual(resyncs, [true]);
      assert.equal(ch.state, "open");

      for (let i = 0; i < 3; i++) await post(`after ${i}`);
      await until(() => seen.length >= sent.length, "every notification");
      await ch.get(room); // a round trip on the new node: nothing more came
      assert.deepEqual(
        seen.map((n) => n.entity.text),
        sent,
        "each notification exactly once",
      );
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i].seq > seen[i - 1].seq, `seq order at ${i}`);
      assert.ok(seen.every((n) => n.notify === "UPDATE" && n.create));
      assert.deepEqual(resyncs, [true]);
    } finally {
      ch.close();
      writer.close();
      await proxy.close();
    }
  });

  it("given the nodes' URLs, moves to a live one when its node is killed: every notification once, in order, recovered", async (t) => {
    // The nodes still alive (the test above killed one).
    const alive = fleet.filter((n) => {
      try {
        process.kill(n.pid, 0);
        return true;
      } catch {
        return false;
      }
    });
    if (alive.length < 2) {
      t.skip("fewer than 2 nodes alive");
      return;
    }
    const urls = fleet.map((n) => `ws://${n.addr}/channel`);
    const ch = new Channel(urls, fast);
    let writer = null;
    try {
      await ch.opened();
      const mine = alive.find((n) => ch.url === `ws://${n.addr}/channel`);
      assert.ok(mine, `on a live node: ${ch.url}`);
      const other = alive.find((n) => n !== mine);
      writer = new Channel(`ws://${other.addr}/channel`, fast);
      await writer.opened();
      const room = "/" + uniq("fleet-list-");
      await writer.put(room, {}, { persistent: true });
      const seen = [];
      const resyncs = [];
      await ch.subscribe(room, (n) => seen.push(n), { onResync: (r) => resyncs.push(r.recovered) });
      const sent = [];
      const post = async (text) => {
        await writer.post(room, { text }, { persistent: true });
        sent.push(text);
      };
      await post("live");
      await until(() => seen.length === 1, "the live notification");
      process.kill(mine.pid, "SIGKILL");
      await until(() => ch.state === "reconnecting", "the drop");
      for (let i = 0; i < 3; i++) await post(`away ${i}`);
      await until(() => resyncs.length === 1, "the resync on another node");
      assert.notEqual(ch.url, `ws://${mine.addr}/channel`);
      await post("after");
      await until(() => seen.length >= sent.length, "every notification");
      await ch.get(room);
      assert.deepEqual(
        seen.map((n) => n.entity.text),
        sent,
        "each notification exactly once",
      );
      assert.deepEqual(resyncs, [true]);
    } finally {
      ch.close();
      writer?.close();
    }
  });
});
