// Tests of reso.js's connection attempts against a real reso ($RESO_BIN):
// failed handshakes end their attempt at once, close() leaves nothing
// behind, lists of URLs, fresh credentials and refused ones. Run on
// Node's own WebSocket, and on the ws package's with RESO_JS_WEBSOCKET=ws.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import http from "node:http";
import net from "node:net";
import { after, before, describe, it } from "node:test";

import { Channel, ChannelError } from "../reso.js";
import { Proxy, Reso, WebSocketImpl, fast, freePort, impl, uniq, until } from "./harness.mjs";

// The default connectTimeout (10 s): a failed handshake must not last it.
const quick = { backoffMin: 50, backoffMax: 100, WebSocket: WebSocketImpl };
const connectTimeout = 10000;

// counting returns a WebSocket constructor that counts the sockets made.
function counting() {
  const c = { n: 0 };
  c.WebSocket = class extends WebSocketImpl {
    constructor(...args) {
      super(...args);
      c.n++;
    }
  };
  return c;
}

// listen starts server on a loopback port and resolves with the port.
function listen(server) {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server.address().port)));
}

const basic = (email, password) => ({ Authorization: "Basic " + btoa(`${email}:${password}`) });

describe(`reso.js connection attempts (${impl} WebSocket)`, () => {
  let reso;
  let refused; // a URL whose port nobody listens on
  let answer503; // an HTTP server that answers every handshake 503
  let silent; // a TCP server that accepts and never answers
  const silentConns = new Set();
  before(async () => {
    reso = new Reso();
    await reso.start();
    refused = `ws://127.0.0.1:${await freePort()}/channel`;
    answer503 = http.createServer((req, res) => {
      res.writeHead(503, { "Content-Type": "text/plain" });
      res.end("503 Service Unavailable");
    });
    answer503.port = await listen(answer503);
    silent = net.createServer((c) => {
      silentConns.add(c);
      c.on("error", () => {}).on("close", () => silentConns.delete(c));
    });
    silent.port = await listen(silent);
  });
  after(async () => {
    for (const c of silentConns) c.destroy();
    await new Promise((r) => silent.close(r));
    answer503.closeAllConnections();
    await new Promise((r) => answer503.close(r));
    await reso.stop();
  });

  it("ends a failed handshake at once and backs off: many attempts before one connectTimeout", async () => {
    const proxy = new Proxy(reso.port);
    await proxy.listen();
    proxy.down(); // accepts and closes at once
    const targets = [
      ["a port nobody listens on", refused],
      ["a server that answers 503", `ws://127.0.0.1:${answer503.port}/channel`],
      ["a proxy that closes the connection", proxy.wsURL],
    ];
    try {
      for (const [what, url] of targets) {
        const c = counting();
        const ch = new Channel(url, { ...quick, WebSocket: c.WebSocket });
        try {
          await until(() => c.n >= 5, `5 attempts on ${what} before one connectTimeout (${connectTimeout} ms) ran out`, connectTimeout - 2000);
          assert.equal(ch.state, "reconnecting");
        } finally {
          ch.close();
        }
      }
    } finally {
      await proxy.close();
    }
  });

  it("is open again soon after a killed server is back, well before a connectTimeout", async () => {
    const own = new Reso();
    await own.start();
    const c = counting();
    const ch = new Channel(own.wsURL, { ...quick, WebSocket: c.WebSocket });
    try {
      await ch.opened();
      await own.kill9();
      await until(() => ch.state === "reconnecting", "the drop");
      // An attempt made while the server is down: it must not hold up the
      // first one after the server is back.
      const before = c.n;
      await until(() => c.n > before, "an attempt while the server is down");
      await own.start();
      await until(() => ch.state === "open", `the reconnect, before a connectTimeout (${connectTimeout} ms) could run out`, connectTimeout - 2000);
      assert.equal((await ch.put("/" + uniq("back-"), { ok: true })).code, "success");
    } finally {
      ch.close();
      await own.stop();
    }
  });

  // A child Node process whose Channel is closed must end by itself, with
  // no error: no timer, socket or fetch may keep it alive.
  describe("close() leaves nothing behind: a Node process exits by itself", () => {
    const exitBound = 10000; // well below connectTimeout (30 s) and the back-off (20 s)
    const run = async (url, script, connectTimeoutMs = 30000) => {
      const setup = [
        `import { Channel } from ${JSON.stringify(import.meta.resolve("../reso.js"))};`,
        impl === "ws"
          ? `const { WebSocket } = await import(${JSON.stringify(import.meta.resolve("ws"))});`
          : "const WebSocket = globalThis.WebSocket;",
        `const ch = new Channel(${JSON.stringify(url)}, { WebSocket, connectTimeout: ${connectTimeoutMs}, backoffMin: 20000, backoffMax: 20000 });`,
        script,
      ].join("\n");
      const flags = process.execArgv.filter((a) => a === "--experimental-websocket");
      const child = spawn(process.execPath, [...flags, "--input-type=module", "-e", setup], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout.on("data", (b) => (out += b));
      child.stderr.on("data", (b) => (out += b));
      const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
      let timer;
      const bound = new Promise((resolve) => {
        timer = setTimeout(() => resolve(null), exitBound);
      });
      const got = await Promise.race([exited, bound]);
      clearTimeout(timer);
      if (got === null) {
        child.kill("SIGKILL");
        await exited;
        assert.fail(`the process did not exit within ${exitBound} ms of close():\n${out}`);
      }
      assert.deepEqual(got, { code: 0, signal: null }, `the process ended badly:\n${out}`);
      assert.equal(out, "", "nothing on stdout or stderr");
    };

    it("closed while connecting", async () => {
      await run(refused, "ch.close();");
      await run(`ws://127.0.0.1:${silent.port}/channel`, "ch.close();");
    });

    it("closed while reconnecting (a probe or a back-off under way)", async () => {
      await run(refused, `ch.on("state", (s) => { if (s === "reconnecting") ch.close(); });`);
      await run(`ws://127.0.0.1:${answer503.port}/channel`, `ch.on("state", (s) => { if (s === "reconnecting") setTimeout(() => ch.close(), 300); });`);
    });

    it("closed after a connectTimeout ran out", async () => {
      await run(
        `ws://127.0.0.1:${silent.port}/channel`,
        `ch.on("state", (s) => { if (s === "reconnecting") setTimeout(() => ch.close(), 100); });`,
        200,
      );
    });
  });

  it("gives a silent server up after connectTimeout without an unhandled error, and keeps trying", async () => {
    const c = counting();
    const errors = [];
    process.on("uncaughtException", (e) => errors.push(e));
    const ch = new Channel(`ws://127.0.0.1:${silent.port}/channel`, { ...quick, connectTimeout: 100, WebSocket: c.WebSocket });
    try {
      await until(() => c.n >= 3, "3 attempts on a server that never answers");
      assert.deepEqual(errors, []);
    } finally {
      ch.close();
    }
  });

  it("starts at a random URL of a list and moves to the next when its connection drops", async () => {
    const a = new Proxy(reso.port);
    const b = new Proxy(reso.port);
    await a.listen();
    await b.listen();
    const ch = new Channel([a.wsURL, b.wsURL], fast);
    const writer = new Channel(reso.wsURL, fast);
    try {
      assert.deepEqual(ch.urls, [a.wsURL, b.wsURL]);
      await Promise.all([ch.opened(), writer.opened()]);
      const room = "/" + uniq("list-");
      await writer.put(room, {}, { persistent: true });
      const seen = [];
      const resyncs = [];
      await ch.subscribe(room, (n) => seen.push(n), { onResync: (r) => resyncs.push(r.recovered) });
      await writer.post(room, { round: -1 }, { persistent: true }); // a seq to resume after
      await until(() => seen.length === 1, "the live notification");
      for (let round = 0; round < 3; round++) {
        const first = ch.url;
        const [down, other] = first === a.wsURL ? [a, b] : [b, a];
        down.down();
        down.cut();
        await until(() => ch.state === "reconnecting", "the drop");
        await writer.post(room, { round }, { persistent: true }); // missed while away
        await until(() => resyncs.length === round + 1, "the resync");
        assert.equal(ch.url, other.wsURL, "on the other URL");
        down.up();
      }
      await until(() => seen.length === 4, "every notification").catch((e) => {
        throw new Error(`${e.message}: ${JSON.stringify(seen)} ${JSON.stringify(resyncs)}`);
      });
      assert.deepEqual(
        seen.map((n) => n.entity.round),
        [-1, 0, 1, 2],
      );
      assert.deepEqual(resyncs, [true, true, true]);
    } finally {
      ch.close();
      writer.close();
      await a.close();
      await b.close();
    }
  });

  it("moves past URLs that refuse until one opens", async () => {
    for (let i = 0; i < 3; i++) {
      const ch = new Channel([refused, `ws://127.0.0.1:${answer503.port}/channel`, reso.wsURL], quick);
      try {
        await ch.opened();
        assert.equal(ch.url, reso.wsURL);
      } finally {
        ch.close();
      }
    }
  });

  it("asks getHeaders before each attempt: a session token from a login, then refused credentials end in unauthorized", async () => {
    const proxy = new Proxy(reso.port);
    await proxy.listen();
    let calls = 0;
    let valid = true;
    // The recipe of docs/clients.md: a session token as the cookies.
    const getHeaders = async () => {
      calls++;
      if (!valid) return basic("user@example.org", "not the password");
      const r = await fetch(reso.httpURL + "/channel", { headers: basic("user@example.org", "example") });
      await r.body?.cancel();
      const cookies = r.headers.getSetCookie().map((c) => c.split(";")[0]);
      return { Cookie: cookies.join("; ") };
    };
    // connectTimeout: an attempt that a loaded machine slows must not count twice.
    const ch = new Channel(proxy.wsURL, { ...fast, connectTimeout: 8000, getHeaders, queue: 1 });
    const states = [];
    const errors = [];
    ch.on("state", (s) => states.push(s));
    ch.on("error", (e) => errors.push(e));
    try {
      await ch.opened();
      assert.equal(calls, 1);
      const top = "/" + uniq("tok-") + "/mine";
      await ch.put(top, {}, { persistent: true });
      assert.equal((await ch.rules(top)).owner, "user@example.org");
      const sub = await ch.subscribe(top, () => {});

      proxy.cut();
      await until(() => calls >= 2 && ch.state === "open", "the reconnect with fresh headers");
      assert.equal((await ch.rules(top)).owner, "user@example.org");

      // The credentials are refused from now on: a 401 ends the channel.
      valid = false;
      proxy.down();
      proxy.cut();
      await until(() => ch.state === "reconnecting", "the drop");
      const isUnauthorized = (err) => {
        assert.ok(err instanceof ChannelError);
        assert.equal(err.code, "unauthorized");
        assert.equal(err.status, 401);
        return true;
      };
      const queued = assert.rejects(ch.put(top + "/q", {}), isUnauthorized);
      proxy.up();
      await until(() => ch.state === "unauthorized", "the state unauthorized");
      await queued;
      await assert.rejects(ch.opened(), isUnauthorized);
      await assert.rejects(ch.get(top), isUnauthorized);
      assert.equal(sub.err?.code, "unauthorized");
      assert.equal((await sub.ended).code, "unauthorized");
      assert.ok(errors.some((e) => e.code === "unauthorized"), "an error event");
      assert.equal(ch._timer, null, "no back-off timer: it does not retry");
      assert.equal(ch._att, null, "no attempt under way");
      assert.deepEqual(states.slice(-2), ["reconnecting", "unauthorized"]);
      ch.close();
      assert.equal(ch.state, "closed");
    } finally {
      ch.close();
      await proxy.close();
    }
  });

  it("ends in unauthorized on a first handshake refused with 401", async () => {
    const c = counting();
    // A back-off longer than the probe can take: the probe runs during the
    // back-off, and its 401 ends the channel before a second attempt.
    const ch = new Channel(reso.wsURL, { ...quick, backoffMin: 20000, backoffMax: 20000, WebSocket: c.WebSocket, headers: basic("nobody@example.org", "wrong") });
    try {
      await assert.rejects(ch.opened(), { code: "unauthorized", status: 401 });
      assert.equal(ch.state, "unauthorized");
      assert.equal(c.n, 1);
    } finally {
      ch.close();
    }
  });

  it("ends in unauthorized on a handshake refused with 403 (a foreign Origin), as ws reports it", { skip: impl !== "ws" && "Node's WebSocket does not tell the status, and a GET without the upgrade is not refused by the origin check" }, async () => {
    const ch = new Channel(reso.wsURL, { ...quick, headers: { Origin: "http://elsewhere.example.org" } });
    try {
      await assert.rejects(ch.opened(), { code: "unauthorized", status: 403 });
      assert.equal(ch.state, "unauthorized");
    } finally {
      ch.close();
    }
  });

  it("retries after getHeaders throws", async () => {
    let calls = 0;
    const errors = [];
    const ch = new Channel(reso.wsURL, {
      ...fast,
      connectTimeout: 8000,
      getHeaders: () => {
        if (++calls < 3) throw new Error("no token yet");
        return {};
      },
    });
    ch.on("error", (e) => errors.push(e.message));
    try {
      await ch.opened();
      assert.equal(calls, 3);
      assert.deepEqual(errors, ["no token yet", "no token yet"]);
    } finally {
      ch.close();
    }
  });
});
