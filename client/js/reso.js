// reso.js: the JavaScript client of reso's resource channel
// (docs/channel.md, docs/clients.md). An ES module without dependencies
// and without a build step, for browsers and Node 20 or later.
//
// A Channel keeps one WebSocket to GET /channel (of one URL, or of the
// next one of a list when one fails). Every request returns a promise
// settled by the reply with the same msg_id, or by its timeout or signal.
// Subscriptions are remembered: after a dropped connection the Channel
// reconnects with jittered, bounded back-off, subscribes again with
// "since" (and the history's epoch) set to the last seq it delivered, and
// tells the app whether the server recovered what it missed. Each
// notification reaches the app once, in seq order. A handshake refused
// with 401 or 403 ends the Channel (state "unauthorized").

/** The error of a request that did not succeed. */
export class ChannelError extends Error {
  /**
   * @param {string} code "failed" (the server refused: see reason),
   *   "disconnected" (no connection when the request was made),
   *   "connection lost" (the connection ended before the reply),
   *   "queue full", "timeout" (no reply within the request's timeout),
   *   "aborted" (the request's signal aborted), "closed" (the Channel was
   *   closed), "unauthorized" (the server refused the credentials of a
   *   handshake: see status), "subscribed" (a second subscribe of the same
   *   resource), or "http" (an HTTP request failed: see status)
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
  requestTimeout: 30000, // ms a request may wait for its reply (0: no limit)
  probe: true, // after a failed handshake, learn its status with a GET of the same URL
});

const noop = () => {};

// provenAfter is the least time (ms) a connection that got no frame from
// the server must have stayed open to count as proven (see _dial).
const provenAfter = 5000;

/**
 * A connection to reso's channel that reconnects and recovers by itself.
 */
export class Channel {
  /**
   * @param {string|string[]} urls the WebSocket URL, e.g.
   *   "wss://example.org/channel", or a list of them (the nodes of a
   *   fleet): the Channel starts at a random one and moves to the next
   *   when one fails; in a browser a path such as "/channel" is resolved
   *   against the page
   * @param {object} [options] see docs/clients.md
   */
  constructor(urls, options = {}) {
    const list = (Array.isArray(urls) ? urls : [urls]).map(resolveURL);
    if (list.length === 0) throw new Error("reso: no URL");
    this.urls = Object.freeze(list);
    this._urlIndex = Math.floor(Math.random() * list.length);
    this.url = list[this._urlIndex]; // the URL of the current (or next) attempt
    this.options = { ...defaults, ...options };
    this.WebSocket = options.WebSocket ?? globalThis.WebSocket;
    if (typeof this.WebSocket !== "function") {
      throw new Error(
        "reso: no WebSocket: pass options.WebSocket (e.g. the ws package), or run Node 20 with --experimental-websocket",
      );
    }
    this.state = "connecting";
    this.seq = 0; // the greatest seq seen on any connection, in epoch this.epoch
    this.epoch = undefined; // the history's epoch of the last SUBSCRIBE reply
    this.error = null; // why the channel ended: a ChannelError ("closed", "unauthorized")
    this._nextID = 1;
    this._pending = new Map(); // msg_id -> entry
    this._queue = []; // entries waiting for a connection
    this._subs = new Map(); // resource -> Subscription
    this._listeners = new Map();
    this._attempt = 0; // failed attempts since a connection proved itself: the back-off's exponent
    this._timer = null; // the back-off timer
    this._att = null; // the current attempt or connection
    this._ws = null; // its WebSocket once open
    this._probe = null; // the AbortController of the probe under way (one at a time)
    this._connect();
  }

  /**
   * Calls fn(...) on each event of type: "state" (the new state:
   * "connecting", "open", "reconnecting", "closed", "unauthorized") and
   * "error" (an Error the app may log). Returns a function that removes
   * the listener.
   */
  on(type, fn) {
    if (!this._listeners.has(type)) this._listeners.set(type, new Set());
    this._listeners.get(type).add(fn);
    return () => this._listeners.get(type)?.delete(fn);
  }

