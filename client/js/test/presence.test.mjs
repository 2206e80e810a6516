// The presence recipe of docs/clients.md ("Presence: who is online")
// against a real reso ($RESO_BIN): each client PUTs a transient resource
// of its own below the room on every connection, subscribes to the room
// and reads its list; the server deletes a client's resource when its
// connection ends. go test ./tests runs it (tests/js_client_test.go).

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Channel, ChannelError } from "../reso.js";
import { Proxy, Reso, fast, uniq, until } from "./harness.mjs";

/**
 * The recipe of docs/clients.md, as written there, for the client ch in
 * room as me. Returns what it sees: online (key -> entity) and every
 * UPDATE it was notified of.
 */
async function presence(ch, room, me, name) {
  const seen = { online: new Map(), updates: [] };
  const read = async () => {
    const now = new Map();
    try {
      for (const c of (await ch.get(room + "?deep=2")).entity) now.set(c.rid, c.entity);
    } catch (err) {
      if (!(err instanceof ChannelError && err.reason === "not found")) throw err; // nobody yet
    }
    seen.online = now;
  };
  const put = () => ch.put(`${room}/${me}`, { name }).catch((err) => seen.updates.push({ error: err.message }));
  ch.on("state", (s) => {
    if (s === "open") put();
  });
  if (ch.state === "open") put(); // opened before this listener was added
  await ch.subscribe(
    room,
    (n) => {
      if (n.notify !== "UPDATE") return;
      seen.updates.push(n.update ? { update: n.update } : { delete: n.delete });
      if (n.update) seen.online.set(n.update, n.entity);
      if (n.delete) seen.online.delete(n.delete);
    },
    {
      onResync: ({ recovered }) => {
        if (!recovered) read().catch((err) => seen.updates.push({ error: err.message }));
      },
    },
  );
  await read();
  return seen;
}

describe("presence (docs/clients.md)", () => {
  let reso;
  let proxy;
  before(async () => {
    reso = new Reso();
    await reso.start();
    proxy = new Proxy(reso.port);
    await proxy.listen();
  });
  after(async () => {
    await proxy.close();
    await reso.stop();
  });

  it("lists who is online, drops a client whose connection ends, and lists it again once back", async () => {
    const room = "/presence/" + uniq("room-");
    // Ann is connected directly; Bob through the proxy, which cuts his
    // connection without a close.
    const ann = new Channel(reso.wsURL, fast);
    const bob = new Channel(proxy.wsURL, fast);
    try {
      await Promise.all([ann.opened(), bob.opened()]);
      const a = await presence(ann, room, "ann", "Ann");
      const b = await presence(bob, room, "bob", "Bob");
      const keys = (s) => JSON.stringify([...s.online.keys()].sort());
      const both = JSON.stringify(["ann", "bob"]);
      await until(() => keys(a) === both, "Ann to see Ann and Bob");
      await until(() => keys(b) === both, "Bob to see Ann and Bob");
      assert.deepEqual(a.online.get("bob"), { name: "Bob" });
      assert.deepEqual(b.online.get("ann"), { name: "Ann" });

      // Bob's connection is cut (no close frame) and stays down.
      proxy.down();
      proxy.cut();
      await until(() => bob.state !== "open", "Bob's client to notice the cut");
      await until(() => keys(a) === JSON.stringify(["ann"]), "Ann to see Bob leave (the server's DELETE)");
      assert.deepEqual(a.updates.filter((u) => u.delete), [{ delete: "bob" }]);

      // Bob comes back: his client reconnects and puts him again.
      const before = a.updates.length;
      proxy.up();
      await until(() => bob.state === "open", "Bob's client to reconnect");
      await until(() => keys(a) === both, "Ann to see Bob again");
      assert.deepEqual(a.updates.slice(before), [{ update: "bob" }]);
      await until(() => keys(b) === both, "Bob to see Ann and himself again");
      assert.deepEqual(a.updates.filter((u) => u.error), []);
      assert.deepEqual(b.updates.filter((u) => u.error), []);
    } finally {
      ann.close();
      bob.close();
    }
  });
});
