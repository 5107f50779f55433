// Types for sports-client.js, the browser flavour of the sports-data client.
//
// They compile with no DOM library ("lib": ["es2022"], "types": []), as in React Native: every
// shape the client needs of its runtime is declared below. Where the program does have the DOM
// library (or @types/node), what the client hands out, such as fetchToken's `signal`, has the
// runtime's own type, and the runtime's objects (fetch, WebSocket, Headers, ...) fit the shapes.

/** The instances' type of the global class `Name` when the program declares one, else `Fallback`. */
type InstanceOfGlobal<Name extends string, Fallback> =
  typeof globalThis extends Record<Name, { prototype: infer Instance }> ? Instance : Fallback;

/** What the client needs of an AbortSignal. */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: "abort", listener: () => void): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/** The signal the client passes to fetch and fetchToken: the runtime's AbortSignal where it has one. */
export type ClientAbortSignal = InstanceOfGlobal<"AbortSignal", AbortSignalLike>;

/** What the client needs of a Headers object. */
export interface HeadersLike {
  get(name: string): string | null;
  forEach(callback: (value: string, name: string) => void): void;
}

/** What the client reads of fetch's Response. */
export interface ResponseLike {
  readonly ok: boolean;
  readonly status: number;
  readonly headers: HeadersLike;
  readonly redirected: boolean;
  readonly type: string;
  readonly url: string;
  json(): Promise<unknown>;
}

/** The fetch the client calls: a POST with a JSON body, to the mint route or the RPC endpoint. */
export type FetchLike = (
  url: string,
  init: {
    method: "POST";
    headers: Record<string, string>;
    body: string;
    credentials: "same-origin" | "omit";
    signal: ClientAbortSignal;
  },
) => Promise<ResponseLike>;

/** What the client needs of a WebSocket (the browser's, React Native's, or the ws package's). */
export interface WebSocketLike {
  send(data: string): void;
  close(code?: number): void;
  addEventListener(type: "open", listener: () => void): void;
  addEventListener(type: "message", listener: (event: { readonly data: unknown }) => void): void;
  addEventListener(type: "close", listener: (event: { readonly code: number }) => void): void;
}

/** What the client needs of a BroadcastChannel; it receives through `onmessage`. */
export interface BroadcastChannelLike {
  onmessage: ((event: InstanceOfGlobal<"MessageEvent", { readonly data: unknown }>) => void) | null;
  postMessage(message: unknown): void;
  close(): void;
}

/** What the client needs of the Web Locks API (`navigator.locks`). */
export interface LocksLike {
  request(name: string, callback: (lock: unknown) => Promise<void>): Promise<unknown>;
}

/** What the client needs of `document`: whether the page is visible, and when that changes. */
export interface DocumentLike {
  readonly visibilityState: string;
  addEventListener(type: "visibilitychange", listener: () => void): void;
  removeEventListener(type: "visibilitychange", listener: () => void): void;
}

/** What the mint route (or fetchToken) returns. */
export interface TokenResponse {
  /** Signed JWT. */
  token: string;
  /** ISO 8601 with offset, e.g. "2025-06-01T12:10:00+00:00". */
  expiresAt: string;
}

/** Why a token is being fetched; sent to the mint route as the body {"reason": ...}. */
export type TokenReason = "initial" | "refresh" | "reconnect" | "unauthorized";

/**
 * "reconnecting": the socket dropped or an attempt failed; the client tries again on its backoff.
 * "limited": the service refused the socket for the account's limits (its `auth` answered
 * `rate_limited`, close code 4429; the "error" event carries the answer, `data.limit` is
 * "connections" when the account holds all its sockets); the client tries again on its backoff,
 * no sooner than the answer's `retryAfter`. "unauthorized": refused for good until connect().
 */
export type ConnectionState =
  | "idle"
  | "connecting"
  | "open"
  | "reconnecting"
  | "limited"
  | "unauthorized"
  | "closed";

