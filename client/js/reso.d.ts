// Type declarations of reso.js, the JavaScript client of reso's resource
// channel (docs/clients.md).

/** A reply of the server: code "success", msg_id, and the method's fields; T is the entity's type. */
export interface Reply<T = any> {
  msg_id: number;
  code: "success";
  resource?: string;
  type?: string | null;
  entity?: T;
  id?: string;
  sent_count?: number;
  recovered?: boolean;
  rules?: string;
  group?: string[] | null;
  owner?: string;
  effective?: string;
  [field: string]: unknown;
}

/** A notification: PUT, POST, DELETE, UPDATE or NOTIFY (docs/channel.md#notifications). */
export interface Notification {
  notify: "PUT" | "POST" | "DELETE" | "UPDATE" | "NOTIFY";
  resource: string;
  type?: string | null;
  entity?: unknown;
  data?: unknown;
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
  reload(query?: string): Promise<Reply>;
}

export type ErrorCode = "failed" | "disconnected" | "connection lost" | "queue full" | "closed" | "http";

/** The error of a request that did not succeed. */
export class ChannelError extends Error {
  constructor(code: ErrorCode, reason: string, extra?: { reply?: object; status?: number });
  readonly code: ErrorCode;
  /** The server's reason ("not found", "forbidden", ...) or what went wrong. */
  readonly reason: string;
  /** The failed reply, for code "failed". */
  readonly reply?: object;
  /** The HTTP status, for code "http". */
  readonly status?: number;
}

/** What reso.js uses of a WebSocket: the browser's, Node's and the ws package's all fit. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: any) => void) | null;
  onmessage: ((ev: any) => void) | null;
  onclose: ((ev: any) => void) | null;
  onerror: ((ev: any) => void) | null;
}

export interface ChannelOptions {
  /** The WebSocket constructor: default globalThis.WebSocket; in Node the ws package, for example. */
  WebSocket?: new (url: string, ...args: any[]) => WebSocketLike;
  /** Headers of the handshake and of SEND/CANCEL (Node only; browsers send their cookies). */
  headers?: Record<string, string>;
  /** First wait before reconnecting, in ms (default 250); doubled per attempt. */
  backoffMin?: number;
  /** Longest wait between two attempts, in ms (default 10000). */
  backoffMax?: number;
  /** ms a connection attempt may take before it is given up and tried again (default 10000). */
  connectTimeout?: number;
  /** Requests kept while disconnected and sent after the reconnect (default 0: rejected at once). */
  queue?: number;
  /** fetch for SEND and CANCEL (default globalThis.fetch). */
  fetch?: typeof fetch;
  /** Origin of the HTTP doors (default: that of the WebSocket URL). */
  httpBase?: string;
}

export type State = "connecting" | "open" | "reconnecting" | "closed";

export declare const defaults: Readonly<{ backoffMin: number; backoffMax: number; queue: number; connectTimeout: number }>;

/** A connection to reso's channel that reconnects and recovers by itself. */
export class Channel {
  constructor(url: string, options?: ChannelOptions);
  readonly url: string;
  readonly state: State;
  /** The greatest seq seen. */
  readonly seq: number;
  on(type: "state", fn: (state: State) => void): () => void;
  on(type: "error", fn: (err: Error) => void): () => void;
  opened(): Promise<void>;
  request(msg: { method: string; resource: string; [field: string]: unknown }): Promise<Reply>;
  get(resource: string): Promise<Reply>;
  put(resource: string, entity?: unknown, opts?: { persistent?: boolean; type?: string; partial?: boolean }): Promise<Reply>;
  post(resource: string, entity?: unknown, opts?: { id?: string; persistent?: boolean; type?: string }): Promise<Reply>;
  delete(resource: string): Promise<Reply>;
  notify(resource: string, data: unknown): Promise<Reply>;
  rules(resource: string, change?: { rules?: string; group?: string[] | null; owner?: string }): Promise<Reply>;
  subscribe(
    resource: string,
    onNotification: (n: Notification) => void,
    opts?: { onResync?: (r: Resync) => void },
  ): Promise<Subscription>;
  unsubscribe(resource: string): Promise<Reply | { code: "success" }>;
  /** SEND over HTTP, e.g. send("/login/bob@example.org", {command: "invite", url, id}). */
  send(resource: string, body: unknown): Promise<{ id: string; readonly status: number }>;
  /** CANCEL over HTTP, e.g. cancel("/login/bob@example.org/<id>"). */
  cancel(resource: string): Promise<{ readonly status: number }>;
  close(): void;
}

/** A remembered subscription. */
export class Subscription {
  readonly channel: Channel;
  readonly resource: string;
  /** The seq of the last notification delivered. */
  readonly lastSeq: number;
  reload(query?: string): Promise<Reply>;
  unsubscribe(): Promise<Reply | { code: "success" }>;
}

export interface WatchOptions {
  onState?: (state: { resource: string; type: string | null; entity: unknown }, info: { recovered: false; first: boolean }) => void;
  onNotification?: (n: Notification) => void;
  onError?: (ev: Event) => void;
  EventSource?: new (url: string, init?: { withCredentials?: boolean }) => EventSource;
  backoffMin?: number;
  backoffMax?: number;
}

/** Follows a resource with a GET kept open over EventSource. */
export function watch(url: string, options?: WatchOptions): { close(): void };

export default Channel;