  /** Resolves when the connection is open (at once when it is); rejects once the channel ended. */
  opened() {
    if (this.state === "open") return Promise.resolve();
    if (this.error) return Promise.reject(this.error);
    return new Promise((resolve, reject) => {
      const off = this.on("state", (s) => {
        if (s === "open") {
          off();
          resolve();
        } else if (this.error) {
          off();
          reject(this.error);
        }
      });
    });
  }

  /**
   * Sends a message (an object with method and resource; msg_id is added)
   * and resolves with the success reply, or rejects with a ChannelError.
   * opts.timeout (ms, default options.requestTimeout; 0: none) bounds the
   * wait from the call to the reply, queue included; opts.signal (an
   * AbortSignal) gives the request up.
   */
  request(msg, opts = {}) {
    if (this.error) return Promise.reject(this.error);
    if (opts.signal?.aborted) return Promise.reject(abortedError());
    return new Promise((resolve, reject) => {
      const entry = this._entry({ ...msg }, resolve, reject, opts);
      if (this.state === "open") {
        this._send(entry);
      } else if (this._queue.length < this.options.queue) {
        this._queue.push(entry);
      } else if (this.options.queue > 0) {
        entry.reject(new ChannelError("queue full", `${this.options.queue} requests already wait for the connection`));
      } else {
        entry.reject(new ChannelError("disconnected", "not connected; nothing was sent"));
      }
    });
  }

  /** GET: resolves with the reply ({resource, type, entity}); opts: timeout, signal. */
  get(resource, opts = {}) {
    return this.request({ method: "GET", resource }, opts);
  }

  /** PUT entity at resource; opts: persistent, type, partial, timeout, signal. */
  put(resource, entity, opts = {}) {
    const [fields, call] = split(opts);
    return this.request({ method: "PUT", resource, entity, ...fields }, call);
  }

  /** POST entity as a new child of resource; opts: id, persistent, type, timeout, signal. Resolves with the reply ({id}). */
  post(resource, entity, opts = {}) {
    const [fields, call] = split(opts);
    return this.request({ method: "POST", resource, entity, ...fields }, call);
  }

  /** DELETE resource; opts: timeout, signal. */
  delete(resource, opts = {}) {
    return this.request({ method: "DELETE", resource }, opts);
  }

  /** NOTIFY: passes data to the subscribers of resource; resolves with the reply ({sent_count}); opts: timeout, signal. */
  notify(resource, data, opts = {}) {
    return this.request({ method: "NOTIFY", resource, data }, opts);
  }

  /** RULES: reads (without change) or changes ({rules, group, owner}) the rules of resource; opts: timeout, signal. */
  rules(resource, change = {}, opts = {}) {
    return this.request({ method: "RULES", resource, ...change }, opts);
  }

  /**
   * SUBSCRIBE to resource; onNotification(n) gets each notification once,
   * in seq order. opts.onResync({recovered, reload}) is called after each
   * reconnect once the subscription is back: recovered tells whether every
   * missed notification was delivered; when it is false the app must read
   * the state again, for which reload(query) does a GET of the resource
   * (query such as "?deep=2"). opts.onEnd(err) is called once when the
   * subscription ends (err null after unsubscribe). Resolves with the
   * Subscription once the server confirmed it, within opts.timeout
   * (default options.requestTimeout) and until opts.signal aborts. A
   * subscription made while disconnected waits for the connection.
   */
  subscribe(resource, onNotification, opts = {}) {
    if (this.error) return Promise.reject(this.error);
    if (this._subs.has(resource)) {
      return Promise.reject(new ChannelError("subscribed", `already subscribed to ${resource}`));
    }
    if (opts.signal?.aborted) return Promise.reject(abortedError());
    const sub = new Subscription(this, resource, onNotification, opts);
    this._subs.set(resource, sub);
    const p = new Promise((resolve, reject) => {
      sub._confirm = { resolve, reject };
    });
    // The confirmation's bounds: a subscription not confirmed in time ends.
    const timeout = opts.timeout ?? this.options.requestTimeout;
    const giveUp = (err) => {
      if (sub.confirmed || !sub.active) return;
      this._subs.delete(resource);
      sub._end(err);
    };
    const timer = timeout > 0 ? setTimeout(() => giveUp(timeoutError(timeout)), timeout) : null;
    const onAbort = () => giveUp(abortedError());
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
    };
    p.then(done, done);
    if (this.state === "open") this._subscribe(sub);
    return p;
  }