export type Sport = "football" | "basketball" | "tennis" | "ice-hockey" | "baseball" | "esports" | (string & {});

export interface Match {
  id: string;
  sport: Sport;
  env: "live" | "test";
  competition: string;
  home: string;
  away: string;
  startsAt: string;
  status: "scheduled" | "live" | "finished";
  score: { home: number; away: number };
  updatedAt: string;
}

export interface MatchPage {
  data: Match[];
  pagination: { limit: number; total: number; nextCursor: string | null };
}

export interface MatchEvent {
  /** The local subscription id: the same across reconnects. */
  subscriptionId: string;
  kind: "score" | "status";
  match: Match;
}

/**
 * "active": events flow. "restoring": the socket dropped and the client is subscribing again (or
 * retrying after a refusal). "failed": refused for good (invalid_params, forbidden), or the socket
 * gave up (a later connect() restores it). "closed": unsubscribed, or the client was closed.
 */
export type SubscriptionState = "active" | "restoring" | "failed" | "closed";

export interface Subscription {
  readonly id: string;
  readonly state: SubscriptionState;
  unsubscribe(): Promise<void>;
}

export interface TokenEvent {
  expiresAt: string;
  reason: TokenReason;
  /** "self" when this tab minted it, "tab" when another tab of the origin did and shared it. */
  mintedBy: "self" | "tab";
  /** The token's last 8 characters: enough to tell tokens apart on screen, useless as a credential. */
  fingerprint: string;
}

export interface ClientEvents {
  state: ConnectionState;
  error: Error;
  token: TokenEvent;
}

type HeaderMap = Record<string, string> | HeadersLike;

/** What the client needs of `window`: the `online` and `offline` events. */
export interface NetworkEvents {
  addEventListener(type: "online" | "offline", listener: () => void): void;
  removeEventListener(type: "online" | "offline", listener: () => void): void;
}

interface CommonOptions {
  /** The service's origin; default: the page's origin. */
  baseUrl?: string;
  /** Default: baseUrl with ws:/wss: and "/sdk/v1/ws". */
  wsUrl?: string;
  /**
   * Refresh the token this many seconds before its expiry. Default (absent or null): at its half-life,
   * when the mint route stops handing it out again, early enough for the route to ride through an
   * upstream outage with it.
   */
  refreshLeewaySec?: number | null;
  /** A mint (POST to authEndpoint, or fetchToken) not settled by then fails with AuthEndpointError status 0 and is aborted. Default 10. */
  authTimeoutSec?: number;
  /**
   * An RPC, or a socket frame awaiting its answer, not answered by then fails with RpcError "timeout".
   * A call made while a refresh is in flight waits for it only when the held token expires within
   * this; otherwise it goes at once with the held token. Default 10.
   */
  requestTimeoutSec?: number;
  /**
   * Name of the BroadcastChannel that shares tokens between tabs; the Web Lock is "<name>-refresh".
   * Default: derived from authEndpoint (or baseUrl with fetchToken), so clients of different services never share.
   */
  channelName?: string;

  // Injectables, mostly for tests. Each defaults to the browser's; null turns the feature off.
  fetch?: FetchLike;
  /** Without one (and without a global WebSocket) connect() and subscribe() reject, saying so. */
  WebSocket?: (new (url: string) => WebSocketLike) | null;
  now?: () => number;
  setTimeout?: (callback: () => void, delayMs: number) => unknown;
  clearTimeout?: (handle: unknown) => void;
  random?: () => number;
  BroadcastChannel?: (new (name: string) => BroadcastChannelLike) | null;
  locks?: LocksLike | null;
  document?: DocumentLike | null;
  /** Its online/offline events: offline skips reconnect attempts, online reconnects at once. */
  window?: NetworkEvents | null;
}

