/**
 * Browser client for the sports-data service. A dependency-free ES module: load it as it is.
 *
 *     import { SportsClient } from "/static/sports/sports-client.js";
 *     const client = new SportsClient({
 *       authEndpoint: "/api/sports-token",
 *       authHeaders: () => ({ "X-CSRFToken": readCookie("csrftoken") }),
 *     });
 *     const page = await client.matches.list({ sports: ["football"], limit: 10 });
 *     const live = await client.subscribe({ sports: ["tennis"] }, (event) => render(event.match));
 *
 * The page never holds an API key: it asks the integrator's mint route for short-lived tokens
 * and keeps them fresh, shared between the tabs of one origin.
 *
 *     Error
 *     ├── RpcError            the service answered with an error envelope, or could not be reached
 *     │   └── UnauthorizedError   `unauthorized`, still refused after one retry with a new token
 *     └── AuthEndpointError   the mint route was unreachable, refused (status), or answered garbage
 */

const DEFAULT_REFRESH_LEEWAY_SEC = 30;
const RECONNECT_BACKOFF = Object.freeze({ baseMs: 500, capMs: 30_000 });

const RPC_PATH = "/sdk/v1/rpc";
const WS_PATH = "/sdk/v1/ws";
const DEFAULT_CHANNEL_NAME = "sports-client";
/** setTimeout fires at once for larger delays (a signed 32-bit overflow). */
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;
/** BroadcastChannel delivers asynchronously; holding the lock this long lets the news land first. */
const BROADCAST_SETTLE_MS = 50;
/** Without Web Locks, tabs whose refresh timers fire together spread out over this window. */
const UNLOCKED_REFRESH_SPREAD_MS = 2_000;
const CLOSE_UNAUTHORIZED = 4401;
const FINAL_MINT_STATUSES = new Set([401, 403]);

// ---------------------------------------------------------------------------------------------
// Errors

