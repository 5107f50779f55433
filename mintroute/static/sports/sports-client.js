/**
 * Browser client for the sports-data service. Dependency-free ES modules: load this file as it
 * is (the README beside it shows the import line), with its siblings beside it.
 *
 *     const client = new SportsClient({
 *       authEndpoint: "/api/sports-token",
 *       authHeaders: () => ({ "X-CSRFToken": readCookie("csrftoken") }),
 *     });
 *     const page = await client.matches.list({ sports: ["football"], limit: 10 });
 *     const live = await client.subscribe({ sports: ["tennis"] }, (event) => render(event.match));
 *
 * The page never holds an API key: it asks the integrator's mint route for short-lived tokens
 * and keeps them fresh, shared between the tabs of one origin. Nothing it returns waits forever:
 * mints and requests time out, and close() settles whatever is pending.
 *
 * The folder, one idea per file:
 *     sports-client.js       this file: the client and its options
 *     constants.js           close codes, error codes, reasons and states, named once
 *     errors.js              RpcError, UnauthorizedError, AuthEndpointError
 *     events.js              the "state", "error" and "token" events
 *     timing.js              backoff, retry-after and timers
 *     mint.js                getting one token from the mint route or fetchToken
 *     tab-sharing.js         one mint per refresh across tabs: a Web Lock and a BroadcastChannel
 *     token-keeper.js        holding the token and refreshing it
 *     rpc.js                 JSON-RPC envelopes and calls over HTTP
 *     connection.js          one WebSocket: its pending requests, and its silence
 *     reconnect-schedule.js  the reconnect backoff, refusals in a row, and a server's retryAfter
 *     subscriptions.js       each subscription's state, and the registry of them
 *     live-socket.js         connecting, reconnecting, giving up
 */

import { ERROR, REASON, STATE } from "./constants.js";
import { AuthEndpointError, RpcError, UnauthorizedError } from "./errors.js";
import { Emitter } from "./events.js";
import { LiveSocket } from "./live-socket.js";
import { callbackSource, routeSource } from "./mint.js";
import { postRpc } from "./rpc.js";
import { TabSharing } from "./tab-sharing.js";
import { Timers, backoff } from "./timing.js";
import { TokenKeeper } from "./token-keeper.js";

/** @import { ClientEvents, MatchEvent, Sport, SportsClientOptions } from "./sports-client.js" */
/** @import { SportsClient as DeclaredSportsClient } from "./sports-client.js" */

export { AuthEndpointError, RpcError, UnauthorizedError, backoff };

// refreshLeewaySec null: refresh at the token's half-life, which the mint route's ride-through covers.
const DEFAULTS = Object.freeze({ refreshLeewaySec: null, authTimeoutSec: 10, requestTimeoutSec: 10 });
const RPC_PATH = "/sdk/v1/rpc";
const WS_PATH = "/sdk/v1/ws";

/**
 * @param {{ authEndpoint?: unknown, fetchToken?: unknown, refreshLeewaySec: number | null, authTimeoutSec: number,
 *   requestTimeoutSec: number }} options
 */
function checkOptions({ authEndpoint, fetchToken, refreshLeewaySec, authTimeoutSec, requestTimeoutSec }) {
  if ((authEndpoint == null) === (fetchToken == null)) {
    throw new TypeError(
      'SportsClient needs exactly one of authEndpoint (your mint route, e.g. "/api/sports-token") ' +
        "or fetchToken (a function returning a promise of {token, expiresAt}).",
    );
  }
  if (fetchToken != null && typeof fetchToken !== "function") {
    throw new TypeError("fetchToken must be a function returning a promise of {token, expiresAt}.");
  }
  if (refreshLeewaySec !== null && !(refreshLeewaySec >= 0)) {
    throw new TypeError(
      "refreshLeewaySec must be a number of seconds, 0 or more, or null to refresh at the token's half-life.",
    );
  }
  for (const [name, value] of Object.entries({ authTimeoutSec, requestTimeoutSec })) {
    if (!(value > 0 && Number.isFinite(value))) throw new TypeError(`${name} must be a number of seconds above 0.`);
  }
}