export type SportsClientOptions = CommonOptions &
  (
    | {
        /** The integrator's mint route, POSTed to with the page's cookies. */
        authEndpoint: string;
        /**
         * Extra headers for that POST (e.g. the CSRF token): an object, a Headers, or a function
         * returning either (or a promise of either), read at every mint. A function that throws
         * fails the mint with AuthEndpointError (status 0) whose `cause` is what it threw.
         */
        authHeaders?: HeaderMap | (() => HeaderMap | Promise<HeaderMap>);
        fetchToken?: never;
      }
    | {
        /**
         * Replaces the POST to authEndpoint; its answer is checked like the route's. `signal` aborts
         * when authTimeoutSec passes or the client is closed. Clock skew is read from the JWT's `iat`.
         */
        fetchToken: (request: { reason: TokenReason; signal: ClientAbortSignal }) => Promise<TokenResponse>;
        authEndpoint?: never;
        authHeaders?: never;
      }
  );

export class SportsClient {
  constructor(options: SportsClientOptions);

  readonly state: ConnectionState;
  readonly matches: {
    list(params?: { sports?: Sport[]; limit?: number; cursor?: string }): Promise<MatchPage>;
  };

  /**
   * Calls a method over HTTP; one retry with a new token if the first answer is `unauthorized`.
   * Every promise the client returns settles: by its answer, a timeout, or close().
   */
  rpc<Result = unknown>(method: string, params?: Record<string, unknown>): Promise<Result>;
  /**
   * Opens the WebSocket; resolves once authenticated, rejects when this attempt fails (the client
   * keeps reconnecting) or when the socket gives up (auth refused twice: UnauthorizedError, state
   * "unauthorized"; a later connect() starts over).
   */
  connect(): Promise<void>;
  subscribe(filter: { sports?: Sport[] }, onEvent: (event: MatchEvent) => void): Promise<Subscription>;
  /** Returns the function that stops listening. */
  on<Name extends keyof ClientEvents>(eventName: Name, listener: (payload: ClientEvents[Name]) => void): () => void;
  /** Drops the WebSocket as a network failure would; the client reconnects and restores subscriptions. */
  dropConnection(): void;
  /** Stops everything; what is pending rejects at once with RpcError "closed", an in-flight mint is aborted. */
  close(): void;
}

/** The service answered with an error envelope, or could not be reached (code "unavailable"). */
export class RpcError extends Error {
  constructor(code: string, message: string, data?: unknown, options?: { requestId?: string | null; cause?: unknown });
  readonly name: "RpcError" | "UnauthorizedError";
  /** A JSON-RPC error code, or "unavailable", "timeout", "bad_response", "closed" from the client itself. */
  readonly code: string;
  /** e.g. {retryAfter: seconds} with "rate_limited". */
  readonly data: unknown;
  readonly requestId: string | null;
}

/** Still `unauthorized` after one retry with a newly minted token. */
export class UnauthorizedError extends RpcError {
  constructor(message: string, data?: unknown, options?: { requestId?: string | null; cause?: unknown });
  readonly name: "UnauthorizedError";
  readonly code: "unauthorized";
  /** The service's `error.data.reason` when it sent one ("expired_token", "revoked_key", ...), else null. */
  readonly reason: string | null;
}

/** The mint route or fetchToken gave no usable token. */
export class AuthEndpointError extends Error {
  constructor(
    message: string,
    options?: { status?: number; retryAfter?: number | null; final?: boolean; cause?: unknown },
  );
  readonly name: "AuthEndpointError";
  /** The HTTP status, or 0: no answer within authTimeoutSec, network failure, wrong shape, a throwing fetchToken or authHeaders. */
  readonly status: number;
  /** True for 401, 403 and a redirect to a page (the login page): the client stops (state "unauthorized") instead of retrying. */
  readonly final: boolean;
  /** Seconds, from the route's Retry-After header. */
  readonly retryAfter: number | null;
}

/** Full-jitter backoff: random() * min(capMs, baseMs * 2 ** attempt). Defaults: 500 ms, 30 s. */
export function backoff(
  attempt: number,
  options?: { baseMs?: number; capMs?: number; random?: () => number },
): number;
