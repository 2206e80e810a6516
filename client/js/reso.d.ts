// Type declarations of reso.js, the JavaScript client of reso's resource
// channel (docs/clients.md).

/**
 * A reply of the server: code "success", msg_id, and the method's fields.
 * E is the type of entity (a GET's resource, a listing's array): any by
 * default, so that `(await ch.get(r)).entity.forEach(...)` compiles; name
 * it for checked code, e.g. `ch.get<Message[]>("/rooms/r1?deep=2")`.
 */
export interface Reply<E = any> {
  msg_id: number;
  code: "success";
  resource?: string;
  type?: string | null;
  entity?: E;
  id?: string;
  sent_count?: number;
  recovered?: boolean;
  /** SUBSCRIBE: the identity of the server's history (docs/channel.md, Replay after a reconnect). */
  epoch?: string;
  rules?: string;
  group?: string[] | null;
  owner?: string;
  effective?: string;
  [field: string]: unknown;
}

/** A notification: PUT, POST, DELETE, UPDATE or NOTIFY (docs/channel.md#notifications). */
export interface Notification<E = any> {
  notify: "PUT" | "POST" | "DELETE" | "UPDATE" | "NOTIFY";
  resource: string;
  type?: string | null;
  entity?: E;
  data?: any;
  create?: string;
  update?: string;
  delete?: string;
  from?: string | null;
  seq: number;
}

/** What a subscription is told after each reconnect. */
export interface Resync {
  /** Every missed notification was delivered; when false, read the state again. */
  recovered: boolean;
  /** A GET of the subscribed resource, e.g. reload("?deep=2"). */
  reload<E = any>(query?: string, opts?: CallOptions): Promise<Reply<E>>;
}

/**
 * The reason of a failed reply: every phrase the server sends
 * (docs/channel.md, Failure reasons; tests/js_client_test.go keeps the two
 * lists the same).
 */
export type FailureReason =
  | "invalid JSON"
  | "invalid msg_id"
  | "invalid field"
  | "missing method"
  | "missing resource"
  | "unknown method"
  | "invalid resource"
  | "invalid query"
  | "invalid id"
  | "invalid entity"
  | "invalid expires"
  | "invalid rules"
  | "invalid group"
  | "invalid owner"
  | "not found"
  | "exists"
  | "forbidden"
  | "no subscriber"
  | "too many subscriptions"
  | "not supported without a connection"
  | "store failed"
  | "disconnected"
  | "closed"
  | "unavailable";

/**
 * The code of a ChannelError: "failed" (the server refused: reason is a
 * FailureReason), "http" (SEND or CANCEL refused: status), "unauthorized"
 * (a handshake refused with 401 or 403: status), or the client's own:
 * "disconnected", "connection lost", "queue full", "timeout", "aborted",
 * "closed", "subscribed" (the resource is subscribed to already).
 */
export type ErrorCode =
  | "failed"
  | "http"
  | "unauthorized"
  | "disconnected"
  | "connection lost"
  | "queue full"
  | "timeout"
  | "aborted"
  | "closed"
  | "subscribed";

/** A failed reply of the server. */
export interface FailedReply {
  msg_id?: number;
  code: "failed";
  reason: FailureReason;
}

interface ChannelErrorBase extends Error {
  readonly name: "ChannelError";
  /** The server's reason, the HTTP phrase, or what went wrong. */
  readonly reason: string;
  /** The failed reply, for code "failed". */
  readonly reply?: FailedReply;
  /** The HTTP status, for codes "http" and "unauthorized". */
  readonly status?: number;
}

/** The server refused the request. */
export interface ServerRefusal extends ChannelErrorBase {
  readonly code: "failed";
  readonly reason: FailureReason;
  readonly reply: FailedReply;
}

/** An HTTP request (SEND, CANCEL) or a handshake refused with its status. */
export interface HTTPRefusal extends ChannelErrorBase {
  readonly code: "http" | "unauthorized";
  readonly status: number;
}

