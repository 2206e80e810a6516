// Type-checked by tests/js_client_test.go (TestJSClientTypes) with tsc --strict
// against reso.d.ts: how Node code uses reso.js with the ws package, the
// request options, and the errors narrowed by code. It is never run.

import { Channel, ChannelError, type Reply, type State } from "./reso.js";

const ch = new Channel(["ws://a.example/channel", "ws://b.example/channel"], {
  WebSocket: (await import("ws")).WebSocket,
  getHeaders: async () => ({ Cookie: "user_id=1; token=t" }),
  requestTimeout: 5000,
});
const native = new Channel("ws://localhost:8000/channel", { WebSocket: globalThis.WebSocket });
native.close();
ch.on("state", (s: State) => {
  if (s === "unauthorized") console.log(ch.error?.status);
});
const list = await ch.get("/rooms/r1?deep=2", { timeout: 1000, signal: AbortSignal.timeout(2000) });
list.entity.forEach((c: { rid: string }) => console.log(c.rid));
const typed: Reply<{ text: string }[]> = await ch.get<{ text: string }[]>("/rooms/r1?deep=2");
typed.entity?.map((m) => m.text.toUpperCase());
try {
  await ch.put("/rooms/r1", { topic: "t" }, { persistent: true, timeout: 100 });
} catch (err) {
  if (err instanceof ChannelError) {
    if (err.code === "failed") {
      const r: "not found" | "forbidden" | (string & {}) = err.reason;
      console.log(r, err.reply.code);
    } else if (err.code === "http" || err.code === "unauthorized") {
      console.log(err.status.toFixed());
    } else if (err.code === "timeout" || err.code === "subscribed") {
      console.log(err.reason);
    }
  }
}
const sub = await ch.subscribe("/rooms/r1", (n) => console.log(n.entity.text, n.seq), {
  onResync: async ({ recovered, reload }) => {
    if (!recovered) (await reload("?deep=2")).entity.forEach((c: any) => console.log(c));
  },
  onEnd: (err) => console.log(err?.code),
  signal: new AbortController().signal,
});
const why: ChannelError | null = await sub.ended;
console.log(why?.code, sub.err, sub.epoch, sub.active);
ch.close();