/** The service answered a call with `error`, or no usable answer arrived (`code` "unavailable"). */
export class RpcError extends Error {
  constructor(code, message, data = undefined, { requestId = null, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "RpcError";
    this.code = code;
    this.data = data;
    this.requestId = requestId;
  }
}

/** The credential was refused, and refused again with a newly minted token. */
export class UnauthorizedError extends RpcError {
  constructor(message, data = undefined, options = {}) {
    super("unauthorized", message, data, options);
    this.name = "UnauthorizedError";
  }
}

/**
 * The mint route (or `fetchToken`) gave no usable token. `status` is the HTTP status, or 0 when
 * there was none to give: a network failure, a body of the wrong shape, a throwing `fetchToken`.
 * `final` marks 401/403: the user is not allowed a token, so retrying cannot help.
 */
export class AuthEndpointError extends Error {
  constructor(message, { status = 0, retryAfter = null, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "AuthEndpointError";
    this.status = status;
    this.retryAfter = retryAfter;
    this.final = FINAL_MINT_STATUSES.has(status);
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers

/**
 * Full-jitter exponential backoff: a delay drawn uniformly from [0, min(cap, base * 2^attempt)).
 * Jitter keeps many clients that failed together from retrying together.
 */
export function backoff(attempt, options = {}) {
  const { baseMs = RECONNECT_BACKOFF.baseMs, capMs = RECONNECT_BACKOFF.capMs, random = Math.random } = options;
  return random() * Math.min(capMs, baseMs * 2 ** attempt);
}

/** The server's Retry-After is a floor; the jittered backoff may ask for longer. */
function retryDelayMs(error, attempt, random) {
  const retryAfterMs = (error?.retryAfter ?? 0) * 1000;
  return Math.max(retryAfterMs, backoff(attempt, { ...RECONNECT_BACKOFF, random }));
}

function retryAfterSeconds(headerValue, nowMs) {
  if (headerValue == null || headerValue.trim() === "") return null;
  const seconds = Number(headerValue);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const retryAtMs = Date.parse(headerValue);
  return Number.isNaN(retryAtMs) ? null : Math.max(0, (retryAtMs - nowMs) / 1000);
}

/** Server time minus local time, from the response's Date header; 0 when there is none. */
function serverSkewMs(dateHeader, localNowMs) {
  const serverNowMs = Date.parse(dateHeader ?? "");
  return Number.isNaN(serverNowMs) ? 0 : serverNowMs - localNowMs;
}

function tokenShapeProblem(body) {
  if (body === null || typeof body !== "object") return "a body that is not a JSON object";
  if (typeof body.token !== "string" || body.token === "") return "no token";
  const expiresAt = typeof body.expiresAt === "string" ? Date.parse(body.expiresAt) : NaN;
  if (Number.isNaN(expiresAt)) return "no valid expiresAt";
  return null;
}

/** Checks a TokenResponse and returns the record the client keeps, or throws AuthEndpointError. */
function tokenRecordFrom(body, { source, skewMs, nowMs }) {
  const problem = tokenShapeProblem(body);
  if (problem) {
    const expected = '{"token": "<JWT>", "expiresAt": "<ISO 8601 with offset>"}';
    throw new AuthEndpointError(`${source} returned ${problem}; it must return ${expected}.`);
  }
  const expiresAtMs = Date.parse(body.expiresAt);
  // Accepting a dead token would schedule its refresh in the past, then again, in a tight loop.
  if (expiresAtMs <= nowMs + skewMs) {
    throw new AuthEndpointError(`${source} returned a token that had already expired (${body.expiresAt}).`);
  }
  return { token: body.token, expiresAt: body.expiresAt, expiresAtMs, skewMs };
}

async function readJson(response) {
  try {
    return await response.json();
  } catch {
    return undefined;
  }
}

function dropUndefined(object) {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
}

/** Injected value, or the browser's when the option is absent; an explicit null turns it off. */
function option(options, name, fallback) {
  return options[name] === undefined ? fallback : options[name];
}

function defaultWsUrl(baseUrl) {
  const url = new URL(baseUrl);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.pathname = url.pathname.replace(/\/$/, "") + WS_PATH;
  return url.toString();
}

function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((resolvePromise, rejectPromise) => {
    resolve = resolvePromise;
    reject = rejectPromise;
  });
  return { promise, resolve, reject };
}

/** A listener that throws must not break the client's bookkeeping; rethrow it on its own. */
function callSafely(listener, ...args) {
  try {
    listener(...args);
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}

/**
 * Every timer the client starts goes through here, so close() can prove none is left, and
 * delays are capped at what setTimeout accepts (the callers re-check the time when woken).
 */
class Timers {
  #setTimeout;
  #clearTimeout;
  #handles = new Set();
  #sleepers = new Set();

  constructor(setTimeoutFn, clearTimeoutFn) {
    this.#setTimeout = setTimeoutFn;
    this.#clearTimeout = clearTimeoutFn;
  }

  after(delayMs, callback) {
    const boundedDelayMs = Math.min(Math.max(0, delayMs), MAX_TIMER_DELAY_MS);
    const handle = this.#setTimeout(() => {
      this.#handles.delete(handle);
      callback();
    }, boundedDelayMs);
    this.#handles.add(handle);
    return handle;
  }

  cancel(handle) {
    if (handle == null || !this.#handles.delete(handle)) return;
    this.#clearTimeout(handle);
  }

  /** Resolves after delayMs, or at once when cancelAll() runs, so nothing waits forever. */
  sleep(delayMs) {
    return new Promise((resolve) => {
      const wake = () => {
        this.#sleepers.delete(wake);
        resolve();
      };
      this.#sleepers.add(wake);
      this.after(delayMs, wake);
    });
  }

  cancelAll() {
    for (const handle of this.#handles) this.#clearTimeout(handle);
    this.#handles.clear();
    for (const wake of [...this.#sleepers]) wake();
  }
}

// ---------------------------------------------------------------------------------------------
// Getting tokens

async function resolveHeaders(authHeaders) {
  const headers = typeof authHeaders === "function" ? await authHeaders() : authHeaders;
  return headers ?? {};
}

/** POSTs {reason} to the integrator's mint route with the page's cookies. */
async function mintFromRoute({ fetch, endpoint, authHeaders, reason, now }) {
  const source = `The token mint route ${endpoint}`;
  const headers = { "Content-Type": "application/json", ...(await resolveHeaders(authHeaders)) };
  let response;
  try {
    response = await fetch(endpoint, {
      method: "POST",
      headers,
      body: JSON.stringify({ reason }),
      credentials: "same-origin",
    });
  } catch (cause) {
    throw new AuthEndpointError(`${source} is unreachable (${cause?.message ?? cause}).`, { cause });
  }
  const receivedAtMs = now();
  if (!response.ok) throw await refusalFrom(response, source, receivedAtMs);
  const skewMs = serverSkewMs(response.headers.get("Date"), receivedAtMs);
  return tokenRecordFrom(await readJson(response), { source, skewMs, nowMs: receivedAtMs });
}

async function refusalFrom(response, source, nowMs) {
  const body = await readJson(response);
  const code = typeof body?.error === "string" ? ` ${body.error}` : "";
  const detail = typeof body?.message === "string" ? `: ${body.message}` : "";
  const hint = FINAL_MINT_STATUSES.has(response.status)
    ? " The user has to sign in (or pass the CSRF header in authHeaders) before a token can be minted."
    : "";
  const sentence = `${source} answered ${response.status}${code}${detail}`;
  const message = (/[.!?]$/.test(sentence) ? sentence : `${sentence}.`) + hint;
  return new AuthEndpointError(message, {
    status: response.status,
    retryAfter: retryAfterSeconds(response.headers.get("Retry-After"), nowMs),
  });
}

/** The integrator's own fetchToken; it may throw AuthEndpointError itself to choose the status. */
async function tokenFromCallback({ fetchToken, reason, now }) {
  const source = "fetchToken()";
  let body;
  try {
    body = await fetchToken({ reason });
  } catch (cause) {
    if (cause instanceof AuthEndpointError) throw cause;
    throw new AuthEndpointError(`${source} failed (${cause?.message ?? cause}).`, { cause });
  }
  return tokenRecordFrom(body, { source, skewMs: 0, nowMs: now() });
}

/**
 * Holds the current token and decides when a new one is needed: one fetch in flight per tab,
 * and one mint per refresh across the tabs of an origin (Web Lock + BroadcastChannel).
 * A token is fresh until `refreshAtMs`, leeway seconds before its expiry in the server's time.
 */
class TokenKeeper {
  #obtain;
  #leewayMs;
  #now;
  #random;
  #timers;
  #locks;
  #lockName;
  #channel = null;
  #events;
  #held = null;
  #inFlight = null;
  #refreshTimer = null;
  #backgroundFailures = 0;
  #stoppedBy = null;

  constructor({ obtain, leewayMs, now, random, timers, locks, BroadcastChannel, channelName, events }) {
    this.#obtain = obtain;
    this.#leewayMs = leewayMs;
    this.#now = now;
    this.#random = random;
    this.#timers = timers;
    this.#locks = locks;
    this.#lockName = `${channelName}-refresh`;
    this.#events = events;
    if (BroadcastChannel) {
      this.#channel = new BroadcastChannel(channelName);
      this.#channel.onmessage = (message) => this.#receiveFromTab(message.data);
    }
  }

  /** The token to send now (the latest held one, fresh or not), or null. */
  get latest() {
    return this.#held?.token ?? null;
  }

  /** A fresh token, fetching one first when the held one is missing or close to expiry. */
  async current() {
    if (this.#stoppedBy) throw this.#stoppedBy;
    if (this.#isFresh()) return this.#held.token;
    const record = await this.#fetchOnce(this.#held ? "refresh" : "initial");
    return record.token;
  }

  /** A token other than `rejectedToken`: a newer one already held, or one fetched for `reason`. */
  async replace(rejectedToken, reason) {
    // A fetch already under way may bring the replacement; waiting for it saves a second mint.
    if (this.#inFlight) await this.#inFlight.catch(() => {});
    if (this.#stoppedBy) throw this.#stoppedBy;
    if (this.#held && this.#held.token !== rejectedToken && this.#isFresh()) return this.#held.token;
    const record = await this.#fetchOnce(reason);
    return record.token;
  }

  /** Hidden tabs get their timers throttled or frozen; a tab coming back checks the time itself. */
  checkFreshness() {
    const stale = this.#held && !this.#isFresh();
    if (stale && !this.#stoppedBy && !this.#inFlight) this.#refreshDue({ spread: false });
  }

  stop(reason) {
    this.#stoppedBy ??= reason;
    this.#timers.cancel(this.#refreshTimer);
    this.#refreshTimer = null;
    this.#channel?.close();
    this.#channel = null;
  }

  #isFresh() {
    return this.#held !== null && this.#now() < this.#held.refreshAtMs;
  }

  #fetchOnce(reason) {
    this.#inFlight ??= this.#acquire(reason)
      .catch((error) => {
        if (error?.final) this.#events.onFinal(error);
        throw error;
      })
      .finally(() => {
        this.#inFlight = null;
      });
    return this.#inFlight;
  }

  #acquire(reason) {
    return reason === "refresh" && this.#locks ? this.#refreshUnderLock() : this.#mintAndShare(reason);
  }

  async #mintAndShare(reason) {
    const record = await this.#obtain(reason);
    if (this.#stoppedBy) throw this.#stoppedBy;
    this.#accept(record, { reason, mintedBy: "self" });
    const { token, expiresAt, skewMs } = record;
    this.#channel?.postMessage({ type: "token", token, expiresAt, skewMs, reason });
    return this.#held;
  }

  /** The caller gets its token as soon as it is minted; the lock is released a little later. */
  #refreshUnderLock() {
    return new Promise((resolve, reject) => {
      const refreshOrSkip = async () => {
        if (this.#stoppedBy) return reject(this.#stoppedBy);
        // Queued behind another tab that has just broadcast a new token: nothing left to do.
        if (this.#isFresh()) return resolve(this.#held);
        try {
          resolve(await this.#mintAndShare("refresh"));
        } catch (error) {
          return reject(error);
        }
        await this.#timers.sleep(BROADCAST_SETTLE_MS);
      };
      this.#locks.request(this.#lockName, refreshOrSkip).catch(reject);
    });
  }

  #receiveFromTab(message) {
    if (this.#stoppedBy || message?.type !== "token" || tokenShapeProblem(message)) return;
    if (!Number.isFinite(message.skewMs)) return;
    const { token, expiresAt, skewMs } = message;
    const record = { token, expiresAt, expiresAtMs: Date.parse(expiresAt), skewMs };
    // Adopt only what outlives our own token, and never a token that is already due for refresh.
    if (this.#held && record.expiresAtMs <= this.#held.expiresAtMs) return;
    if (record.expiresAtMs - (this.#now() + skewMs) <= this.#leewayMs) return;
    this.#accept(record, { reason: message.reason ?? "refresh", mintedBy: "tab" });
  }

  #withRefreshTime(record) {
    const lifetimeMs = record.expiresAtMs - (this.#now() + record.skewMs);
    // A leeway longer than half the lifetime would make every new token stale on arrival.
    const leewayMs = Math.min(this.#leewayMs, lifetimeMs / 2);
    return { ...record, refreshAtMs: record.expiresAtMs - record.skewMs - leewayMs };
  }

  #accept(record, { reason, mintedBy }) {
    this.#held = this.#withRefreshTime(record);
    this.#backgroundFailures = 0;
    this.#scheduleRefresh();
    this.#events.onToken(this.#held, { reason, mintedBy });
  }

  #scheduleRefresh() {
    this.#timers.cancel(this.#refreshTimer);
    const delayMs = this.#held.refreshAtMs - this.#now();
    this.#refreshTimer = this.#timers.after(delayMs, () => this.#refreshDue({ spread: true }));
  }

  #refreshDue({ spread }) {
    this.#refreshTimer = null;
    if (this.#isFresh()) return this.#scheduleRefresh(); // a capped timer woke early
    if (spread && !this.#locks) {
      // Whichever tab wakes first mints and broadcasts; the others' timers are then rescheduled.
      const delayMs = this.#random() * UNLOCKED_REFRESH_SPREAD_MS;
      this.#refreshTimer = this.#timers.after(delayMs, () => this.#refreshDue({ spread: false }));
      return;
    }
    this.#refreshInBackground();
  }

  async #refreshInBackground() {
    try {
      await this.#fetchOnce("refresh");
    } catch (error) {
      if (this.#stoppedBy) return; // final: reported once by onFinal
      this.#events.onBackgroundError(error);
      const delayMs = retryDelayMs(error, this.#backgroundFailures++, this.#random);
      this.#timers.cancel(this.#refreshTimer);
      this.#refreshTimer = this.#timers.after(delayMs, () => this.#refreshDue({ spread: false }));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Calls

function rpcErrorFrom(error, requestId) {
  const code = typeof error?.code === "string" ? error.code : "internal_error";
  const message = typeof error?.message === "string" ? error.message : "The service answered with an error.";
  const data = error?.data;
  return code === "unauthorized"
    ? new UnauthorizedError(message, data, { requestId })
    : new RpcError(code, message, data, { requestId });
}

function isEnvelope(body) {
  if (body === null || typeof body !== "object" || body.jsonrpc !== "2.0") return false;
  return "result" in body || "error" in body;
}

/** The `result` of a JSON-RPC answer to request `requestId`, or the error it carries. */
function resultOf(envelope, requestId) {
  const badResponse = (message) => new RpcError("bad_response", message, undefined, { requestId });
  if (!isEnvelope(envelope)) throw badResponse("The service's answer is not a JSON-RPC 2.0 envelope.");
  // A parse_error cannot echo the id (null); any other mismatch belongs to another request.
  const idMatches = envelope.id === requestId || (envelope.error && envelope.id === null);
  if (!idMatches) {
    throw badResponse(`The answer carries id ${JSON.stringify(envelope.id)}, not ${JSON.stringify(requestId)}.`);
  }
  if (envelope.error) throw rpcErrorFrom(envelope.error, requestId);
  return envelope.result;
}

/** One JSON-RPC call over HTTP. The endpoint reads only the Bearer header, so no cookies go along. */
async function postRpc({ fetch, url, requestId, method, params, token }) {
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: requestId, method, params }),
      credentials: "omit",
    });
  } catch (cause) {
    const message = `The service at ${url} is unreachable (${cause?.message ?? cause}).`;
    throw new RpcError("unavailable", message, undefined, { requestId, cause });
  }
  const envelope = await readJson(response);
  if (!isEnvelope(envelope) && !response.ok) {
    const message = `The service at ${url} answered HTTP ${response.status}.`;
    throw new RpcError("unavailable", message, { status: response.status }, { requestId });
  }
  return resultOf(envelope, requestId);
}

// ---------------------------------------------------------------------------------------------
// The WebSocket

const connectionLost = (requestId) =>
  new RpcError("unavailable", "The WebSocket closed before the answer arrived.", undefined, { requestId });

/** One WebSocket and the requests awaiting answers on it. Once disposed it ignores everything. */
class Connection {
  #socket;
  #pending = new Map();
  #nextId = 1;
  #disposed = false;

  constructor(WebSocket, url, { onOpen, onNotification, onClose }) {
    this.#socket = new WebSocket(url);
    this.#socket.addEventListener("open", () => {
      if (!this.#disposed) onOpen();
    });
    this.#socket.addEventListener("message", (event) => this.#receive(event.data, onNotification));
    this.#socket.addEventListener("close", (event) => {
      if (this.#disposed) return;
      this.#dispose();
      onClose(event.code);
    });
  }

  request(method, params) {
    if (this.#disposed) return Promise.reject(connectionLost(null));
    const id = String(this.#nextId++);
    const answer = deferred();
    this.#pending.set(id, answer);
    try {
      this.#socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    } catch {
      // Closed under our feet; its close event is on the way and will dispose this connection.
      this.#pending.delete(id);
      answer.reject(connectionLost(id));
    }
    return answer.promise;
  }

  close() {
    if (this.#disposed) return;
    this.#dispose();
    this.#socket.close(1000);
  }

  #receive(data, onNotification) {
    if (this.#disposed) return;
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      return;
    }
    const isNotification = typeof frame?.method === "string" && frame.id === undefined;
    if (isNotification) return onNotification(frame.method, frame.params ?? {});
    const waiter = this.#pending.get(frame?.id);
    if (!waiter) return;
    this.#pending.delete(frame.id);
    try {
      waiter.resolve(resultOf(frame, frame.id));
    } catch (error) {
      waiter.reject(error);
    }
  }

  #dispose() {
    this.#disposed = true;
    for (const [id, waiter] of this.#pending) waiter.reject(connectionLost(id));
    this.#pending.clear();
  }
}

/**
 * The live connection: authenticates with the first frame, re-authenticates on the open socket
 * after every refresh, reconnects with backoff after a drop and restores the subscriptions.
 * Only the current Connection is listened to; a superseded one is disposed and ignored.
 */
class LiveSocket {
  #url;
  #WebSocket;
  #tokens;
  #timers;
  #random;
  #events;
  #state = "idle";
  #wanted = false;
  #connection = null;
  #socketToken = null;
  /** Why the next attempt needs a new token ("reconnect" | "unauthorized"), or null. */
  #renewReason = null;
  #failedAttempts = 0;
  #reconnectTimer = null;
  #openWaiters = [];
  #subscriptions = new Map();
  #byServerId = new Map();
  #nextLocalId = 1;

  constructor({ url, WebSocket, tokens, timers, random, events }) {
    this.#url = url;
    this.#WebSocket = WebSocket;
    this.#tokens = tokens;
    this.#timers = timers;
    this.#random = random;
    this.#events = events;
  }

  get state() {
    return this.#state;
  }

  connect() {
    if (this.#state === "open") return Promise.resolve();
    const opened = deferred();
    this.#openWaiters.push(opened);
    if (!this.#wanted) {
      this.#wanted = true;
      this.#setState("connecting");
      this.#attempt();
    }
    return opened.promise;
  }

  subscribe(params, onEvent) {
    const id = `sub-${this.#nextLocalId++}`;
    const subscription = { id, params, onEvent, serverId: null, confirmed: false, answer: deferred() };
    subscription.handle = { id, unsubscribe: () => this.#unsubscribe(subscription) };
    this.#subscriptions.set(id, subscription);
    if (this.#state === "open") this.#sendSubscribe(this.#connection, subscription);
    else this.connect().catch(() => {}); // stop() rejects the subscription with the same reason
    return subscription.answer.promise;
  }

  /** A new token replaces the socket's credential without reconnecting. */
  reauthenticate(token) {
    const connection = this.#connection;
    if (this.#state !== "open" || token === this.#socketToken) return;
    this.#socketToken = token;
    connection.request("auth", { token }).catch((error) => {
      if (connection === this.#connection) this.#events.onError(error);
    });
  }

  /** Closes the open socket the way a network drop would; the reconnect logic takes over. */
  drop() {
    const connection = this.#connection;
    if (this.#state !== "open" || !connection) return;
    this.#connection = null;
    this.#renewReason = "reconnect";
    connection.close();
    this.#retryLater();
  }

  stop(reason, finalState) {
    this.#wanted = false;
    this.#timers.cancel(this.#reconnectTimer);
    this.#connection?.close();
    this.#connection = null;
    for (const waiter of this.#openWaiters.splice(0)) waiter.reject(reason);
    for (const subscription of this.#subscriptions.values()) {
      if (!subscription.confirmed) subscription.answer.reject(reason);
    }
    this.#subscriptions.clear();
    this.#byServerId.clear();
    this.#setState(finalState);
  }

  #setState(state) {
    if (state === this.#state) return;
    this.#state = state;
    this.#events.onState(state);
  }

  async #attempt() {
    this.#reconnectTimer = null;
    let token;
    try {
      token = await this.#tokenForAttempt();
    } catch (error) {
      if (!this.#wanted) return; // a final error has already stopped everything and been reported
      this.#events.onError(error);
      return this.#retryLater(error);
    }
    if (!this.#wanted) return;
    this.#socketToken = token;
    try {
      this.#connection = this.#open(token);
    } catch (error) {
      this.#events.onError(error); // e.g. a malformed wsUrl
      this.#retryLater();
    }
  }

  #open(token) {
    const connection = new Connection(this.#WebSocket, this.#url, {
      onOpen: () => this.#authenticate(connection, token),
      onNotification: (method, params) => this.#onNotification(connection, method, params),
      onClose: (code) => this.#onClose(connection, code),
    });
    return connection;
  }

  async #tokenForAttempt() {
    if (!this.#renewReason) return this.#tokens.current();
    const token = await this.#tokens.replace(this.#socketToken, this.#renewReason);
    this.#renewReason = null;
    return token;
  }

  async #authenticate(connection, token) {
    try {
      await connection.request("auth", { token });
    } catch (error) {
      if (connection !== this.#connection) return;
      return this.#drop(connection, error instanceof UnauthorizedError ? "unauthorized" : null);
    }
    if (connection !== this.#connection) return;
    this.#failedAttempts = 0;
    this.#setState("open");
    for (const waiter of this.#openWaiters.splice(0)) waiter.resolve();
    // A refresh may have landed while the socket was opening.
    if (this.#tokens.latest) this.reauthenticate(this.#tokens.latest);
    for (const subscription of this.#subscriptions.values()) this.#sendSubscribe(connection, subscription);
  }

  #onNotification(connection, method, params) {
    if (method === "auth.expired") return this.#drop(connection, "unauthorized");
    if (method === "matches.event") this.#deliver(params);
  }

  #onClose(connection, code) {
    if (connection !== this.#connection || !this.#wanted) return;
    this.#connection = null;
    if (code === CLOSE_UNAUTHORIZED) this.#renewReason = "unauthorized";
    // Only a drop of an open socket asks for a new token: one mint per drop, not per failed attempt.
    else if (this.#state === "open") this.#renewReason = "reconnect";
    this.#retryLater();
  }

  #drop(connection, renewReason) {
    connection.close();
    this.#connection = null;
    this.#renewReason = renewReason ?? this.#renewReason;
    this.#retryLater();
  }

  #retryLater(error = null) {
    this.#setState("reconnecting");
    for (const subscription of this.#subscriptions.values()) subscription.serverId = null;
    this.#byServerId.clear();
    const delayMs = retryDelayMs(error, this.#failedAttempts++, this.#random);
    this.#reconnectTimer = this.#timers.after(delayMs, () => this.#attempt());
  }

  async #sendSubscribe(connection, subscription) {
    let result;
    try {
      result = await connection.request("matches.subscribe", subscription.params);
    } catch (error) {
      // A lost connection is not the subscription's fault: the next one restores it.
      if (connection !== this.#connection || error.code === "unavailable") return;
      this.#subscriptions.delete(subscription.id);
      return subscription.confirmed ? this.#events.onError(error) : subscription.answer.reject(error);
    }
    if (connection !== this.#connection) return;
    if (!this.#subscriptions.has(subscription.id)) {
      // Unsubscribed while the server was still saying yes.
      const unsubscribed = connection.request("matches.unsubscribe", { subscriptionId: result.subscriptionId });
      return unsubscribed.catch(() => {});
    }
    subscription.serverId = result.subscriptionId;
    this.#byServerId.set(result.subscriptionId, subscription);
    if (!subscription.confirmed) {
      subscription.confirmed = true;
      subscription.answer.resolve(subscription.handle);
    }
  }

  async #unsubscribe(subscription) {
    if (!this.#subscriptions.delete(subscription.id) || subscription.serverId === null) return;
    this.#byServerId.delete(subscription.serverId);
    if (this.#state !== "open") return;
    try {
      await this.#connection.request("matches.unsubscribe", { subscriptionId: subscription.serverId });
    } catch (error) {
      if (error.code !== "unavailable") throw error; // a closed socket drops the subscription anyway
    }
  }

  #deliver(params) {
    const subscription = this.#byServerId.get(params?.subscriptionId);
    if (subscription) callSafely(subscription.onEvent, { ...params, subscriptionId: subscription.id });
  }
}

// ---------------------------------------------------------------------------------------------
// The client

const EVENT_NAMES = ["state", "error", "token"];

function checkOptions({ authEndpoint, fetchToken, refreshLeewaySec }) {
  if ((authEndpoint == null) === (fetchToken == null)) {
    throw new TypeError(
      'SportsClient needs exactly one of authEndpoint (your mint route, e.g. "/api/sports-token") ' +
        "or fetchToken (a function returning a promise of {token, expiresAt}).",
    );
  }
  if (fetchToken != null && typeof fetchToken !== "function") {
    throw new TypeError("fetchToken must be a function returning a promise of {token, expiresAt}.");
  }
  if (!(refreshLeewaySec >= 0)) {
    throw new TypeError("refreshLeewaySec must be a number of seconds, 0 or more.");
  }
}

/**
 * The browser flavour of the sports-data client. It holds no API key: tokens come from the
 * integrator's mint route (`authEndpoint`) or from `fetchToken`, and are kept fresh on its own.
 */
export class SportsClient {
  #baseUrl;
  #fetch;
  #timers;
  #tokens;
  #live;
  #document;
  #onVisibilityChange = () => {
    if (this.#document.visibilityState === "visible") this.#tokens.checkFreshness();
  };
  #listeners = new Map(EVENT_NAMES.map((name) => [name, new Set()]));
  #nextRequestId = 1;
  #stoppedBy = null;

  /** `matches.list` and friends, named as the service names them. */
  matches = {
    list: ({ sports, limit, cursor } = {}) => {
      return this.rpc("matches.list", dropUndefined({ sports, limit, cursor }));
    },
  };

  constructor(options = {}) {
    const { authEndpoint, fetchToken, authHeaders, refreshLeewaySec = DEFAULT_REFRESH_LEEWAY_SEC } = options;
    checkOptions({ authEndpoint, fetchToken, refreshLeewaySec });
    const baseUrl = options.baseUrl ?? globalThis.location?.origin;
    if (!baseUrl) {
      throw new TypeError('baseUrl is required when the page has no origin (e.g. "https://sports.example.com").');
    }
    this.#baseUrl = baseUrl.replace(/\/+$/, "");
    this.#fetch = option(options, "fetch", globalThis.fetch?.bind(globalThis));
    const now = option(options, "now", () => Date.now());
    const random = option(options, "random", Math.random);
    this.#timers = new Timers(
      option(options, "setTimeout", (callback, delayMs) => globalThis.setTimeout(callback, delayMs)),
      option(options, "clearTimeout", (handle) => globalThis.clearTimeout(handle)),
    );

    const obtain = fetchToken
      ? (reason) => tokenFromCallback({ fetchToken, reason, now })
      : (reason) => mintFromRoute({ fetch: this.#fetch, endpoint: authEndpoint, authHeaders, reason, now });
    this.#tokens = new TokenKeeper({
      obtain,
      leewayMs: refreshLeewaySec * 1000,
      now,
      random,
      timers: this.#timers,
      locks: option(options, "locks", globalThis.navigator?.locks),
      BroadcastChannel: option(options, "BroadcastChannel", globalThis.BroadcastChannel),
      channelName: options.channelName ?? DEFAULT_CHANNEL_NAME,
      events: {
        onToken: (record, details) => this.#tokenArrived(record, details),
        onFinal: (error) => this.#refusedForGood(error),
        onBackgroundError: (error) => this.#emit("error", error),
      },
    });
    this.#live = new LiveSocket({
      url: options.wsUrl ?? defaultWsUrl(this.#baseUrl),
      WebSocket: option(options, "WebSocket", globalThis.WebSocket),
      tokens: this.#tokens,
      timers: this.#timers,
      random,
      events: {
        onState: (state) => this.#emit("state", state),
        onError: (error) => this.#emit("error", error),
      },
    });
    this.#document = option(options, "document", globalThis.document);
    this.#document?.addEventListener?.("visibilitychange", this.#onVisibilityChange);
  }

  /** "idle" | "connecting" | "open" | "reconnecting" | "unauthorized" | "closed" */
  get state() {
    return this.#live.state;
  }

  /** Listens to "state", "error" or "token"; returns the function that stops listening. */
  on(eventName, listener) {
    const listeners = this.#listeners.get(eventName);
    if (!listeners) {
      throw new TypeError(`Unknown event "${eventName}"; use one of ${EVENT_NAMES.join(", ")}.`);
    }
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  /**
   * Calls `method` over HTTP and returns its `result`. A call refused as unauthorized is retried
   * once with a newly minted token, because the held one may have died in flight.
   */
  async rpc(method, params = {}) {
    this.#throwIfStopped();
    const token = await this.#tokens.current();
    try {
      return await this.#post(method, params, token);
    } catch (error) {
      if (!(error instanceof UnauthorizedError)) throw error;
    }
    return this.#post(method, params, await this.#tokens.replace(token, "unauthorized"));
  }

  /** Opens the WebSocket; resolves once it is authenticated. Reconnects until close(). */
  async connect() {
    this.#throwIfStopped();
    return this.#live.connect();
  }

  /**
   * Subscribes to match events (connecting first if needed). `onEvent` receives
   * {subscriptionId, kind, match} with the local id, which survives reconnects.
   */
  async subscribe({ sports } = {}, onEvent) {
    this.#throwIfStopped();
    if (typeof onEvent !== "function") {
      throw new TypeError("subscribe(filter, onEvent) needs an onEvent function.");
    }
    return this.#live.subscribe(dropUndefined({ sports }), onEvent);
  }

  /**
   * Drops the WebSocket as a network failure would, to watch (or test) the client reconnect,
   * fetch a token with reason "reconnect" and restore its subscriptions.
   */
  dropConnection() {
    this.#live.drop();
  }

  /** Stops everything for good: timers, socket (no reconnect), tab channel, visibility listener. */
  close() {
    this.#shutdown(new RpcError("closed", "This SportsClient was closed; create a new one."), "closed");
  }

  #post(method, params, token) {
    const requestId = String(this.#nextRequestId++);
    return postRpc({ fetch: this.#fetch, url: this.#baseUrl + RPC_PATH, requestId, method, params, token });
  }

  #tokenArrived(record, { reason, mintedBy }) {
    // The fingerprint (the signature's last characters) lets a page show which token it holds
    // without ever displaying the token itself.
    this.#emit("token", { expiresAt: record.expiresAt, reason, mintedBy, fingerprint: record.token.slice(-8) });
    this.#live.reauthenticate(record.token);
  }

  /** A 401/403 from the mint route: retrying cannot help until the user signs in again. */
  #refusedForGood(error) {
    if (this.#stoppedBy) return;
    this.#shutdown(error, "unauthorized");
    this.#emit("error", error);
  }

  /** Closing and a final refusal end the same way: nothing keeps running, every call rejects. */
  #shutdown(reason, finalState) {
    this.#stoppedBy = reason;
    this.#tokens.stop(reason);
    this.#live.stop(reason, finalState);
    this.#timers.cancelAll();
    this.#document?.removeEventListener?.("visibilitychange", this.#onVisibilityChange);
  }

  #throwIfStopped() {
    if (this.#stoppedBy) throw this.#stoppedBy;
  }

  #emit(eventName, payload) {
    for (const listener of [...this.#listeners.get(eventName)]) callSafely(listener, payload);
  }
}
