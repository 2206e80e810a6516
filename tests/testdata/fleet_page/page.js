// The page of TestFleetBrowser and TestFleetBrowserURLs
// (tests/fleet_browser_test.go): start(urls) opens reso.js's Channel to
// urls (the page's own /channel in index.html, through main.js), with
// short back-offs so that a test does not wait long for a reconnect.
// window.fleet keeps the page's own record of what it received; the test
// reads it.
import { Channel, watch } from "./reso.js";

// start opens the Channel to urls (one URL or a list) and makes
// window.fleet; it returns true.
export function start(urls) {
  const ch = new Channel(urls, { backoffMin: 20, backoffMax: 200, connectTimeout: 2000 });

  const fleet = {
    ch,
    ready: false, // the first connection opened
    notes: [], // every notification delivered to a subscription, in order
    resyncs: [], // recovered of each resync after a reconnect
    states: [], // every state the Channel went through
    errors: [], // what the Channel reported as an error

    // subscribe subscribes to room and records what it delivers.
    async subscribe(room) {
      await ch.subscribe(room, (n) => fleet.notes.push(n), {
        onResync: (r) => fleet.resyncs.push(r.recovered),
      });
      return true;
    },

    // post creates a persistent child {text} of room.
    async post(room, text) {
      await ch.post(room, { text }, { persistent: true });
      return true;
    },

    // watched is the record of watch: each state (first, and the state)
    // and each notification, in order.
    watched: { states: [], notes: [], errors: 0 },

    // watch follows url with reso.js's watch (a GET kept open over
    // EventSource) and records what it delivers.
    watch(url) {
      const w = fleet.watched;
      watch(url, {
        onState: (s, info) => w.states.push({ first: info.first, state: s }),
        onNotification: (n) => w.notes.push(n),
        onError: () => w.errors++,
        backoffMin: 20,
        backoffMax: 200,
      });
      return true;
    },

    // texts returns the text of each notification received, in order.
    texts() {
      return fleet.notes.map((n) => n.entity?.text);
    },
  };

  ch.on("state", (s) => fleet.states.push(s));
  ch.on("error", (err) => fleet.errors.push(String(err?.message ?? err)));
  ch.opened().then(() => {
    fleet.ready = true;
  });
  window.fleet = fleet;
  return true;
}
