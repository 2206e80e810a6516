// Tests of reso.js against servers that end connections at once, as an
// overloaded node or a balancer in front of a dead one does (issue 36):
// each attempt ends when its connection ends, whatever the runtime says
// or leaves unsaid, and the next one comes after the back-off, not after
// connectTimeout; the back-off grows across attempts that open and are
// closed at once, and starts again after a connection that proved
// itself; an attempt whose answer came while the event loop was too busy
// to take it before connectTimeout ran out is not given up. Run on Node's
// own WebSocket, and on the ws package's with RESO_JS_WEBSOCKET=ws.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { Channel } from "../reso.js";
import { Proxy, Reso, WebSocketImpl, impl, uniq, until } from "./harness.mjs";

// connectTimeout far longer than the wait for the attempts: an attempt
// that waits it out cannot be followed by another within the bound.
const slowTimeout = 60000;
const bound = 30000; // the wait for the attempts: a hang guard
const want = 4; // attempts to see
const quick = { backoffMin: 50, backoffMax: 100, connectTimeout: slowTimeout };

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

function listen(server) {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server.address().port)));
}

// A test server: seen counts its connections (tcp, when counted) or its
// WebSocket handshakes (the others; a probe's GET has no Upgrade header).
function tcpServer(onConn, counted = true) {
  const s = { seen: 0, conns: new Set() };
  s.server = net.createServer((c) => {
    if (counted) s.seen++;
    s.conns.add(c);
    c.on("error", () => {}).on("close", () => s.conns.delete(c));
    onConn(c);
  });
  s.close = () => {
    for (const c of s.conns) c.destroy();
    return new Promise((r) => s.server.close(r));
  };
  return s;
}

// holdingProbes closes every WebSocket handshake once read, and keeps
// any other request (a probe's GET) open unanswered; seen counts the
// handshakes.
function holdingProbes() {
  const s = tcpServer((c) => {
    let head = "";
    c.on("data", (b) => {
      head += b;
      if (!head.includes("\r\n\r\n")) return;
      if (/^upgrade:/im.test(head)) {
        s.seen++;
        c.end();
      }
    });
  }, false);
  return s;
}

