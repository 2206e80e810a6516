// The chat of examples/chat: rooms with a message history (persistent
// resources), who is online (transient resources, gone with their
// connection) and typing notices (NOTIFY), on reso's channel through
// reso.js, which the server hands every app it hosts at ./reso.js.
//
// In the tree:
//   /chat/rooms/<room>                  {"name"}                persistent
//   /chat/rooms/<room>/messages/<id>    {"from", "text", "at"}  persistent, POSTed
//   /chat/rooms/<room>/online/<key>     {"name"}                transient: this page's connection
// and NOTIFY /chat/rooms/<room>/online {"typing": name, "key"} while someone types.

import { Channel } from "./reso.js";

const ROOMS = "/chat/rooms";
const params = new URLSearchParams(location.search);
const name = clean(params.get("name") || localStorage.getItem("reso-chat-name") || "guest-" + rand()) || "guest";
localStorage.setItem("reso-chat-name", name);
const key = name + "-" + rand(); // this page among the name's pages
let room = clean(params.get("room") || "lobby") || "lobby";

const $ = (id) => document.getElementById(id);
const ch = new Channel("/channel");

const rooms = new Set();
let messages = new Map(); // id -> {from, text, at}, in creation order
let online = new Map(); // key -> name
let typingTimer = null;
let lastTyping = 0;
let opened = false;

// clean keeps what a path segment may hold, in a form anyone can type.
function clean(s) {
  return String(s).replace(/[^A-Za-z0-9_-]/g, "").slice(0, 64);
}

function rand() {
  return Math.random().toString(36).slice(2, 8);
}

const paths = () => ({
  room: `${ROOMS}/${room}`,
  messages: `${ROOMS}/${room}/messages`,
  online: `${ROOMS}/${room}/online`,
  me: `${ROOMS}/${room}/online/${key}`,
});

// --- rendering (text only: nothing from the channel becomes HTML) ---

function renderRooms() {
  const ul = $("rooms");
  ul.replaceChildren(
    ...[...rooms].sort().map((r) => {
      const li = document.createElement("li");
      li.textContent = "#" + r;
      if (r === room) li.className = "current";
      li.addEventListener("click", () => join(r));
      return li;
    }),
  );
}

function renderMessages() {
  $("messages").replaceChildren(
    ...[...messages.values()].map((m) => {
      const li = document.createElement("li");
      const from = document.createElement("span");
      from.className = "from";
      from.textContent = m.from;
      li.append(from, document.createTextNode(m.text));
      return li;
    }),
  );
}

function renderOnline() {
  $("online").replaceChildren(
    ...[...new Set(online.values())].sort().map((n) => {
      const li = document.createElement("li");
      li.textContent = n;
      return li;
    }),
  );
}

function problem(text) {
  $("problem").textContent = text;
}

// --- the tree ---

function addMessage(id, e) {
  if (!e || typeof e.text !== "string" || messages.has(id)) return;
  messages.set(id, { from: String(e.from ?? "?"), text: e.text, at: e.at });
  renderMessages();
}

// loadMessages reads the history; what is already shown stays once.
async function loadMessages(reload) {
  let list = [];
  try {
    list = (await reload("?deep=2")).entity;
  } catch (err) {
    if (err.reason !== "not found") throw err;
  }
  const next = new Map();
  for (const c of list) {
    if (c.entity && typeof c.entity.text === "string") {
      next.set(c.rid, { from: String(c.entity.from ?? "?"), text: c.entity.text, at: c.entity.at });
    }
  }
  for (const [id, m] of messages) if (!next.has(id)) next.set(id, m);
  messages = next;
  renderMessages();
}

async function loadOnline(reload) {
  let list = [];
  try {
    list = (await reload("?deep=2")).entity;
  } catch (err) {
    if (err.reason !== "not found") throw err;
  }
  online = new Map(list.filter((c) => c.entity).map((c) => [c.rid, String(c.entity.name)]));
  online.set(key, name);
  renderOnline();
}

