// reso.js: the JavaScript client of reso's resource channel
// (docs/channel.md, docs/clients.md). An ES module without dependencies
// and without a build step, for browsers and Node 20 or later.
//
// A Channel keeps one WebSocket to GET /channel. Every request returns a
// promise settled by the reply with the same msg_id. Subscriptions are
// remembered: after a dropped connection the Channel reconnects with
// jittered, bounded back-off, subscribes again with "since" set to the
// last seq it delivered, and tells the app whether the server recovered
// what it missed. Each notification reaches the app once, in seq order.

/** The error of a request that did not succeed. */
export class ChannelError extends Error {
  /**
   * @param {string} code "failed" (the server refused: see reason),
   *   "disconnected" (no connection when the request was made),
   *   "connection lost" (the connection ended before the reply),
   *   "queue full", "closed" (the Channel was closed), or "http" (an HTTP
   *   request failed: see status)
   * @param {string} reason the server's reason, or what went wrong
   * @param {object} [extra] reply: the server's reply; status: the HTTP status
   */
  constructor(code, reason, extra = {}) {
    super(code === "failed" || code === "http" ? reason : `${code}: ${reason}`);
    this.name = "ChannelError";
    this.code = code;
    this.reason = reason;
    this.reply = extra.reply;
    this.status = extra.status;
  }
}

/** Defaults of the Channel's options. */
export const defaults = Object.freeze({
  backoffMin: 250, // ms before the first reconnect (then doubled, up to backoffMax)
  backoffMax: 10000, // ms, the longest wait between two attempts
  queue: 0, // requests kept while disconnected; 0 rejects them at once
  connectTimeout: 10000, // ms a connection attempt may take before it is given up
});

const OPEN = 1;

/**
 * A connection to reso's channel that reconnects and recovers by itself.
 */
export class Channel {
  /**
   * @param {string} url the WebSocket URL, e.g. "wss://example.org/channel";
   *   in a browser a path such as "/channel" is resolved against the page
   * @param {object} [options] see docs/clients.md
   */
  constructor(url, options = {}) {
    this.url = resolveURL(url);
    this.options = { ...defaults, ...options };
    this.WebSocket = options.WebSocket ?? globalThis.WebSocket;
    if (typeof this.WebSocket !== "function") {
      throw new Error(
        "reso: no WebSocket: pass options.WebSocket (e.g. the ws package), or run Node 20 with --experimental-websocket",
      );
    }
    this.state = "connecting";
    this.seq = 0; // the greatest seq seen on any connection
    this._nextID = 1;
    this._pending = new Map(); // msg_id -> {resolve, reject, msg}
    this._queue = []; // requests waiting for a connection
    this._subs = new Map(); // resource -> Subscription
    this._listeners = new Map();
    this._attempt = 0;
    this._timer = null;
    this._ws = null;
    this._open = null;
    this._connect();
  }

  /**
   * Calls fn(...) on each event of type: "state" (the new state:
   * "connecting", "open", "reconnecting", "closed") and "error" (an Error
   * the app may log). Returns a function that removes the listener.
   */
  on(type, fn) {
    if (!this._listeners.has(type)) this._listeners.set(type, new Set());
    this._listeners.get(type).add(fn);
    return () => this._listeners.get(type)?.delete(fn);
  }

  /** Resolves when the connection is open (at once when it is). */
  opened() {
    if (this.state === "open") return Promise.resolve();
    if (this.state === "closed") return Promise.reject(new ChannelError("closed", "the channel is closed"));
    return new Promise((resolve, reject) => {
      const off = this.on("state", (s) => {
        if (s === "open") {
          off();
          resolve();
        } else if (s === "closed") {
          off();
          reject(new ChannelError("closed", "the channel is closed"));
        }
      });
    });
  }

  /**
   * Sends a message (an object with method and resource; msg_id is added)
   * and resolves with the success reply, or rejects with a ChannelError.
   */
  request(msg) {
    if (this.state === "closed") return Promise.reject(new ChannelError("closed", "the channel is closed"));
    return new Promise((resolve, reject) => {
      const entry = { msg: { ...msg }, resolve, reject };
      if (this.state === "open") {
        this._send(entry);
      } else if (this._queue.length < this.options.queue) {
        this._queue.push(entry);
      } else if (this.options.queue > 0) {
        reject(new ChannelError("queue full", `${this.options.queue} requests already wait for the connection`));
      } else {
        reject(new ChannelError("disconnected", "not connected; nothing was sent"));
      }
    });
  }

