// The reso console: browses the channel tree, shows notifications as they
// arrive and changes resources, over the browser's own WebSocket to
// /channel (docs/channel.md). Plain JavaScript, no framework, no build
// step. Data from the server is only ever put into the page with
// textContent, never as HTML.
"use strict";

(function () {
  const LOG_MAX = 200;          // notifications kept in the log
  const REPLY_TIMEOUT = 15000;  // ms to wait for a reply
  const BACKOFF_MIN = 500;      // ms before the first reconnect
  const BACKOFF_MAX = 15000;    // ms between reconnects at most

  const $ = (id) => document.getElementById(id);
  const el = {
    status: $("status"), crumbs: $("crumbs"), gotoForm: $("goto"), gotoPath: $("goto-path"),
    tree: $("tree"), treeNote: $("tree-note"), resourcePath: $("resource-path"), entity: $("entity"),
    putForm: $("put-form"), putPath: $("put-path"), putEntity: $("put-entity"), putPersistent: $("put-persistent"),
    postForm: $("post-form"), postPath: $("post-path"), postId: $("post-id"), postEntity: $("post-entity"),
    postPersistent: $("post-persistent"), deleteForm: $("delete-form"), deletePath: $("delete-path"),
    result: $("result"), log: $("log"), clearLog: $("clear-log"),
  };

  // Content-Security-Policy violations seen by the page, for the tests.
  const violations = [];
  document.addEventListener("securitypolicyviolation", (ev) => {
    violations.push(ev.violatedDirective + " " + ev.blockedURI);
  });
  // The page's hooks for tests and the browser's developer console:
  // violations, the number of connections opened so far, and drop(), which
  // closes the WebSocket as a lost network would (the page reconnects).
  const hooks = { violations, connections: 0, drop: () => { if (ws) ws.close(4000, "dropped"); } };
  window.resoConsole = hooks;

  let ws = null;
  let nextId = 1;
  const pending = new Map();   // msg_id -> {resolve, reject, timer}
  let current = null;          // the path browsed
  let subscribed = null;       // the path subscribed on this connection
  let lastSeq = 0;             // the newest seq seen of the path browsed, for replay on reconnect
  let backoff = BACKOFF_MIN;
  let stable = 0;              // the timer that resets backoff
  let refreshTimer = 0;

  // ---- paths

  function normalize(p) {
    p = String(p || "").trim();
    if (!p.startsWith("/")) p = "/" + p;
    p = p.replace(/\/+/g, "/");
    if (p.length > 1 && p.endsWith("/")) p = p.slice(0, -1);
    return p;
  }
  function join(parent, id) { return parent === "/" ? "/" + id : parent + "/" + id; }
  function segments(p) { return p === "/" ? [] : p.slice(1).split("/"); }
  function pathFromHash() {
    let h = location.hash.slice(1);
    try { h = decodeURIComponent(h); } catch (e) { /* keep it as it is */ }
    return normalize(h || "/");
  }

  // ---- the connection

  function setStatus(state, text) {
    el.status.dataset.state = state;
    el.status.textContent = text;
  }

  function connect() {
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/channel";
    setStatus("connecting", "connecting…");
    let sock;
    try {
      sock = new WebSocket(url);
    } catch (e) {
      reconnectLater();
      return;
    }
    ws = sock;
    subscribed = null;
    sock.onopen = () => {
      hooks.connections++;
      // The delay starts over once a connection has lasted a while, not
      // at once: a server that accepts and drops at once is not hammered.
      stable = setTimeout(() => { backoff = BACKOFF_MIN; }, 5000);
      setStatus("open", "connected");
      subscribe(current, lastSeq);
      refresh();
    };
    sock.onmessage = (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch (e) { return; }
      if (m === null || typeof m !== "object") return;
      if (m.msg_id !== undefined && pending.has(m.msg_id)) {
        const p = pending.get(m.msg_id);
        pending.delete(m.msg_id);
        clearTimeout(p.timer);
        p.resolve(m);
        return;
      }
      if (typeof m.notify === "string") notified(m);
    };
    sock.onclose = (ev) => {
      if (ws !== sock) return;
      clearTimeout(stable);
      ws = null;
      subscribed = null;
      for (const [, p] of pending) { clearTimeout(p.timer); p.reject(new Error("connection closed")); }
      pending.clear();
      reconnectLater(ev.code);
    };
  }

  function reconnectLater(code) {
    const delay = Math.round(backoff * (0.75 + Math.random() * 0.5));
    backoff = Math.min(backoff * 2, BACKOFF_MAX);
    setStatus("closed", "disconnected" + (code ? " (" + code + ")" : "") + ", retrying in " + Math.ceil(delay / 1000) + " s");
    setTimeout(connect, delay);
  }

  // send sends a message and resolves with its reply.
  function send(msg) {
    return new Promise((resolve, reject) => {
      if (!ws || ws.readyState !== WebSocket.OPEN) {
        reject(new Error("not connected"));
        return;
      }
      const id = "console-" + nextId++;
      msg.msg_id = id;
      const timer = setTimeout(() => { pending.delete(id); reject(new Error("no reply")); }, REPLY_TIMEOUT);
      pending.set(id, { resolve, reject, timer });
      ws.send(JSON.stringify(msg));
    });
  }

  function subscribe(path, since) {
    if (!ws || ws.readyState !== WebSocket.OPEN || path === null) return;
    const old = subscribed;
    subscribed = path;
    if (old !== null && old !== path) send({ method: "UNSUBSCRIBE", resource: old }).catch(() => {});
    const msg = { method: "SUBSCRIBE", resource: path };
    if (since > 0) msg.since = since;
    send(msg).then((r) => {
      if (r.code !== "success") note("bad", "SUBSCRIBE " + path + ": " + r.reason);
      else if (r.recovered === false) refresh();
    }, () => {});
  }

  // ---- browsing

  function browse(path) {
    path = normalize(path);
    if (location.hash.slice(1) !== encodeURI(path)) history.replaceState(null, "", "#" + encodeURI(path));
    if (path === current) return;
    current = path;
    lastSeq = 0; // nothing seen of this path yet: a reconnect reads it afresh
    el.gotoPath.value = path;
    el.putPath.value = path;
    el.postPath.value = path;
    el.deletePath.value = path;
    renderCrumbs();
    subscribe(path, 0);
    refresh(true);
  }

  function renderCrumbs() {
    el.crumbs.replaceChildren();
    const parts = segments(current);
    const add = (label, path, last) => {
      const li = document.createElement("li");
      if (last) {
        const span = document.createElement("span");
        span.textContent = label;
        span.setAttribute("aria-current", "location");
        li.append(span);
      } else {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "link";
        b.textContent = label;
        b.addEventListener("click", () => browse(path));
        li.append(b);
      }
      el.crumbs.append(li);
    };
    add("(root)", "/", parts.length === 0);
    let p = "";
    parts.forEach((s, i) => { p += "/" + s; add(s, p, i === parts.length - 1); });
    el.resourcePath.textContent = current;
  }

  // refresh reads the children and the entity of the path browsed again.
  function refresh(fill) {
    if (!ws || ws.readyState !== WebSocket.OPEN || current === null) return;
    const path = current;
    send({ method: "GET", resource: path + "?deep=1" }).then((r) => {
      if (path !== current) return;
      el.tree.replaceChildren();
      if (r.code !== "success") {
        el.treeNote.textContent = r.reason === "not found" ? "no children" : r.reason;
        return;
      }
      const ids = Array.isArray(r.entity) ? r.entity : [];
      el.treeNote.textContent = ids.length === 0 ? "no children" : "";
      for (const id of ids) {
        const li = document.createElement("li");
        const b = document.createElement("button");
        b.type = "button";
        b.className = "link";
        b.textContent = String(id);
        b.dataset.id = String(id);
        b.addEventListener("click", () => browse(join(path, String(id))));
        li.append(b);
        el.tree.append(li);
      }
    }, (e) => { el.treeNote.textContent = e.message; });
    send({ method: "GET", resource: path }).then((r) => {
      if (path !== current) return;
      if (r.code !== "success") {
        el.entity.textContent = r.reason === "not found" ? "(no resource)" : "(" + r.reason + ")";
        el.entity.dataset.found = "false";
        return;
      }
      const text = JSON.stringify(r.entity, null, 2);
      el.entity.textContent = text;
      el.entity.dataset.found = "true";
      if (fill && text !== undefined) el.putEntity.value = text;
    }, (e) => { el.entity.textContent = "(" + e.message + ")"; });
  }

  function refreshSoon() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => refresh(false), 50);
  }

  // ---- notifications

  // childChange returns the change an UPDATE notification tells of, which
  // its key names ("create", "update" or "delete"), and the child's id.
  function childChange(n) {
    for (const key of ["create", "update", "delete"]) {
      if (n[key] !== undefined) return { change: key, child: String(n[key]) };
    }
    return null;
  }

  function notified(n) {
    if (n.resource === current && typeof n.seq === "number" && n.seq > lastSeq) lastSeq = n.seq;
    const cc = n.notify === "UPDATE" ? childChange(n) : null;
    const li = document.createElement("li");
    li.dataset.notify = n.notify;
    li.dataset.resource = String(n.resource);
    if (cc) { li.dataset.change = cc.change; li.dataset.child = cc.child; }
    const time = document.createElement("span");
    time.className = "time";
    time.textContent = new Date().toLocaleTimeString();
    const kind = document.createElement("span");
    kind.className = "kind kind-" + n.notify;
    kind.textContent = n.notify + (cc ? " " + cc.change : "");
    const what = document.createElement("span");
    const body = n.notify === "NOTIFY" ? n.data : n.entity;
    let json = JSON.stringify(body);
    if (json !== undefined && json.length > 300) json = json.slice(0, 300) + "…";
    what.textContent = (cc ? join(String(n.resource), cc.child) : String(n.resource)) +
      " " + (json === undefined ? "" : json) + (n.seq !== undefined ? "  #" + n.seq : "");
    li.append(time, kind, what);
    el.log.prepend(li);
    while (el.log.childElementCount > LOG_MAX) el.log.lastElementChild.remove();
    if (n.resource === current) refreshSoon();
  }

  // ---- the forms

  function note(cls, text) {
    el.result.className = "note " + cls;
    el.result.textContent = text;
  }

  function parseEntity(text) {
    text = text.trim();
    if (text === "") return { ok: true, value: undefined };
    try { return { ok: true, value: JSON.parse(text) }; } catch (e) { return { ok: false, error: e.message }; }
  }

  function act(label, msg) {
    note("", label + "…");
    send(msg).then((r) => {
      if (r.code === "success") note("ok", label + ": done" + (r.id !== undefined ? ", id " + r.id : ""));
      else note("bad", label + ": " + r.reason);
      refreshSoon();
    }, (e) => note("bad", label + ": " + e.message));
  }

  el.gotoForm.addEventListener("submit", (ev) => { ev.preventDefault(); browse(el.gotoPath.value); });
  el.putForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const path = normalize(el.putPath.value);
    const ent = parseEntity(el.putEntity.value);
    if (!ent.ok) { note("bad", "PUT " + path + ": the entity is not JSON: " + ent.error); return; }
    const msg = { method: "PUT", resource: path, persistent: el.putPersistent.checked };
    if (ent.value !== undefined) msg.entity = ent.value;
    act("PUT " + path, msg);
  });
  el.postForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const path = normalize(el.postPath.value);
    const ent = parseEntity(el.postEntity.value);
    if (!ent.ok) { note("bad", "POST " + path + ": the entity is not JSON: " + ent.error); return; }
    const msg = { method: "POST", resource: path, persistent: el.postPersistent.checked };
    if (ent.value !== undefined) msg.entity = ent.value;
    const id = el.postId.value.trim();
    if (id !== "") msg.id = id;
    act("POST " + path, msg);
  });
  el.deleteForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const path = normalize(el.deletePath.value);
    act("DELETE " + path, { method: "DELETE", resource: path });
  });
  el.clearLog.addEventListener("click", () => el.log.replaceChildren());
  window.addEventListener("hashchange", () => browse(pathFromHash()));

  browse(pathFromHash());
  connect();
})();