/** A request the client gave up or refused itself. */
export interface ClientRefusal extends ChannelErrorBase {
  readonly code: Exclude<ErrorCode, "failed" | "http" | "unauthorized">;
}

/** The error of a request that did not succeed; narrow it by code. */
export type ChannelError = ServerRefusal | HTTPRefusal | ClientRefusal;
export declare const ChannelError: {
  new (code: ErrorCode, reason: string, extra?: { reply?: object; status?: number }): ChannelError;
  readonly prototype: ChannelError;
};

/** The options of each request: a bound on its wait, and a signal that gives it up. */
export interface CallOptions {
  /** ms from the call to the reply, the queue included (default options.requestTimeout; 0: none). */
  timeout?: number;
  /** Gives the request up (code "aborted"); it may or may not have been applied. */
  signal?: AbortSignal;
}

/** What reso.js uses of a WebSocket: browsers', Node's and the ws package's all fit. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: any) => any) | null;
  onmessage: ((ev: any) => any) | null;
  onerror: ((ev: any) => any) | null;
  onclose: ((ev: any) => any) | null;
}

export interface ChannelOptions {
  /**
   * The WebSocket constructor: default globalThis.WebSocket; in Node the
   * ws package's, for example `(await import("ws")).WebSocket`.
   */
  WebSocket?: new (url: string, ...rest: any[]) => WebSocketLike;
  /** Headers of the handshake and of SEND/CANCEL (Node only; browsers send their cookies). */
  headers?: Record<string, string>;
  /**
   * Called before each connection attempt (and each SEND/CANCEL): headers
   * added to options.headers, e.g. fresh credentials. In a browser the
   * handshake cannot carry headers: return nothing, and renew the
   * session's cookies here if need be. A function that throws fails the
   * attempt (an "error" event), which is retried.
   */
  getHeaders?: () => Record<string, string> | void | Promise<Record<string, string> | void>;
  /**
   * First wait before reconnecting, in ms (default 250); doubled per
   * attempt since a connection proved itself (a frame came from the
   * server, or it stayed open for backoffMax, at least 5 s).
   */
  backoffMin?: number;
  /** Longest wait between two attempts, in ms (default 10000). */
  backoffMax?: number;
  /**
   * ms a connection attempt may take before it is given up and tried
   * again (default 10000); one that fails or is closed sooner ends then.
   */
  connectTimeout?: number;
  /** ms a request may wait for its reply, from the call (default 30000; 0: no limit). */
  requestTimeout?: number;
  /** Requests kept while disconnected and sent after the reconnect (default 0: rejected at once). */
  queue?: number;
  /**
   * After a failed handshake whose status the WebSocket does not tell
   * (all but ws), a GET of the same URL over HTTP learns it, so that 401
   * or 403 ends the channel (default true). It runs during the back-off
   * and never holds the next attempt up.
   */
  probe?: boolean;
  /** fetch for SEND, CANCEL and the probe (default globalThis.fetch). */
  fetch?: typeof fetch;
  /** Origin of the HTTP doors (default: that of the WebSocket URL). */
  httpBase?: string;
}

/**
 * The channel's state. "closed" (close()) and "unauthorized" (a
 * handshake refused with 401 or 403) are final.
 */
export type State = "connecting" | "open" | "reconnecting" | "closed" | "unauthorized";

export declare const defaults: Readonly<{
  backoffMin: number;
  backoffMax: number;
  queue: number;
  connectTimeout: number;
  requestTimeout: number;
  probe: boolean;
}>;

export interface SubscribeOptions extends CallOptions {
  /** Called after each reconnect, once the subscription is back. */
  onResync?: (r: Resync) => void;
  /** Called once when the subscription ends: err null after unsubscribe. */
  onEnd?: (err: ChannelError | null) => void;
}