  /** GET: resolves with the reply ({resource, type, entity}). */
  get(resource) {
    return this.request({ method: "GET", resource });
  }

  /** PUT entity at resource; opts: persistent, type, partial. */
  put(resource, entity, opts = {}) {
    return this.request({ method: "PUT", resource, entity, ...opts });
  }

  /** POST entity as a new child of resource; opts: id, persistent, type. Resolves with the reply ({id}). */
  post(resource, entity, opts = {}) {
    return this.request({ method: "POST", resource, entity, ...opts });
  }

  /** DELETE resource. */
  delete(resource) {
    return this.request({ method: "DELETE", resource });
  }

  /** NOTIFY: passes data to the subscribers of resource; resolves with the reply ({sent_count}). */
  notify(resource, data) {
    return this.request({ method: "NOTIFY", resource, data });
  }

  /** RULES: reads (without change) or changes ({rules, group, owner}) the rules of resource. */
  rules(resource, change = {}) {
    return this.request({ method: "RULES", resource, ...change });
  }

  /**
   * SUBSCRIBE to resource; onNotification(n) gets each notification once,
   * in seq order. opts.onResync({recovered, reload}) is called after each
   * reconnect once the subscription is back: recovered tells whether every
   * missed notification was delivered; when it is false the app must read
   * the state again, for which reload(query) does a GET of the resource
   * (query such as "?deep=2"). Resolves with the Subscription once the
   * server confirmed it. A subscription made while disconnected waits for
   * the connection.
   */
  subscribe(resource, onNotification, opts = {}) {
    if (this.state === "closed") return Promise.reject(new ChannelError("closed", "the channel is closed"));
    if (this._subs.has(resource)) {
      return Promise.reject(new ChannelError("failed", `already subscribed to ${resource}`));
    }
    const sub = new Subscription(this, resource, onNotification, opts.onResync);
    this._subs.set(resource, sub);
    const p = new Promise((resolve, reject) => {
      sub._confirm = { resolve, reject };
    });
    if (this.state === "open") this._subscribe(sub);
    return p;
  }

  /** UNSUBSCRIBE from resource; its notifications stop at once. */
  async unsubscribe(resource) {
    const sub = this._subs.get(resource);
    this._subs.delete(resource);
    if (sub) sub.active = false;
    if (this.state !== "open") return { code: "success" };
    return this.request({ method: "UNSUBSCRIBE", resource });
  }

  /**
   * SEND body (an invitation {command, url, id, reason}) to a call-control
   * resource such as "/login/bob@example.org" over HTTP; resolves with the
   * answer ({id}, and status 200 or 202).
   */
  send(resource, body) {
    return this._http("SEND", resource, body);
  }

  /** CANCEL a waiting message, e.g. "/login/bob@example.org/<id>", over HTTP. */
  cancel(resource) {
    return this._http("CANCEL", resource);
  }

  /** Closes the channel for good: pending requests reject with "closed". */
  close() {
    if (this.state === "closed") return;
    clearTimeout(this._timer);
    this._setState("closed");
    const ws = this._ws;
    this._ws = null;
    this._fail("closed", "the channel is closed");
    for (const sub of this._subs.values()) {
      sub.active = false;
      sub._confirm?.reject(new ChannelError("closed", "the channel is closed"));
    }
    this._subs.clear();
    if (ws) {
      ws.onopen = ws.onclose = ws.onmessage = ws.onerror = null;
      try {
        ws.close(1000);
      } catch {
        // already closing
      }
    }
  }

  // --- internals ---

  _emit(type, ...args) {
    for (const fn of [...(this._listeners.get(type) ?? [])]) {
      try {
        fn(...args);
      } catch (err) {
        if (type !== "error") this._emit("error", err);
      }
    }
  }

  _setState(s) {
    if (this.state === s) return;
    this.state = s;
    this._emit("state", s);
  }