function onMessage(n) {
  if (n.notify === "UPDATE" && n.create) addMessage(n.create, n.entity);
  else if (n.notify === "UPDATE" && n.delete && messages.delete(n.delete)) renderMessages();
}

function onOnline(n) {
  if (n.notify === "UPDATE" && n.update && n.entity) online.set(n.update, String(n.entity.name));
  else if (n.notify === "UPDATE" && n.delete) online.delete(n.delete);
  else if (n.notify === "NOTIFY" && n.data && n.data.key !== key && typeof n.data.typing === "string") {
    $("typing").textContent = `${n.data.typing} is typing…`;
    clearTimeout(typingTimer);
    typingTimer = setTimeout(() => ($("typing").textContent = ""), 3000);
  }
  renderOnline();
}

// resync reads the state again when the server could not replay what a
// subscription missed (a restart, a long absence).
const resync = (load) => (r) => {
  if (!r.recovered) load(r.reload).catch((err) => problem("reloading: " + err.message));
};

async function join(r) {
  const old = paths();
  if (opened && r !== room) {
    await Promise.allSettled([ch.unsubscribe(old.messages), ch.unsubscribe(old.online), ch.delete(old.me)]);
  }
  room = r;
  messages = new Map();
  online = new Map();
  renderMessages();
  renderRooms();
  $("room-title").textContent = "#" + room;
  const p = paths();
  await ensureRoom(room);
  const m = await ch.subscribe(p.messages, onMessage, { onResync: resync(loadMessages) });
  const o = await ch.subscribe(p.online, onOnline, { onResync: resync(loadOnline) });
  await loadMessages((q) => m.reload(q));
  await ch.put(p.me, { name }); // transient: it goes with this connection
  await loadOnline((q) => o.reload(q));
}

async function ensureRoom(r) {
  try {
    await ch.get(`${ROOMS}/${r}`);
  } catch (err) {
    if (err.reason !== "not found") throw err;
    await ch.put(`${ROOMS}/${r}`, { name: r }, { persistent: true });
  }
}

async function send(text) {
  text = String(text).trim();
  if (!text) return false;
  await ch.post(paths().messages, { from: name, text, at: Date.now() }, { persistent: true });
  return true;
}

function typing() {
  const now = Date.now();
  if (now - lastTyping < 2000) return;
  lastTyping = now;
  // "no subscriber" when alone: nothing to tell anyone.
  ch.notify(paths().online, { typing: name, key }).catch(() => {});
}

// --- wiring ---

ch.on("state", (s) => {
  $("status").textContent = s === "open" ? `connected as ${name}` : s;
  $("status").className = "status " + s;
  if (s === "open" && opened) {
    // Back after a drop: this page's presence went with the old connection.
    ch.put(paths().me, { name }).catch((err) => problem(err.message));
  }
});

$("send").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const input = $("text");
  send(input.value).then(
    (sent) => {
      if (sent) input.value = "";
      problem("");
    },
    (err) => problem(`not sent (${err.reason}); try again`),
  );
});
$("text").addEventListener("input", typing);
$("new-room").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const r = clean($("room-name").value);
  $("room-name").value = "";
  if (r) join(r).catch((err) => problem(err.message));
});

async function start() {
  await ch.opened();
  await ch.subscribe(ROOMS, (n) => {
    if (n.notify === "UPDATE" && (n.create || n.update)) {
      rooms.add(n.create || n.update);
      renderRooms();
    }
  });
  await join(room);
  opened = true;
  const list = await ch.get(ROOMS);
  for (const r of Array.isArray(list.entity) ? list.entity : []) rooms.add(r);
  renderRooms();
}

// For the page's users and its tests.
window.chat = {
  name,
  state: () => ch.state,
  ready: false,
  room: () => room,
  messages: () => [...messages.values()].map((m) => `${m.from}: ${m.text}`),
  online: () => [...new Set(online.values())].sort(),
  typingText: () => $("typing").textContent,
  send,
  typing: () => {
    lastTyping = 0;
    typing();
  },
};

start().then(
  () => (window.chat.ready = true),
  (err) => problem("starting: " + err.message),
);