/** A connection to reso's channel that reconnects and recovers by itself. */
export class Channel {
  /** url: a ws:// or wss:// URL (a path in a browser), or a list of them: it starts at a random one and moves to the next when one fails. */
  constructor(url: string | readonly string[], options?: ChannelOptions);
  /** The URL of the current connection or attempt. */
  readonly url: string;
  /** Every URL, in the order given. */
  readonly urls: readonly string[];
  readonly state: State;
  /** The greatest seq seen in the current history. */
  readonly seq: number;
  /** The epoch of the server's history, from the last SUBSCRIBE reply that had one. */
  readonly epoch: string | undefined;
  /** Why the channel ended (codes "closed", "unauthorized"); null while it lasts. */
  readonly error: ChannelError | null;
  on(type: "state", fn: (state: State) => void): () => void;
  on(type: "error", fn: (err: Error) => void): () => void;
  opened(): Promise<void>;
  request<E = any>(msg: { method: string; resource: string; [field: string]: unknown }, opts?: CallOptions): Promise<Reply<E>>;
  get<E = any>(resource: string, opts?: CallOptions): Promise<Reply<E>>;
  put(resource: string, entity?: unknown, opts?: CallOptions & { persistent?: boolean; type?: string; partial?: boolean }): Promise<Reply>;
  post(resource: string, entity?: unknown, opts?: CallOptions & { id?: string; persistent?: boolean; type?: string }): Promise<Reply>;
  delete(resource: string, opts?: CallOptions): Promise<Reply>;
  notify(resource: string, data: unknown, opts?: CallOptions): Promise<Reply>;
  rules(resource: string, change?: { rules?: string; group?: string[] | null; owner?: string }, opts?: CallOptions): Promise<Reply>;
  subscribe<E = any>(resource: string, onNotification: (n: Notification<E>) => void, opts?: SubscribeOptions): Promise<Subscription>;
  unsubscribe(resource: string, opts?: CallOptions): Promise<Reply | { code: "success" }>;
  /** SEND over HTTP, e.g. send("/login/bob@example.org", {command: "invite", url, id}). */
  send(resource: string, body: unknown, opts?: CallOptions): Promise<{ id: string; readonly status: number }>;
  /** CANCEL over HTTP, e.g. cancel("/login/bob@example.org/<id>"). */
  cancel(resource: string, opts?: CallOptions): Promise<{ readonly status: number }>;
  close(): void;
}

/** A remembered subscription. */
export class Subscription {
  readonly channel: Channel;
  readonly resource: string;
  /** The seq of the last notification delivered. */
  readonly lastSeq: number;
  /** The epoch of the history its seqs come from. */
  readonly epoch: string | undefined;
  /** False once it ended. */
  readonly active: boolean;
  /** Why it ended: null while it lasts or after unsubscribe; the server's refusal, "closed", "unauthorized", "timeout", "aborted". */
  readonly err: ChannelError | null;
  /** Resolves once it ended, with err. */
  readonly ended: Promise<ChannelError | null>;
  reload<E = any>(query?: string, opts?: CallOptions): Promise<Reply<E>>;
  unsubscribe(opts?: CallOptions): Promise<Reply | { code: "success" }>;
}

export interface WatchOptions {
  onState?: (state: { resource: string; type: string | null; entity: any }, info: { recovered: false; first: boolean }) => void;
  onNotification?: (n: Notification) => void;
  onError?: (ev: unknown) => void;
  EventSource?: new (url: string, init?: { withCredentials?: boolean }) => {
    readonly readyState: number;
    onopen: ((ev: any) => any) | null;
    onmessage: ((ev: any) => any) | null;
    onerror: ((ev: any) => any) | null;
    close(): void;
  };
  backoffMin?: number;
  backoffMax?: number;
}

/** Follows a resource with a GET kept open over EventSource. */
export function watch(url: string, options?: WatchOptions): { close(): void };

export default Channel;