// upgrading answers every handshake 101 and then sends a close frame
// with code (none when undefined) and ends the connection.
function upgrading(code) {
  const s = { seen: 0, socks: new Set() };
  s.server = http.createServer((req, res) => {
    res.writeHead(400);
    res.end();
  });
  s.server.on("upgrade", (req, sock) => {
    s.seen++;
    // An upgraded socket is the server's no more: close() ends it.
    s.socks.add(sock);
    sock.on("error", () => {}).on("close", () => s.socks.delete(sock));
    const accept = createHash("sha1")
      .update(req.headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
      .digest("base64");
    sock.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    if (code !== undefined) {
      const frame = Buffer.from([0x88, 2, code >> 8, code & 0xff]);
      sock.write(frame);
    }
    sock.end();
  });
  s.close = () => {
    for (const sock of s.socks) sock.destroy();
    s.server.closeAllConnections();
    return new Promise((r) => s.server.close(r));
  };
  return s;
}

// answering503 answers every request (handshakes included) 503.
function answering503() {
  const s = { seen: 0 };
  s.server = http.createServer((req, res) => {
    if (req.headers.upgrade) s.seen++;
    res.writeHead(503, { "Content-Type": "text/plain", Connection: "close" });
    res.end("503 Service Unavailable");
  });
  s.close = () => {
    s.server.closeAllConnections();
    return new Promise((r) => s.server.close(r));
  };
  return s;
}

describe(`reso.js attempts end with their connection (${impl} WebSocket)`, () => {
  const servers = {
    // Accepts and resets at once (SO_LINGER 0 and close: a RST).
    reset: tcpServer((c) => c.resetAndDestroy()),
    // Reads the request and closes without answering.
    "closes after the request": tcpServer((c) => c.once("data", () => c.end())),
    // Closes handshakes after the request, and holds any other request
    // unanswered (a node whose plain requests wait in a queue): the probe
    // that learns a failed handshake's status gets no answer, as a probe
    // whose connection the runtime lost track of gets none.
    "closes handshakes and holds the probe": holdingProbes(),
    // Completes the upgrade and closes at once.
    "upgrades and closes with 1013": upgrading(1013),
    "upgrades and closes with no code": upgrading(undefined),
    // Refuses the handshake.
    "answers 503": answering503(),
  };
  before(async () => {
    for (const s of Object.values(servers)) s.port = await listen(s.server);
  });
  after(async () => {
    for (const s of Object.values(servers)) await s.close();
  });

  for (const [what, s] of Object.entries(servers)) {
    it(`a server that ${what}: the next attempt comes after the back-off, not after connectTimeout`, async () => {
      const c = counting();
      const ch = new Channel(`ws://127.0.0.1:${s.port}/channel`, { ...quick, WebSocket: c.WebSocket });
      const errors = [];
      ch.on("error", (e) => errors.push(e));
      try {
        await until(() => c.n >= want && s.seen >= want, `${want} attempts with connectTimeout ${slowTimeout} ms`, bound).catch((e) => {
          throw new Error(`${e.message}: made ${c.n}, the server saw ${s.seen}`);
        });
        assert.notEqual(ch.state, "unauthorized");
        assert.equal(ch.error, null);
      } finally {
        ch.close();
      }
    });
  }

  it("the back-off grows across connections closed at once (1013, or none) and across refusals, and the URL moves on", async () => {
    for (const what of ["upgrades and closes with 1013", "upgrades and closes with no code", "answers 503", "reset"]) {
      const s = servers[what];
      const url = `ws://127.0.0.1:${s.port}/channel`;
      const other = `ws://127.0.0.1:${servers["closes after the request"].port}/channel`;
      const c = counting();
      const urls = [];
      const Counting = c.WebSocket;
      const ch = new Channel([url, other], {
        ...quick,
        WebSocket: class extends Counting {
          constructor(u, ...rest) {
            super(u, ...rest);
            urls.push(u);
          }
        },
      });
      try {
        await until(() => c.n >= 2 * want, `${2 * want} attempts on ${what}`, bound);
        // Not one reset of the count: the waits grew (up to backoffMax).
        assert.ok(ch._attempt >= 2 * want - 1, `${what}: attempt count ${ch._attempt} after ${c.n} attempts`);
        for (let i = 1; i < urls.length; i++) assert.notEqual(urls[i], urls[i - 1], `${what}: attempt ${i} on the same URL`);
      } finally {
        ch.close();
      }
    }
  });

  describe("against reso", () => {
    let reso;
    before(async () => {
      reso = new Reso();
      await reso.start();
    });
    after(async () => {
      await reso.stop();
    });

    it("a connection that proved itself (a reply came) starts the back-off again from backoffMin", async () => {
      const proxy = new Proxy(reso.port);
      await proxy.listen();
      proxy.down(); // accepts and closes: attempts fail, the count grows
      const c = counting();
      const ch = new Channel(proxy.wsURL, { ...quick, WebSocket: c.WebSocket });
      try {
        await until(() => c.n >= 3, "3 failed attempts");
        proxy.up();
        await ch.opened();
        assert.equal((await ch.put("/" + uniq("proved-"), { ok: true })).code, "success");
        proxy.cut();
        await until(() => ch.state === "reconnecting", "the drop");
        assert.equal(ch._attempt, 1, "the first wait after a proven connection is drawn from backoffMin");
        await until(() => ch.state === "open", "the reconnect");
      } finally {
        ch.close();
        await proxy.close();
      }
    });

    it("a connection that ended before any frame does not reset the count", async () => {
      const proxy = new Proxy(reso.port);
      await proxy.listen();
      // backoffMax far above the test: a connection open that long would count as proven.
      const ch = new Channel(proxy.wsURL, { ...quick, backoffMax: slowTimeout, WebSocket: WebSocketImpl });
      try {
        for (let round = 1; round <= 3; round++) {
          await ch.opened();
          proxy.cut();
          await until(() => ch.state === "reconnecting", "the drop");
          assert.equal(ch._attempt, round, `round ${round}: the count goes on`);
        }
      } finally {
        ch.close();
        await proxy.close();
      }
    });
  });
});

// A server in a process of its own that holds a WebSocket handshake
// until told: it writes "got" in dir once it has read the request, waits
// for the file "answer" in dir, answers 101, and writes "answered" once
// the answer is written (the bytes are then in the client's socket), then
// keeps the connection open.
const holdingServer = `
const net = require("node:net"), fs = require("node:fs"), path = require("node:path"), crypto = require("node:crypto");
const dir = process.argv[1];
const server = net.createServer((c) => {
  let head = "";
  c.on("error", () => {});
  c.on("data", (b) => {
    head += b;
    if (!head.includes("\\r\\n\\r\\n") || c.answered) return;
    c.answered = true;
    fs.writeFileSync(path.join(dir, "got"), "");
    const key = /sec-websocket-key: *(\\S+)/i.exec(head)[1];
    const accept = crypto.createHash("sha1").update(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
    const poll = setInterval(() => {
      if (!fs.existsSync(path.join(dir, "answer"))) return;
      clearInterval(poll);
      c.write("HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: " + accept + "\\r\\n\\r\\n", () =>
        fs.writeFileSync(path.join(dir, "answered"), ""));
    }, 5);
  });
});
server.listen(0, "127.0.0.1", () => process.stdout.write(server.address().port + "\\n"));
`;

describe(`reso.js connectTimeout on a busy event loop (${impl} WebSocket)`, () => {
  it("an attempt whose answer came while the event loop was busy past connectTimeout opens: it is not given up", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "reso-js-busy-"));
    const child = spawn(process.execPath, ["-e", holdingServer, dir], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const port = Number(await new Promise((resolve, reject) => {
        child.stdout.once("data", (b) => resolve(String(b).trim()));
        child.once("exit", (code) => reject(new Error(`the server ended: ${code}`)));
      }));
      const connectTimeout = 2000;
      const c = counting();
      let started = 0;
      const Counting = c.WebSocket;
      const ch = new Channel(`ws://127.0.0.1:${port}/channel`, {
        ...quick,
        connectTimeout,
        WebSocket: class extends Counting {
          constructor(...args) {
            super(...args);
            if (!started) started = Date.now();
          }
        },
      });
      try {
        // The request reached the server (the loop runs meanwhile).
        await until(() => existsSync(path.join(dir, "got")), "the handshake's request at the server", bound);
        assert.equal(c.n, 1, "the first attempt was given up before the server had its request: the machine is too slow for this test's connectTimeout");
        // Now the loop is busy: the server answers, and connectTimeout
        // runs out, before the loop turns again.
        writeFileSync(path.join(dir, "answer"), "");
        const guard = Date.now() + bound;
        while (!existsSync(path.join(dir, "answered")) || Date.now() <= started + connectTimeout + 100) {
          if (Date.now() > guard) throw new Error("the server did not answer");
        }
        await until(() => ch.state === "open" || c.n > 1, "the attempt's end", bound);
        assert.equal(ch.state, "open", "the answered attempt was given up");
        assert.equal(c.n, 1);
      } finally {
        ch.close();
      }
    } finally {
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
