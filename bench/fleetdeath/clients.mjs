// A process of reso.js clients for a node's death (bench/fleetdeath and
// tests/fleet_death_test.go): it opens n Channels, each given the list of
// the fleet's node URLs, subscribed to one room and owning one transient
// presence resource, and reports on its stdout, one JSON object a line.
//
// Configuration, in the environment variable RESO_DEATH (JSON):
//   urls    the nodes' WebSocket URLs; every client starts on urls[0],
//           and its list has the others after it rotated by its number,
//           so that the clients of urls[0] move to all the others
//   n       how many clients
//   first   the number of the first client (names: c<first>, c<first+1>, ...)
//   prefix  the resources' prefix: rooms <prefix>/room<i % rooms>,
//           presence <prefix>/presence/c<i>
//   rooms   how many rooms
//   ws      "ws" for the ws package's WebSocket (client/js/node_modules),
//           else Node's own
//
// Lines out: {"ready": n} once every client is open, subscribed and owns
// its presence; {"report": {...}} after each "report" line in (see
// report); {"error": "..."} when something fails (the process then exits
// 1). Lines in: {"report": {"<room>": [k, ...]}, "detail": bool}, the
// numbers of the NOTIFYs acknowledged per room (with detail, the report
// adds each client's trace since ready: see report); "close" ends the
// clients and the process.
//
// The Channel starts at a random URL of its list; to put every client on
// urls[0] at the start, Math.random answers 0 during the constructor only
// (the back-off's jitter keeps the real one), and a client whose first
// attempt failed (so that it moved to the next URL) is closed and made
// again. Everything after the start is reso.js's own: reconnect to the
// next URL, SUBSCRIBE with since.

import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import { Channel } from "../../client/js/reso.js";

const cfg = JSON.parse(process.env.RESO_DEATH ?? "{}");
// The ws package is client/js's (npm ci --prefix client/js), resolved from
// there: this file's folder has no node_modules.
const WebSocketImpl =
  cfg.ws === "ws"
    ? (await import(createRequire(new URL("../../client/js/package.json", import.meta.url)).resolve("ws"))).default
    : globalThis.WebSocket;

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

/**
 * tracedWebSocket is the WebSocket of client c: each connection attempt
 * made once c.tracing is set (after ready) goes in c.trace as {start,
 * open, end, how} (ms since the epoch; how: what ended it, "handshake:
 * <what>" when it never opened). Node's own WebSocket does not tell the
 * status of a refused handshake (ws does: "Unexpected server response:
 * 503"); an attempt that the Channel gave up after connectTimeout is
 * "handshake: timeout".
 */
function tracedWebSocket(c) {
  return class extends WebSocketImpl {
    constructor(...args) {
      super(...args);
      if (!c.tracing) return;
      const a = { start: Date.now(), open: 0, end: 0, how: "" };
      c.trace.push(a);
      const end = (how) => {
        if (a.end) return;
        a.end = Date.now();
        if (a.open) a.how = how;
        else a.how = `handshake: ${a.end - a.start >= connectTimeout - 50 ? "timeout" : how}`;
      };
      this.addEventListener("open", () => (a.open = Date.now()));
      this.addEventListener("error", (ev) => end(errorText(ev)));
      this.addEventListener("close", (ev) => end(`close ${ev.code}`));
    }
  };
}

// errorText is the short text of an error event: the status of a refused
// handshake when the WebSocket tells it.
function errorText(ev) {
  const msg = String(ev?.message ?? ev?.error?.message ?? "");
  const m = /Unexpected server response: (\d{3})/.exec(msg);
  if (m) return m[1];
  return msg === "" ? "error" : msg.slice(0, 60);
}

const connectTimeout = 10000; // reso.js's default

function fail(err) {
  out({ error: String(err && err.stack ? err.stack : err) });
  process.exit(1);
}

/** ownList is client i's list of URLs: urls[0], then the others rotated by i. */
function ownList(i) {
  const rest = cfg.urls.slice(1);
  const r = rest.length > 0 ? i % rest.length : 0;
  return [cfg.urls[0], ...rest.slice(r), ...rest.slice(0, r)];
}

/** One client: its Channel, what it received per NOTIFY number, its resyncs. */
class Client {
  constructor(i) {
    this.i = i;
    this.room = `${cfg.prefix}/room${i % cfg.rooms}`;
    this.got = new Map(); // NOTIFY number -> times delivered
    this.resyncs = []; // {at, recovered, url}
    this.lastSeq = 0;
    this.disorder = 0; // notifications whose seq was not above the one before
    this.tracing = false; // set once every client is ready
    this.trace = []; // the connection attempts since: see tracedWebSocket
    this.probes = 0; // the Channel's GETs learning a failed handshake's status, since ready
    this.fetch = (...args) => {
      if (this.tracing) this.probes++;
      return fetch(...args);
    };
  }

