// Test harness of reso.js: a real reso (the binary of $RESO_BIN) started
// and killed by the tests, and a TCP proxy between client and server that
// cuts connections on demand.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

export const wait = 15000; // a hang guard, never a timing assertion

/**
 * The WebSocket the tests give reso.js: Node's own, or with
 * RESO_JS_WEBSOCKET=ws the ws package's (client/js/node_modules, from
 * npm ci --prefix client/js).
 */
export const impl = process.env.RESO_JS_WEBSOCKET === "ws" ? "ws" : "node";
export const WebSocketImpl = impl === "ws" ? (await import("ws")).WebSocket : globalThis.WebSocket;

/** Options of a Channel that reconnects fast, on WebSocketImpl. */
export const fast = { backoffMin: 20, backoffMax: 200, connectTimeout: 500, WebSocket: WebSocketImpl };

/** Resolves with a free loopback port. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** A reso process on a fixed port and database, restartable. */
export class Reso {
  constructor(args = []) {
    const bin = process.env.RESO_BIN;
    if (!bin) throw new Error("RESO_BIN is not set: the path of a reso binary (go build ./cmd/reso)");
    this.bin = bin;
    this.dir = mkdtempSync(path.join(tmpdir(), "reso-js-"));
    this.db = path.join(this.dir, "reso.db");
    this.args = args;
    this.proc = null;
    this.log = "";
  }

  async start() {
    if (!this.port) this.port = await freePort();
    const args = ["-addr", `127.0.0.1:${this.port}`, "-db", this.db, "-secret-file", path.join(this.dir, "secret"), ...this.args];
    const env = { ...process.env, XDG_STATE_HOME: path.join(this.dir, "state") };
    const proc = spawn(this.bin, args, { cwd: this.dir, env, stdio: ["ignore", "pipe", "pipe"] });
    this.proc = proc;
    const exited = new Promise((resolve) => proc.on("exit", resolve));
    this.exited = exited;
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`reso did not listen:\n${this.log}`)), wait);
      const onData = (b) => {
        this.log += b.toString();
        if (this.log.includes('msg="reso listening"')) {
          clearTimeout(timer);
          resolve();
        }
      };
      proc.stdout.on("data", onData);
      proc.stderr.on("data", onData);
      exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`reso exited (${code}) before listening:\n${this.log}`));
      });
    });
    this.log = "";
  }

  /** Gives the next start a new state directory: a new -db file, a new history. */
  freshState() {
    this.db = path.join(mkdtempSync(path.join(this.dir, "state-")), "reso.db");
  }

  get wsURL() {
    return `ws://127.0.0.1:${this.port}/channel`;
  }

  get httpURL() {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Kills the server with SIGKILL (kill -9) and waits for its end. */
  async kill9() {
    this.proc.kill("SIGKILL");
    await this.exited;
  }

  async stop() {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill("SIGTERM");
      await this.exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A TCP proxy to a port. up() lets connections through; down() refuses
 * new ones (accepted and closed at once); cut() ends every open one;
 * hold() keeps what clients send from the server (held() resolves once
 * something was held); to(port) sends the new ones to another port.
 */
export class Proxy {
  constructor(target) {
    this.target = target;
    this.isUp = true;
    this.holding = false;
    this.pairs = new Set();
    this._held = null;
    this.server = net.createServer((c) => this._accept(c));
  }

  listen() {
    return new Promise((resolve) => {
      this.server.listen(0, "127.0.0.1", () => {
        this.port = this.server.address().port;
        resolve();
      });
    });
  }

  get wsURL() {
    return `ws://127.0.0.1:${this.port}/channel`;
  }

  _accept(c) {
    if (!this.isUp) {
      c.destroy();
      return;
    }
    const s = net.connect(this.target, "127.0.0.1");
    const pair = { c, s };
    this.pairs.add(pair);
    const end = () => {
      c.destroy();
      s.destroy();
      this.pairs.delete(pair);
    };
    c.on("error", end).on("close", end);
    s.on("error", end).on("close", end);
    c.on("data", (b) => {
      if (this.holding) {
        this._held?.();
        return;
      }
      s.write(b);
    });
    s.on("data", (b) => c.write(b));
  }

  up() {
    this.isUp = true;
  }

  /** Sends new connections to port; the open ones stay where they are. */
  to(port) {
    this.target = port;
  }

  down() {
    this.isUp = false;
  }

  hold() {
    this.holding = true;
    return new Promise((resolve) => {
      this._held = resolve;
    });
  }

  cut() {
    this.holding = false;
    this._held = null;
    for (const { c, s } of this.pairs) {
      c.destroy();
      s.destroy();
    }
    this.pairs.clear();
  }

  close() {
    this.cut();
    return new Promise((resolve) => this.server.close(resolve));
  }
}

/** Resolves when cond() is true, checking after every event-loop turn; bound: ms. */
export async function until(cond, what, bound = wait) {
  const deadline = Date.now() + bound;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`waited ${bound} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Resolves with the next state s of ch. */
export function nextState(ch, s) {
  return new Promise((resolve) => {
    const off = ch.on("state", (got) => {
      if (got === s) {
        off();
        resolve();
      }
    });
  });
}

/** A unique path segment. */
export function uniq(prefix) {
  return prefix + Math.random().toString(16).slice(2, 10);
}