/** Injected value, or the browser's when the option is absent; an explicit null turns it off. */
function option(options, name, fallback) {
  return options[name] === undefined ? fallback : options[name];
}

/**
 * The socket beside the RPC endpoint: "https://host/prefix" gives "wss://host/prefix/sdk/v1/ws".
 * Built as a string: where URL objects are read-only (React Native) assigning to one throws.
 */
function defaultWsUrl(baseUrl) {
  const scheme = /^(https?):\/\//i.exec(baseUrl)?.[1].toLowerCase();
  if (!scheme) {
    throw new TypeError(
      `baseUrl must start with http:// or https:// (got "${baseUrl}"), or pass wsUrl for the socket's address.`,
    );
  }
  return (scheme === "https" ? "wss" : "ws") + baseUrl.slice(scheme.length) + WS_PATH;
}

/** The WebSocket to use, or why there is none (connect() says so). */
function webSocketFrom(options) {
  if (options.WebSocket === null) {
    const noWebSocket =
      "This client was given WebSocket: null, so it makes HTTP calls only; leave the option out to connect.";
    return { WebSocket: null, noWebSocket };
  }
  const WebSocket = options.WebSocket ?? globalThis.WebSocket;
  const noWebSocket =
    "This JavaScript runtime has no global WebSocket (Node.js before 22, for one): pass a WebSocket class " +
    "as the WebSocket option, e.g. the ws package's, to connect() and subscribe().";
  return { WebSocket: WebSocket ?? null, noWebSocket };
}

/** Tabs share tokens per mint route (or per service with fetchToken), never across services. */
function defaultChannelName({ authEndpoint, baseUrl }) {
  if (authEndpoint == null) return `sports-client:${baseUrl}`;
  try {
    return `sports-client:${new URL(authEndpoint, globalThis.location?.href ?? baseUrl).href}`;
  } catch {
    return `sports-client:${authEndpoint}`;
  }
}

/**
 * The browser flavour of the sports-data client. It holds no API key: tokens come from the
 * integrator's mint route (`authEndpoint`) or from `fetchToken`, and are kept fresh on its own.
 * @implements {DeclaredSportsClient}
 */
export class SportsClient {
  #baseUrl;
  #fetch;
  #timers;
  #tokens;
  #live;
  #events = new Emitter();
  #requestTimeoutMs;
  #document;
  #window;
  #onVisibilityChange = () => {
    if (this.#document.visibilityState === "visible") this.#tokens.checkFreshness();
  };
  #onOnline = () => this.#live.wentOnline();
  #onOffline = () => this.#live.wentOffline();
  #requests = new Set();
  #nextRequestId = 1;
  /** @type {Error | null} */
  #stoppedBy = null;
  /** Rejects when the client stops, so every promise it returned settles at that moment. */
  #stopped;
  #stop;

  /** `matches.list` and friends, named as the service names them. */
  matches = {
    /** @param {{ sports?: Sport[], limit?: number, cursor?: string }} [params] */
    list: ({ sports, limit, cursor } = {}) => {
      return this.rpc("matches.list", dropUndefined({ sports, limit, cursor }));
    },
  };