  /** UNSUBSCRIBE from resource; its notifications stop at once. opts: timeout, signal. */
  async unsubscribe(resource, opts = {}) {
    const sub = this._subs.get(resource);
    this._subs.delete(resource);
    sub?._end(null);
    if (this.state !== "open") return { code: "success" };
    return this.request({ method: "UNSUBSCRIBE", resource }, opts);
  }

  /**
   * SEND body (an invitation {command, url, id, reason}) to a call-control
   * resource such as "/login/bob@example.org" over HTTP; resolves with the
   * answer ({id}, and status 200 or 202). opts: timeout, signal.
   */
  send(resource, body, opts = {}) {
    return this._http("SEND", resource, body, opts);
  }

  /** CANCEL a waiting message, e.g. "/login/bob@example.org/<id>", over HTTP. opts: timeout, signal. */
  cancel(resource, opts = {}) {
    return this._http("CANCEL", resource, undefined, opts);
  }

  /** Closes the channel for good: pending requests reject with "closed". */
  close() {
    if (this.state === "closed") return;
    this._end("closed", new ChannelError("closed", "the channel is closed"));
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

  // _end ends the channel for good (closed, or unauthorized): no timer,
  // socket or probe is left behind, and everything waiting rejects.
  _end(state, err) {
    clearTimeout(this._timer);
    this._timer = null;
    this._probe?.abort();
    this._probe = null;
    const att = this._att;
    this._att = null;
    this._ws = null;
    if (att) {
      clearTimeout(att.deadline);
      release(att.ws, att.open ? 1000 : undefined);
    }
    this.error = err;
    this._setState(state);
    this._fail(err, true);
    const subs = [...this._subs.values()];
    this._subs.clear();
    for (const sub of subs) sub._end(err);
  }

  // _connect starts an attempt on the current URL. An attempt ends at the
  // first of: open, error, close, connectTimeout; only the first counts.
  // Whatever ends it, the next attempt comes after the back-off (_retry),
  // which nothing else holds up: not a probe (_attemptFailed).
  _connect() {
    this._timer = null;
    if (this.error) return;
    const url = this.urls[this._urlIndex];
    this.url = url;
    const att = { url, headers: this.options.headers, ws: null, open: false, opened: 0, proven: false, deadline: null };
    this._att = att;
    // connectTimeout gives the attempt up only once the runtime has
    // delivered the events that came before it: a busy event loop (a
    // page at work, a process of thousands of Channels after a node's
    // death) runs an overdue timer before the I/O waiting behind it, and
    // would drop a handshake already answered, whose work the server then
    // did for nothing. A timer of 0 runs after that I/O (Node: the next
    // turn of the loop, after its poll phase; browsers: a later task).
    att.deadline = setTimeout(() => {
      att.deadline = setTimeout(() => this._attemptFailed(att, null, true), 0);
    }, this.options.connectTimeout);
    const { getHeaders } = this.options;
    if (!getHeaders) {
      this._dial(att, url, this.options.headers);
      return;
    }
    // Fresh credentials before each attempt.
    Promise.resolve()
      .then(() => getHeaders())
      .then(
        (h) => {
          if (this._att !== att) return;
          att.headers = { ...(this.options.headers ?? {}), ...(h ?? {}) };
          this._dial(att, url, att.headers);
        },
        (err) => {
          if (this._att !== att) return;
          this._emit("error", err);
          this._attemptFailed(att, null, false);
        },
      );
  }

  _dial(att, url, headers) {
    let ws;
    try {
      ws = headers && Object.keys(headers).length > 0 ? new this.WebSocket(url, { headers }) : new this.WebSocket(url);
    } catch (err) {
      this._emit("error", err);
      this._attemptFailed(att, null, false);
      return;
    }
    att.ws = ws;
    ws.onopen = () => {
      if (this._att !== att) return;
      clearTimeout(att.deadline);
      att.open = true;
      att.opened = Date.now();
      this._ws = ws;
      // The connection answers the credentials: a probe has nothing to tell.
      this._probe?.abort();
      this._probe = null;
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
      if (this._att !== att || !att.open) return;
      // A frame from the server: the connection proved itself, and the
      // back-off starts again from backoffMin.
      att.proven = true;
      this._attempt = 0;
      this._frame(ev.data);
    };
    // Node 20's WebSocket reports a failed handshake with error and no
    // close; browsers and ws send both: the first one ends it.
    ws.onerror = ws.onclose = (ev) => {
      if (this._att !== att) return;
      if (!att.open) {
        this._attemptFailed(att, ev, false);
        return;
      }
      this._att = null;
      this._ws = null;
      release(ws);
      this._fail(new ChannelError("connection lost", "the connection ended before the reply; the request may or may not have been applied"));
      // A connection closed before any frame came (an overloaded node's
      // 1013 Try Again Later right after the upgrade, a balancer that
      // upgrades and drops) counts as a failed attempt: the back-off
      // grows. One open for backoffMax (at least provenAfter) proved
      // itself as a frame does.
      if (!att.proven && Date.now() - att.opened >= Math.max(this.options.backoffMax, provenAfter)) this._attempt = 0;
      this._next();
      this._retry();
    };
  }

  // _attemptFailed ends an attempt that did not open. A handshake the
  // server refused with 401 or 403 ends the channel ("unauthorized");
  // anything else (503, a reset, a close) moves to the next URL after the
  // back-off. When the WebSocket does not tell the status, a probe learns
  // it alongside the back-off, without holding the next attempt up.
  _attemptFailed(att, ev, timedOut) {
    if (this._att !== att) return;
    this._att = null;
    clearTimeout(att.deadline);
    release(att.ws);
    this._next();
    const status = timedOut || att.ws === null ? undefined : handshakeStatus(ev);
    if (status === 401 || status === 403) {
      this._unauthorized(status);
      return;
    }
    if (status === undefined && !timedOut && att.ws !== null && this.options.probe) this._startProbe(att);
    this._retry();
  }

  _unauthorized(status) {
    if (this.error) return;
    const err = new ChannelError(
      "unauthorized",
      status === 401 ? "the server refused the credentials (401 Unauthorized)" : "the server refused the connection (403 Forbidden)",
      { status },
    );
    this._end("unauthorized", err);
    this._emit("error", err);
  }

  // _startProbe learns the status of the failed handshake att, unless a
  // probe is under way already (it tells the same, and a server that
  // never answers holds one probe, not one per attempt). A 401 or 403
  // ends the channel, unless a connection opened meanwhile (it aborts
  // the probe).
  _startProbe(att) {
    if (this._probe) return;
    const ctl = new AbortController();
    this._probe = ctl;
    this._learnStatus(att, ctl).then((status) => {
      if (this._probe !== ctl) return;
      this._probe = null;
      if (status === 401 || status === 403) this._unauthorized(status);
    });
  }

  // _learnStatus asks the URL of a failed handshake for its status with a
  // GET over HTTP (the attempt's headers), since WebSockets other than ws
  // do not tell it; undefined when it cannot be learnt within
  // connectTimeout, or ctl aborts.
  async _learnStatus(att, ctl) {
    const fetchFn = this.options.fetch ?? globalThis.fetch;
    if (typeof fetchFn !== "function") return undefined;
    const timer = setTimeout(() => ctl.abort(), this.options.connectTimeout);
    try {
      const resp = await fetchFn(httpURL(att.url), {
        method: "GET",
        headers: att.headers ?? {},
        credentials: "include",
        signal: ctl.signal,
      });
      resp.body?.cancel?.().catch?.(noop);
      return resp.status;
    } catch {
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  // _headers returns options.headers with what options.getHeaders gives.
  async _headers() {
    const h = { ...(this.options.headers ?? {}) };
    if (this.options.getHeaders) Object.assign(h, (await this.options.getHeaders()) ?? {});
    return h;
  }

  // _next moves to the next URL of the list.
  _next() {
    this._urlIndex = (this._urlIndex + 1) % this.urls.length;
    this.url = this.urls[this._urlIndex];
  }

  // _retry schedules the next attempt after a wait drawn between half and
  // all of min(backoffMax, backoffMin × 2^attempt), and counts the attempt.
  _retry() {
    if (this.error) return;
    this._setState("reconnecting");
    if (this.error) return; // closed by a listener of the state
    const o = this.options;
    const cap = Math.min(o.backoffMax, o.backoffMin * 2 ** Math.min(this._attempt, 30));
    this._attempt++;
    const delay = cap / 2 + Math.random() * (cap / 2);
    clearTimeout(this._timer);
    this._timer = setTimeout(() => this._connect(), delay);
  }

  // _entry makes a request's entry: settled once, by its reply, its
  // timeout, its signal or the connection; a settled entry leaves the
  // pending map and the queue.
  _entry(msg, resolve, reject, { timeout = this.options.requestTimeout, signal } = {}) {
    const entry = { msg, id: undefined, timer: null };
    const settle = () => {
      clearTimeout(entry.timer);
      signal?.removeEventListener("abort", onAbort);
      if (entry.id !== undefined) this._pending.delete(entry.id);
      const i = this._queue.indexOf(entry);
      if (i >= 0) this._queue.splice(i, 1);
    };
    const onAbort = () => entry.reject(abortedError());
    entry.resolve = (v) => {
      settle();
      resolve(v);
    };
    entry.reject = (err) => {
      settle();
      reject(err);
    };
    if (timeout > 0) entry.timer = setTimeout(() => entry.reject(timeoutError(timeout)), timeout);
    signal?.addEventListener("abort", onAbort, { once: true });
    return entry;
  }

  // _fail rejects every request waiting for a reply with err, and the
  // queue too when all is true.
  _fail(err, all = false) {
    const pending = [...this._pending.values()];
    this._pending.clear();
    for (const p of pending) p.reject(err);
    if (all) {
      const queued = this._queue;
      this._queue = [];
      for (const q of queued) q.reject(err);
    }
  }

  _send(entry) {
    const id = this._nextID++;
    entry.msg.msg_id = id;
    entry.id = id;
    this._pending.set(id, entry);
    try {
      this._ws.send(JSON.stringify(entry.msg));
    } catch (err) {
      entry.reject(new ChannelError("connection lost", String(err?.message ?? err)));
    }
  }

  _subscribe(sub) {
    const msg = { method: "SUBSCRIBE", resource: sub.resource };
    const ws = this._ws;
    const since = sub.since();
    const resync = sub.confirmed; // a subscription coming back
    if (since > 0) {
      msg.since = since;
      if (sub.epoch !== undefined) msg.epoch = sub.epoch;
    }
    const resolve = (reply) => {
      if (!sub.active) {
        // Given up (timeout, signal) before the reply: not wanted.
        if (this.state === "open" && !this._subs.has(sub.resource)) {
          this.request({ method: "UNSUBSCRIBE", resource: sub.resource }).catch(noop);
        }
        return;
      }
      const epoch = typeof reply.epoch === "string" ? reply.epoch : undefined;
      if (epoch !== undefined && this.epoch !== undefined && epoch !== this.epoch) this.seq = 0; // another history
      if (epoch !== undefined) this.epoch = epoch;
      // Another history than the one the subscription's seqs come from:
      // its seq order starts afresh.
      const reset = epoch !== undefined && sub.epoch !== undefined && epoch !== sub.epoch;
      if (reset) {
        sub.lastSeq = 0;
        sub.base = 0;
      }
      if (epoch !== undefined) sub.epoch = epoch;
      const first = !sub.confirmed;
      sub.confirmed = true;
      if (!sub.base && !reset) sub.base = this.seq;
      if (first) {
        sub._confirm?.resolve(sub);
        sub._confirm = null;
      }
      if (!resync) return;
      const recovered = since > 0 && reply.recovered === true && !reset;
      // Not recovered: the app reads the state again, and the seq order
      // starts afresh (a server without an epoch that lost its history
      // numbers from 1 again).
      if (!recovered) sub.lastSeq = 0;
      sub._resync(recovered);
    };
    const reject = (err) => {
      if (!sub.active) return;
      if (err.code === "failed" && transientRefusal(err.reply?.reason)) {
        // The node cannot serve it now (a fleet node without its log,
        // a server shutting down): the subscription stays, and the
        // connection moves on to the next URL after the back-off, which
        // subscribes again with since.
        if (this._ws === ws) ws.close();
        return;
      }
      if (err.code === "failed") {
        // The server refused it (forbidden, ...): it ends.
        this._subs.delete(sub.resource);
        const told = sub._confirm !== null;
        sub._end(err);
        if (!told) this._emit("error", err);
      }
      // Lost with the connection: the next connection subscribes again.
    };
    this._send(this._entry(msg, resolve, reject, { timeout: 0 }));
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
    if (!entry) return; // given up (timeout, signal): the reply is dropped
    if (m.code === "success") entry.resolve(m);
    else entry.reject(new ChannelError("failed", m.reason ?? "failed", { reply: m }));
  }

  // _http sends a call-control request over HTTP, with the browser's
  // cookies (credentials: "include") or the headers of the options.
  async _http(method, resource, body, { timeout = this.options.requestTimeout, signal } = {}) {
    if (signal?.aborted) throw abortedError();
    const fetchFn = this.options.fetch ?? globalThis.fetch;
    const base = this.options.httpBase ?? httpBase(this.url);
    const init = { method, headers: await this._headers(), credentials: "include" };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
    const ctl = new AbortController();
    let why = null;
    const onAbort = () => {
      why = abortedError();
      ctl.abort();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const timer =
      timeout > 0
        ? setTimeout(() => {
            why = timeoutError(timeout);
            ctl.abort();
          }, timeout)
        : null;
    init.signal = ctl.signal;
    try {
      const resp = await fetchFn(base + resource, init);
      const text = await resp.text();
      if (!resp.ok) {
        // reso repeats the status line as the body ("404 Not Logged In").
        const reason = text.trim().replace(/^\d{3} /, "") || resp.statusText;
        throw new ChannelError("http", reason, { status: resp.status });
      }
      const out = text ? JSON.parse(text) : {};
      return Object.defineProperty(out, "status", { value: resp.status, enumerable: false });
    } catch (err) {
      throw why ?? err;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }
}

/** A remembered subscription of a Channel. */
export class Subscription {
  constructor(channel, resource, onNotification, opts = {}) {
    this.channel = channel;
    this.resource = resource;
    this.onNotification = onNotification;
    this.onResync = opts.onResync;
    this.onEnd = opts.onEnd;
    this.lastSeq = 0; // the seq of the last notification delivered
    this.base = 0; // the channel's seq when the server confirmed it
    this.epoch = undefined; // the history's epoch of the last reply
    this.active = true;
    this.confirmed = false;
    this.err = null; // why it ended: null while it lasts or after unsubscribe
    this._confirm = null;
    let done;
    /** Resolves once the subscription ended, with err (null after unsubscribe). */
    this.ended = new Promise((resolve) => {
      done = resolve;
    });
    this._done = done;
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
      this.onResync({ recovered, reload: (query = "", opts = {}) => this.reload(query, opts) });
    } catch (err) {
      this.channel._emit("error", err);
    }
  }

  // _end ends the subscription once: err null (unsubscribe) or why.
  _end(err) {
    if (!this.active) return;
    this.active = false;
    this.err = err;
    if (this._confirm) {
      this._confirm.reject(err ?? new ChannelError("closed", "unsubscribed before the server confirmed it"));
      this._confirm = null;
    }
    this._done(err);
    if (!this.onEnd) return;
    try {
      this.onEnd(err);
    } catch (e) {
      this.channel._emit("error", e);
    }
  }

  /** GET of the resource (query such as "?deep=2"), to read the state again; opts: timeout, signal. */
  reload(query = "", opts = {}) {
    return this.channel.get(this.resource + query, opts);
  }

  /** Ends the subscription. */
  unsubscribe(opts = {}) {
    return this.channel.unsubscribe(this.resource, opts);
  }
}

/**
 * Follows a resource with a GET kept open over EventSource (read-only
 * pages): url such as "/channel/rooms/r1" (or any call-control path).
 * onState(state, {recovered}) gets the resource's state, first and again
 * whenever the stream could not resume; onNotification(n) gets each
 * notification once, in seq order. The browser's EventSource reconnects by
 * itself and resumes with Last-Event-ID; when it gives up, watch opens a
 * new one with jittered back-off, which grows with each EventSource given
 * up since a stream proved itself (an event came, or it stayed open for
 * backoffMax, at least 5 s), as the Channel's does. Returns {close()}.
 */
export function watch(url, { onState, onNotification, onError, EventSource: ES, backoffMin, backoffMax } = {}) {
  const EventSourceImpl = ES ?? globalThis.EventSource;
  if (typeof EventSourceImpl !== "function") throw new Error("reso: no EventSource: pass options.EventSource");
  const min = backoffMin ?? defaults.backoffMin;
  const max = backoffMax ?? defaults.backoffMax;
  let lastSeq = 0;
  let lastID = "";
  let states = 0;
  let es = null;
  let closed = false;
  let attempt = 0; // EventSources given up since a stream proved itself: the back-off's exponent
  let opened = 0; // when the stream under way opened (0: none is open)
  let timer = null;
  const open = () => {
    es = new EventSourceImpl(url, { withCredentials: true });
    // An open alone proves nothing (a server that answers and ends the
    // stream at once): an event does, or the stream staying open.
    es.onopen = () => {
      opened = Date.now();
    };
    es.onmessage = (ev) => {
      attempt = 0;
      let m;
      try {
        m = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (m && m.notify !== undefined) {
        lastID = ev.lastEventId;
        const seq = typeof m.seq === "number" ? m.seq : 0;
        if (seq > 0 && seq <= lastSeq) return;
        if (seq > lastSeq) lastSeq = seq;
        onNotification?.(m);
        return;
      }
      // A state: the first one, or a stream that could not resume (the
      // server's history may be another one: ids "<epoch>:<seq>"). What
      // follows it is later than it: the seq order starts at its id, or
      // afresh when it has none of its own.
      lastSeq = ev.lastEventId !== lastID ? seqOfID(ev.lastEventId) : 0;
      lastID = ev.lastEventId;
      onState?.(m, { recovered: false, first: states++ === 0 });
    };
    es.onerror = (ev) => {
      if (opened && Date.now() - opened >= Math.max(max, provenAfter)) attempt = 0;
      opened = 0;
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
    // The back-off's exponent, for the tests.
    get _attempt() {
      return attempt;
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

// seqOfID returns the seq of an event id, "<epoch>:<seq>" or "<seq>".
function seqOfID(id) {
  return Number(String(id ?? "").split(":").at(-1)) || 0;
}

// httpBase returns the origin of the HTTP doors for a WebSocket URL.
function httpBase(wsURL) {
  const u = new URL(wsURL);
  u.protocol = u.protocol === "wss:" ? "https:" : "http:";
  return u.origin;
}

// httpURL returns the http(s) URL of a WebSocket URL.
function httpURL(wsURL) {
  const u = new URL(wsURL);
  u.protocol = u.protocol === "wss:" ? "https:" : "http:";
  return u.href;
}

// split separates a method's options into the message's fields and the
// call's own (timeout, signal).
function split({ timeout, signal, ...fields }) {
  return [fields, { timeout, signal }];
}

function timeoutError(ms) {
  return new ChannelError("timeout", `no reply within ${ms} ms; the request may or may not have been applied`);
}

function abortedError() {
  return new ChannelError("aborted", "the request's signal aborted; it may or may not have been applied");
}

// handshakeStatus returns the HTTP status of a refused handshake when the
// WebSocket tells it (the ws package: "Unexpected server response: 401").
// transientRefusal tells whether a server's reason refusing a SUBSCRIBE
// says the node cannot serve it now rather than never: tried again on
// another connection, not the end of the subscription.
function transientRefusal(reason) {
  return reason === "unavailable" || reason === "closed" || reason === "disconnected";
}

function handshakeStatus(ev) {
  const m = /Unexpected server response: (\d{3})/.exec(String(ev?.message ?? ev?.error?.message ?? ""));
  return m ? Number(m[1]) : undefined;
}

// release lets a WebSocket go: it is closed, and keeps a handler for the
// events that may still come (the ws package throws an error event that
// has no listener).
function release(ws, code) {
  if (!ws) return;
  ws.onopen = ws.onmessage = null;
  ws.onerror = ws.onclose = noop;
  try {
    if (code === undefined) ws.close();
    else ws.close(code);
  } catch {
    // already closing
  }
}

export default Channel;