  _connect() {
    let ws;
    try {
      ws = this.options.headers
        ? new this.WebSocket(this.url, { headers: this.options.headers })
        : new this.WebSocket(this.url);
    } catch (err) {
      this._emit("error", err);
      this._retry();
      return;
    }
    this._ws = ws;
    // Some WebSocket implementations (Node 20's) never report a
    // connection closed during the handshake: an attempt has a deadline.
    const deadline = setTimeout(() => {
      if (this._ws !== ws) return;
      ws.onopen = ws.onclose = ws.onmessage = ws.onerror = null;
      this._ws = null;
      try {
        ws.close();
      } catch {
        // not open yet
      }
      this._retry();
    }, this.options.connectTimeout);
    ws.onopen = () => {
      clearTimeout(deadline);
      if (this._ws !== ws) return;
      this._attempt = 0;
      // Subscriptions first, then the queue, then the app hears of it:
      // what it sends then comes after them.
      this.state = "open";
      for (const sub of this._subs.values()) this._subscribe(sub);
      const queued = this._queue;
      this._queue = [];
      for (const entry of queued) this._send(entry);
      this._emit("state", "open");
    };
    ws.onmessage = (ev) => {
      if (this._ws === ws) this._frame(ev.data);
    };
    ws.onerror = () => {
      // onclose follows, which reconnects.
    };
    ws.onclose = () => {
      clearTimeout(deadline);
      if (this._ws !== ws) return;
      this._ws = null;
      this._fail("connection lost", "the connection ended before the reply; the request may or may not have been applied");
      this._retry();
    };
  }

  _retry() {
    if (this.state === "closed") return;
    this._setState("reconnecting");
    const o = this.options;
    const cap = Math.min(o.backoffMax, o.backoffMin * 2 ** Math.min(this._attempt, 30));
    this._attempt++;
    const delay = cap / 2 + Math.random() * (cap / 2);
    this._timer = setTimeout(() => this._connect(), delay);
  }

  // _fail rejects every request waiting for a reply, and the queue.
  _fail(code, reason) {
    const pending = [...this._pending.values()];
    this._pending.clear();
    for (const p of pending) p.reject(new ChannelError(code, reason));
    if (code === "closed") {
      const queued = this._queue;
      this._queue = [];
      for (const q of queued) q.reject(new ChannelError(code, reason));
    }
  }

  _send(entry) {
    const id = this._nextID++;
    entry.msg.msg_id = id;
    this._pending.set(id, entry);
    try {
      this._ws.send(JSON.stringify(entry.msg));
    } catch (err) {
      this._pending.delete(id);
      entry.reject(new ChannelError("connection lost", String(err?.message ?? err)));
    }
  }

  _subscribe(sub) {
    const msg = { method: "SUBSCRIBE", resource: sub.resource };
    const since = sub.since();
    const resync = sub.confirmed; // a subscription coming back
    if (since > 0) msg.since = since;
    const entry = {
      msg,
      resolve: (reply) => {
        if (!sub.active) return;
        const first = !sub.confirmed;
        sub.confirmed = true;
        if (!sub.base) sub.base = this.seq;
        if (first) {
          sub._confirm?.resolve(sub);
          sub._confirm = null;
        }
        if (resync) {
          sub._resync(since > 0 && reply.recovered === true);
        }
      },
      reject: (err) => {
        if (!sub.active) return;
        if (err.code === "failed") {
          // The server refused it (forbidden, ...): it is forgotten.
          this._subs.delete(sub.resource);
          sub.active = false;
          sub._confirm?.reject(err);
          if (!sub._confirm) this._emit("error", err);
          sub._confirm = null;
        }
        // Lost with the connection: the next connection subscribes again.
      },
    };
    this._send(entry);
  }

  _frame(data) {
    let m;
    try {
      m = JSON.parse(data);
    } catch {
      this._emit("error", new Error("reso: a frame that is not JSON"));
      return;
    }
    if (m === null || typeof m !== "object") return;
    if (m.notify !== undefined) {
      const seq = typeof m.seq === "number" ? m.seq : 0;
      const sub = this._subs.get(m.resource);
      if (sub) sub._deliver(m, seq);
      if (seq > this.seq) this.seq = seq;
      return;
    }
    if (m.msg_id === undefined) return;
    const entry = this._pending.get(m.msg_id);
    if (!entry) return;
    this._pending.delete(m.msg_id);
    if (m.code === "success") entry.resolve(m);
    else entry.reject(new ChannelError("failed", m.reason ?? "failed", { reply: m }));
  }

  // _http sends a call-control request over HTTP, with the browser's
  // cookies (credentials: "include") or options.headers.
  async _http(method, resource, body) {
    const fetchFn = this.options.fetch ?? globalThis.fetch;
    const base = this.options.httpBase ?? httpBase(this.url);
    const init = { method, headers: { ...(this.options.headers ?? {}) }, credentials: "include" };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
    const resp = await fetchFn(base + resource, init);
    const text = await resp.text();
    if (!resp.ok) {
      // reso repeats the status line as the body ("404 Not Logged In").
      const reason = text.trim().replace(/^\d{3} /, "") || resp.statusText;
      throw new ChannelError("http", reason, { status: resp.status });
    }
    const out = text ? JSON.parse(text) : {};
    return Object.defineProperty(out, "status", { value: resp.status, enumerable: false });
  }
}