  /** @param {SportsClientOptions} options (none at all is refused by checkOptions, with the fix) */
  constructor(options = /** @type {SportsClientOptions} */ ({})) {
    const settings = { ...DEFAULTS, ...dropUndefined(options) };
    const { authEndpoint, fetchToken, authHeaders } = settings;
    checkOptions(settings);
    const baseUrl = options.baseUrl ?? globalThis.location?.origin;
    if (!baseUrl) {
      throw new TypeError('baseUrl is required when the page has no origin (e.g. "https://sports.example.com").');
    }
    this.#baseUrl = baseUrl.replace(/\/+$/, "");
    // Before anything is opened: a constructor that throws must leave no channel or timer behind.
    const wsUrl = options.wsUrl ?? defaultWsUrl(this.#baseUrl);
    this.#requestTimeoutMs = settings.requestTimeoutSec * 1000;
    this.#stopped = new Promise((_, reject) => {
      this.#stop = reject;
    });
    this.#stopped.catch(() => {}); // observed through #guard; never an unhandled rejection
    this.#fetch = option(options, "fetch", globalThis.fetch?.bind(globalThis));
    const now = option(options, "now", () => Date.now());
    const random = option(options, "random", Math.random);
    this.#timers = new Timers(
      option(options, "setTimeout", (callback, delayMs) => globalThis.setTimeout(callback, delayMs)),
      option(options, "clearTimeout", (handle) => globalThis.clearTimeout(handle)),
    );

    const source = fetchToken
      ? callbackSource({ fetchToken, now })
      : routeSource({ fetch: this.#fetch, endpoint: authEndpoint, authHeaders, now });
    const tabs = new TabSharing({
      locks: option(options, "locks", globalThis.navigator?.locks),
      BroadcastChannel: option(options, "BroadcastChannel", globalThis.BroadcastChannel),
      channelName: options.channelName ?? defaultChannelName({ authEndpoint, baseUrl: this.#baseUrl }),
      timers: this.#timers,
      lockWaitMs: settings.authTimeoutSec * 1000,
    });
    this.#tokens = new TokenKeeper({
      source,
      leewayMs: settings.refreshLeewaySec === null ? null : settings.refreshLeewaySec * 1000,
      timeoutMs: settings.authTimeoutSec * 1000,
      waitForRefreshMs: this.#requestTimeoutMs,
      now,
      random,
      timers: this.#timers,
      tabs,
      events: {
        onToken: (record, details) => this.#tokenArrived(record, details),
        onFinal: (error) => this.#refusedForGood(error),
        onBackgroundError: (error) => this.#events.emit("error", error),
      },
    });
    this.#live = new LiveSocket({
      url: wsUrl,
      ...webSocketFrom(options),
      tokens: this.#tokens,
      timers: this.#timers,
      now,
      random,
      timeoutMs: this.#requestTimeoutMs,
      events: {
        onState: (state) => this.#events.emit("state", state),
        onError: (error) => this.#events.emit("error", error),
      },
    });
    this.#document = option(options, "document", globalThis.document);
    this.#document?.addEventListener?.("visibilitychange", this.#onVisibilityChange);
    this.#window = option(options, "window", globalThis.window);
    this.#window?.addEventListener?.("online", this.#onOnline);
    this.#window?.addEventListener?.("offline", this.#onOffline);
  }

  /** "idle" | "connecting" | "open" | "reconnecting" | "limited" | "unauthorized" | "closed" */
  get state() {
    return this.#live.state;
  }

  /**
   * Listens to "state", "error" or "token"; returns the function that stops listening.
   * @template {keyof ClientEvents} Name
   * @param {Name} eventName
   * @param {(payload: ClientEvents[Name]) => void} listener
   * @returns {() => void}
   */
  on(eventName, listener) {
    return this.#events.on(eventName, listener);
  }

  /**
   * Calls `method` over HTTP and returns its `result`. A call refused as unauthorized is retried
   * once with a newly minted token, because the held one may have died in flight.
   * @param {string} method
   * @param {Record<string, unknown>} [params]
   */
  rpc(method, params = {}) {
    return this.#guard(async () => {
      const token = await this.#tokens.current();
      try {
        return await this.#post(method, params, token);
      } catch (error) {
        if (!(error instanceof UnauthorizedError)) throw error;
      }
      const retryToken = await this.#tokens.replace(token, REASON.UNAUTHORIZED);
      try {
        return await this.#post(method, params, retryToken);
      } catch (error) {
        if (error instanceof UnauthorizedError) this.#tokens.refuse(retryToken);
        throw error;
      }
    });
  }

  /**
   * Opens the WebSocket; resolves once it is authenticated, rejects if this attempt fails (the
   * client keeps reconnecting on its own until close(), or until it is refused for good).
   */
  connect() {
    return this.#guard(() => this.#live.connect());
  }

  /**
   * Subscribes to match events (connecting first if needed). `onEvent` receives
   * {subscriptionId, kind, match} with the local id, which survives reconnects.
   * @param {{ sports?: Sport[] }} filter
   * @param {(event: MatchEvent) => void} onEvent
   */
  subscribe({ sports } = {}, onEvent) {
    if (typeof onEvent !== "function") {
      return Promise.reject(new TypeError("subscribe(filter, onEvent) needs an onEvent function."));
    }
    return this.#guard(() => this.#live.subscribe(dropUndefined({ sports }), onEvent));
  }

  /**
   * Drops the WebSocket as a network failure would, to watch (or test) the client reconnect,
   * fetch a token with reason "reconnect" and restore its subscriptions.
   */
  dropConnection() {
    this.#live.drop();
  }

  /** Stops everything for good; whatever is pending rejects at once with RpcError "closed". */
  close() {
    this.#shutdown(new RpcError(ERROR.CLOSED, "This SportsClient was closed; create a new one."), STATE.CLOSED);
  }

  /** `work()`, settled at once with the reason if the client stops first. */
  #guard(work) {
    if (this.#stoppedBy) return Promise.reject(this.#stoppedBy);
    return Promise.race([work(), this.#stopped]);
  }

  async #post(method, params, token) {
    const requestId = String(this.#nextRequestId++);
    const abort = new AbortController();
    this.#requests.add(abort);
    const timedOut = () => {
      const seconds = this.#requestTimeoutMs / 1000;
      const error = new RpcError(ERROR.TIMEOUT, `${method} got no answer within ${seconds} s (requestTimeoutSec).`, undefined, {
        requestId,
      });
      abort.abort(error);
      return error;
    };
    const url = this.#baseUrl + RPC_PATH;
    const call = postRpc({ fetch: this.#fetch, url, requestId, method, params, token, signal: abort.signal });
    try {
      return await this.#timers.deadline(call, this.#requestTimeoutMs, timedOut);
    } finally {
      this.#requests.delete(abort);
    }
  }

  #tokenArrived(record, { reason, mintedBy }) {
    // The fingerprint (the signature's last characters) lets a page show which token it holds
    // without ever displaying the token itself.
    const fingerprint = record.token.slice(-8);
    this.#events.emit("token", { expiresAt: record.expiresAt, reason, mintedBy, fingerprint });
    this.#live.reauthenticate(record.token);
  }

  /** The mint route said the user is signed out: retrying cannot help until they sign in again. */
  #refusedForGood(error) {
    if (this.#stoppedBy) return;
    this.#shutdown(error, STATE.UNAUTHORIZED);
    this.#events.emit("error", error);
  }

  /** Closing and a final refusal end the same way: nothing keeps running, every call rejects. */
  #shutdown(reason, finalState) {
    this.#stoppedBy = reason;
    this.#stop(reason);
    this.#tokens.stop(reason);
    this.#live.stop(reason, finalState);
    for (const abort of this.#requests) abort.abort(reason);
    this.#timers.cancelAll();
    this.#document?.removeEventListener?.("visibilitychange", this.#onVisibilityChange);
    this.#window?.removeEventListener?.("online", this.#onOnline);
    this.#window?.removeEventListener?.("offline", this.#onOffline);
  }
}

/**
 * @template {object} T
 * @param {T} object
 * @returns {T}
 */
function dropUndefined(object) {
  const defined = Object.entries(/** @type {object} */ (object)).filter(([, value]) => value !== undefined);
  return /** @type {T} */ (Object.fromEntries(defined));
}