  async open() {
    // A first attempt that fails moves the Channel to the next URL: such
    // a client is closed and opened again, until it is on urls[0].
    for (;;) {
      const random = Math.random;
      Math.random = () => 0;
      try {
        this.ch = new Channel(ownList(this.i), { WebSocket: tracedWebSocket(this), fetch: this.fetch, requestTimeout: 60000 });
      } finally {
        Math.random = random;
      }
      this.ch.on("error", () => {}); // failed attempts: the Channel tries the next URL
      this.ch.on("state", (st) => {
        // When the connection of ready ended (the kill): the trace's start.
        if (st === "reconnecting" && this.tracing && !this.dropped) this.dropped = Date.now();
      });
      await this.ch.opened();
      if (this.ch.url === this.ch.urls[0]) break;
      this.ch.close();
    }
    await this.ch.subscribe(
      this.room,
      (n) => {
        if (n.seq <= this.lastSeq) this.disorder++;
        this.lastSeq = n.seq;
        if (n.notify === "NOTIFY" && n.data && typeof n.data.k === "number") {
          this.got.set(n.data.k, (this.got.get(n.data.k) ?? 0) + 1);
        }
      },
      {
        onResync: (r) => this.resyncs.push({ at: Date.now(), recovered: r.recovered, url: this.ch.url }),
        onEnd: (err) => (this.ended = err ? `subscription ended: ${err.code} ${err.message}` : "unsubscribed"),
      },
    );
    await this.ch.put(`${cfg.prefix}/presence/c${this.i}`, { i: this.i });
  }
}

const clients = [];
try {
  for (let i = 0; i < cfg.n; i++) clients.push(new Client(cfg.first + i));
  const batch = 100;
  for (let i = 0; i < clients.length; i += batch) {
    await Promise.all(clients.slice(i, i + batch).map((c) => c.open()));
  }
} catch (err) {
  fail(err);
}
for (const c of clients) c.tracing = true;
out({ ready: clients.length });

/**
 * report counts, against the NOTIFYs acknowledged (acked: room -> numbers):
 * the deliveries owed, missed and doubled; the clients that resynced on a
 * node other than urls[0] and with recovered: true; the time of each
 * client's first resync (ms since the epoch; 0: none yet); the states of
 * the clients not resynced yet.
 */
function report(acked, detail) {
  const r = { clients: clients.length, resynced: 0, recovered: 0, elsewhere: 0, expected: 0, missed: 0, doubled: 0, disorder: 0, first: [], states: {} };
  if (detail) Object.assign(r, { drop: [], opened: [], attempts: [], ended: {}, waits: [], probes: 0 });
  for (const c of clients) {
    if (detail) traced(r, c);
    const ks = acked[c.room] ?? [];
    r.expected += ks.length;
    for (const k of ks) if (!c.got.has(k)) r.missed++;
    for (const n of c.got.values()) if (n > 1) r.doubled += n - 1;
    r.disorder += c.disorder;
    if (c.resyncs.length > 0) {
      r.resynced++;
      if (c.resyncs.every((s) => s.recovered)) r.recovered++;
      if (c.ch.url !== c.ch.urls[0]) r.elsewhere++;
    }
    r.first.push(c.resyncs.length > 0 ? c.resyncs[0].at : 0);
    const st = c.ended ?? c.ch.state;
    if (c.resyncs.length === 0) r.states[st] = (r.states[st] ?? 0) + 1;
  }
  return r;
}

/**
 * traced adds client c's trace up to its first resync to r: when its
 * connection to urls[0] ended (drop), when the connection that subscribed
 * again opened (opened; ms since the epoch, 0: none), how many attempts
 * it made (attempts), what ended each failed one (ended: what -> count),
 * and each wait between the end of one and the start of the next (waits,
 * ms: the back-off as the process kept it, its event loop's lag included);
 * and the GETs the Channel sent to learn a failed handshake's status
 * (probes, since ready: each costs about what a handshake does).
 */
function traced(r, c) {
  const until = c.resyncs.length > 0 ? c.resyncs[0].at : Infinity;
  const ts = c.trace.filter((a) => a.start <= until);
  let drop = 0;
  let opened = 0;
  let prevEnd = 0;
  for (const a of ts) {
    if (prevEnd) r.waits.push(a.start - prevEnd);
    if (a.open && (!a.end || a.end >= until)) opened = a.open;
    else if (a.end) r.ended[a.how] = (r.ended[a.how] ?? 0) + 1;
    prevEnd = a.end;
  }
  // The connection of ready ended before the first traced attempt.
  if (ts.length > 0) drop = c.dropped ?? 0;
  if (drop && ts.length > 0) r.waits.push(ts[0].start - drop);
  r.drop.push(drop);
  r.opened.push(opened);
  r.attempts.push(ts.length);
  r.probes += c.probes;
}

for await (const line of createInterface({ input: process.stdin })) {
  if (line === "close") break;
  try {
    const msg = JSON.parse(line);
    if (msg.report) out({ report: report(msg.report, msg.detail === true) });
  } catch (err) {
    fail(err);
  }
}
for (const c of clients) c.ch.close();
process.exit(0);