/** A remembered subscription of a Channel. */
export class Subscription {
  constructor(channel, resource, onNotification, onResync) {
    this.channel = channel;
    this.resource = resource;
    this.onNotification = onNotification;
    this.onResync = onResync;
    this.lastSeq = 0; // the seq of the last notification delivered
    this.base = 0; // the channel's seq when the server confirmed it
    this.active = true;
    this.confirmed = false;
  }

  // since is the seq to resume after: the last one delivered, or what the
  // channel had seen when the subscription began; 0 when it cannot tell.
  since() {
    return Math.max(this.lastSeq, this.base);
  }

  _deliver(n, seq) {
    if (!this.active) return;
    if (seq > 0) {
      if (seq <= this.lastSeq) return; // a replay of what was delivered
      this.lastSeq = seq;
    }
    try {
      this.onNotification?.(n);
    } catch (err) {
      this.channel._emit("error", err);
    }
  }

  _resync(recovered) {
    if (!this.onResync) return;
    try {
      this.onResync({ recovered, reload: (query = "") => this.reload(query) });
    } catch (err) {
      this.channel._emit("error", err);
    }
  }

  /** GET of the resource (query such as "?deep=2"), to read the state again. */
  reload(query = "") {
    return this.channel.get(this.resource + query);
  }

  /** Ends the subscription. */
  unsubscribe() {
    return this.channel.unsubscribe(this.resource);
  }
}

/**
 * Follows a resource with a GET kept open over EventSource (read-only
 * pages): url such as "/channel/rooms/r1" (or any call-control path).
 * onState(state, {recovered}) gets the resource's state, first and again
 * whenever the stream could not resume; onNotification(n) gets each
 * notification once, in seq order. The browser's EventSource reconnects by
 * itself and resumes with Last-Event-ID; when it gives up, watch opens a
 * new one with jittered back-off. Returns {close()}.
 */
export function watch(url, { onState, onNotification, onError, EventSource: ES, backoffMin, backoffMax } = {}) {
  const EventSourceImpl = ES ?? globalThis.EventSource;
  if (typeof EventSourceImpl !== "function") throw new Error("reso: no EventSource: pass options.EventSource");
  const min = backoffMin ?? defaults.backoffMin;
  const max = backoffMax ?? defaults.backoffMax;
  let lastSeq = 0;
  let states = 0;
  let es = null;
  let closed = false;
  let attempt = 0;
  let timer = null;
  const open = () => {
    es = new EventSourceImpl(url, { withCredentials: true });
    es.onopen = () => {
      attempt = 0;
    };
    es.onmessage = (ev) => {
      let m;
      try {
        m = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (m && m.notify !== undefined) {
        const seq = typeof m.seq === "number" ? m.seq : 0;
        if (seq > 0 && seq <= lastSeq) return;
        if (seq > lastSeq) lastSeq = seq;
        onNotification?.(m);
        return;
      }
      // A state: the first one, or a stream that could not resume.
      const id = Number(ev.lastEventId);
      if (id > lastSeq) lastSeq = id;
      onState?.(m, { recovered: false, first: states++ === 0 });
    };
    es.onerror = (ev) => {
      onError?.(ev);
      if (es.readyState === 2 && !closed) {
        // Given up: a new stream, after a while.
        const cap = Math.min(max, min * 2 ** Math.min(attempt++, 30));
        timer = setTimeout(open, cap / 2 + Math.random() * (cap / 2));
      }
    };
  };
  open();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      es?.close();
    },
  };
}

function resolveURL(url) {
  if (/^wss?:\/\//.test(url)) return url;
  const loc = globalThis.location;
  if (loc) {
    const u = new URL(url, loc.href);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    return u.href;
  }
  if (/^https?:\/\//.test(url)) return url.replace(/^http/, "ws");
  throw new Error(`reso: ${url}: want a ws:// or wss:// URL`);
}

// httpBase returns the origin of the HTTP doors for a WebSocket URL.
function httpBase(wsURL) {
  const u = new URL(wsURL);
  u.protocol = u.protocol === "wss:" ? "https:" : "http:";
  return u.origin;
}

export default Channel;
