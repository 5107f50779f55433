/**
 * The live connection: authenticates with the first frame, re-authenticates on the open socket
 * after every refresh, reconnects with backoff after a drop and restores the subscriptions.
 *
 * It gives up where retrying cannot help (auth refused twice in a row, close codes 1008 and 4403),
 * waits as long as the service asks (retryAfter), says "limited" while the service refuses the
 * socket for the account's limits (4429), waits for the network while the page is offline,
 * and treats a socket that has been silent for 60 s as dead. Only the current Connection is
 * listened to; a superseded one is closed and ignored.
 */

import { Connection } from "./connection.js";
import { CLOSE, ERROR, NOTIFICATION, REASON, STATE, SUBSCRIPTION } from "./constants.js";
import { RpcError, UnauthorizedError } from "./errors.js";
import { ReconnectSchedule } from "./reconnect-schedule.js";
import { Subscriptions } from "./subscriptions.js";

/** @import { ConnectionState } from "./sports-client.js" */
/** @import { Timers } from "./timing.js" */
/** @import { TokenKeeper } from "./token-keeper.js" */

/** @type {Set<number | null>} */
const FINAL_CLOSE_CODES = new Set([CLOSE.POLICY_VIOLATION, CLOSE.FORBIDDEN]);
/** Notifications after which the server closes with 4401: the socket's credential is gone. */
/** @type {Set<string>} */
const CREDENTIAL_ENDED = new Set([NOTIFICATION.AUTH_EXPIRED, NOTIFICATION.AUTH_REVOKED]);
/** The states in which the page wants a socket: the client connects, and reconnects after a drop. */
/** @type {Set<string>} */
const WANTED_STATES = new Set([STATE.CONNECTING, STATE.OPEN, STATE.RECONNECTING, STATE.LIMITED]);
/** The states between two attempts: a timer (or the network coming back) starts the next one. */
/** @type {Set<string>} */
const RETRYING_STATES = new Set([STATE.RECONNECTING, STATE.LIMITED]);
/** The server pings after 25 s of silence, so a minute without any frame means a dead socket. */
const SILENCE_LIMIT_MS = 60_000;
/** Refusals of a subscription that no retry can change. */
/** @type {Set<string>} */
const FINAL_SUBSCRIBE_CODES = new Set([ERROR.INVALID_PARAMS, ERROR.FORBIDDEN]);
/** @type {Set<string>} */
const CONNECTION_LOST_CODES = new Set([ERROR.UNAVAILABLE, ERROR.CLOSED]);

/** A 4429 close: the rate_limited answer that came before it (with its retryAfter), or one like it. */
function rateLimitedClose(lastError) {
  if (lastError?.code === ERROR.RATE_LIMITED) return lastError;
  return new RpcError(ERROR.RATE_LIMITED, "The service closed the socket with code 4429 (rate limited).", {
    closeCode: CLOSE.RATE_LIMITED,
  });
}

/** The service's rate_limited answer (an RpcError), as opposed to anything else an attempt can fail with. */
const isRateLimited = (error) => error instanceof RpcError && error.code === ERROR.RATE_LIMITED;

const offline = () =>
  new RpcError(ERROR.UNAVAILABLE, "The browser is offline; the client reconnects when it is back online.");

/** The client's one WebSocket over time: connect(), subscribe(), and what happens when it drops. */
export class LiveSocket {
  #url;
  #WebSocket;
  #noWebSocket;
  #tokens;
  #timers;
  #now;
  #timeoutMs;
  #events;
  /** @type {ConnectionState} */
  #state = STATE.IDLE;
  #online = true;
  #attempting = false;
  /** @type {Connection | null} */
  #connection = null;
  /** The token last sent on the socket. @type {string | null} */
  #socketToken = null;
  /** The token the server last accepted on the socket: the one a credential-ended notice is about. */
  /** @type {string | null} */
  #acceptedToken = null;
  /**
   * Why the next attempt needs a token other than `from`, or null.
   * @type {{ reason: "reconnect" | "unauthorized", from: string | null } | null}
   */
  #renewal = null;
  #schedule;
  #retryTimer = null;
  #openTimer = null;
  #openWaiters = [];
  #subscriptions;

  /**
   * @param {object} options
   * @param {string} options.url the service's WebSocket address
   * @param {Function | null} options.WebSocket its constructor, or null when there is none
   * @param {string} options.noWebSocket what connect() says when there is none, and how to fix it
   * @param {TokenKeeper} options.tokens from token-keeper.js
   * @param {Timers} options.timers from timing.js
   * @param {() => number} options.now
   * @param {() => number} options.random
   * @param {number} options.timeoutMs requestTimeoutSec: for opening, and for each frame's answer
   * @param {{onState: Function, onError: Function}} options.events
   */
  constructor({ url, WebSocket, noWebSocket, tokens, timers, now, random, timeoutMs, events }) {
    this.#url = url;
    this.#WebSocket = WebSocket;
    this.#noWebSocket = noWebSocket;
    this.#tokens = tokens;
    this.#timers = timers;
    this.#now = now;
    this.#timeoutMs = timeoutMs;
    this.#events = events;
    this.#subscriptions = new Subscriptions({ timers, now, random });
    this.#schedule = new ReconnectSchedule({ now, random });
  }

  get state() {
    return this.#state;
  }

  /** Resolves once authenticated; rejects when this attempt fails (the client keeps trying). */
  connect() {
    if (this.#state === STATE.OPEN) return Promise.resolve();
    if (!this.#WebSocket) return Promise.reject(new TypeError(this.#noWebSocket));
    return new Promise((resolve, reject) => {
      this.#openWaiters.push({ resolve, reject });
      if (this.#wanted()) {
        // Offline, no attempt is scheduled; the page asking is reason enough to try.
        if (!this.#online && RETRYING_STATES.has(this.#state) && !this.#retryTimer) this.#retrySoon();
        return;
      }
      if (this.#state === STATE.UNAUTHORIZED) this.#startOver();
      this.#setState(STATE.CONNECTING);
      this.#attemptNow();
    });
  }

  /** Resolves with the handle once the server says yes (connecting first if needed). */
  subscribe(params, onEvent) {
    if (!this.#WebSocket) return Promise.reject(new TypeError(this.#noWebSocket));
    const subscription = this.#subscriptions.add(params, onEvent, (it) => this.#unsubscribe(it));
    if (this.#state === STATE.OPEN) this.#sendSubscribe(this.#connection, subscription);
    else this.connect().catch(() => {}); // a failed attempt rejects the subscription with the same error
    return subscription.confirmation;
  }

  /** A new token replaces the socket's credential without reconnecting. */
  reauthenticate(token) {
    const connection = this.#connection;
    if (this.#state !== STATE.OPEN || !connection || token === this.#socketToken) return;
    this.#socketToken = token;
    connection.request("auth", { token }).then(
      () => {
        if (connection === this.#connection) this.#acceptedToken = token;
      },
      (error) => {
        if (connection !== this.#connection) return;
        if (error instanceof UnauthorizedError) return this.#lost(connection, { refusal: error });
        if (error.code === ERROR.TIMEOUT) return this.#lost(connection, {}); // no answer: a dead socket
        if (!CONNECTION_LOST_CODES.has(error.code)) this.#events.onError(error);
      },
    );
  }

  /** Closes the open socket the way a network drop would; the reconnect logic takes over. */
  drop() {
    if (this.#state === STATE.OPEN && this.#connection) this.#lost(this.#connection, {});
  }

  /** The browser says the network is back: a reconnect waiting for its timer goes now. */
  wentOnline() {
    this.#online = true;
    if (!RETRYING_STATES.has(this.#state) || this.#connection || this.#attempting) return;
    this.#retrySoon();
  }

  /** The browser says the network is gone: no reconnect attempt until it comes back. */
  wentOffline() {
    this.#online = false;
    if (!this.#retryTimer) return;
    this.#timers.cancel(this.#retryTimer);
    this.#retryTimer = null;
    this.#rejectWaiters(offline());
  }

  /** Ends everything; `finalState` is "closed" (by the page) or "unauthorized" (the user signed out). */
  stop(reason, finalState) {
    this.#cancelTimers();
    this.#connection?.close(() => reason);
    this.#connection = null;
    for (const waiter of this.#openWaiters.splice(0)) waiter.reject(reason);
    this.#subscriptions.endAll(reason, finalState === STATE.CLOSED ? SUBSCRIPTION.CLOSED : SUBSCRIPTION.FAILED);
    this.#setState(finalState);
  }

  #wanted() {
    return WANTED_STATES.has(this.#state);
  }

  #setState(state) {
    if (state === this.#state) return;
    this.#state = state;
    this.#events.onState(state);
  }

  /** The next attempt now, or when the service's retryAfter has passed. */
  #retrySoon() {
    this.#timers.cancel(this.#retryTimer);
    this.#retryTimer = null;
    const waitMs = this.#schedule.waitMs();
    if (waitMs > 0) this.#retryTimer = this.#timers.after(waitMs, () => this.#attemptNow());
    else this.#attemptNow();
  }

  #startOver() {
    this.#schedule.startOver();
    this.#subscriptions.restartAll();
  }

  async #attemptNow() {
    this.#retryTimer = null;
    if (!this.#wanted() || this.#connection || this.#attempting) return;
    this.#attempting = true;
    let token;
    try {
      token = await this.#tokenForAttempt();
    } catch (error) {
      this.#attempting = false;
      if (this.#wanted()) this.#attemptFailed(error); // a final refusal has stopped everything already
      return;
    }
    this.#attempting = false;
    if (!this.#wanted()) return;
    this.#socketToken = token;
    try {
      this.#connection = this.#open(token);
    } catch (error) {
      this.#attemptFailed(error); // e.g. a malformed wsUrl
    }
  }

  async #tokenForAttempt() {
    const renewal = this.#renewal;
    if (!renewal) return this.#tokens.current();
    try {
      const token = await this.#tokens.replace(renewal.from, renewal.reason);
      this.#renewal = null;
      return token;
    } catch (error) {
      // The mint route is down, but the token the socket had is still valid: go with it now, and
      // try to mint again at the next attempt if this one fails too.
      const stillValid = renewal.reason === REASON.RECONNECT && !error?.final ? this.#tokens.validToken() : null;
      if (!stillValid) throw error;
      this.#events.onError(error);
      return stillValid;
    }
  }

  #open(token) {
    const connection = new Connection({
      WebSocket: this.#WebSocket,
      url: this.#url,
      timers: this.#timers,
      now: this.#now,
      timeoutMs: this.#timeoutMs,
      onOpen: () => {
        this.#timers.cancel(this.#openTimer);
        this.#authenticate(connection, token);
      },
      onNotification: (method, params) => this.#onNotification(connection, method, params),
      onClose: (code) => {
        if (connection === this.#connection) this.#lost(connection, { closeCode: code });
      },
    });
    this.#openTimer = this.#timers.after(this.#timeoutMs, () => {
      if (connection !== this.#connection) return;
      const seconds = this.#timeoutMs / 1000;
      const error = new RpcError(ERROR.TIMEOUT, `The WebSocket did not open within ${seconds} s (requestTimeoutSec).`);
      this.#lost(connection, { error });
    });
    return connection;
  }

  async #authenticate(connection, token) {
    try {
      await connection.request("auth", { token });
    } catch (error) {
      if (connection !== this.#connection) return;
      return this.#lost(connection, error instanceof UnauthorizedError ? { refusal: error } : { error });
    }
    if (connection !== this.#connection) return;
    this.#schedule.authenticated();
    this.#acceptedToken = token;
    this.#renewal = null;
    connection.watchForSilence(SILENCE_LIMIT_MS, () => {
      if (connection === this.#connection) this.#lost(connection, {}); // half-open: died without a close frame
    });
    this.#setState(STATE.OPEN);
    for (const waiter of this.#openWaiters.splice(0)) waiter.resolve();
    // A refresh may have landed while the socket was opening.
    if (this.#tokens.latest) this.reauthenticate(this.#tokens.latest);
    for (const subscription of this.#subscriptions.all()) {
      subscription.whenAllowed(() => this.#resubscribe(connection, subscription));
    }
  }

  /** Subscribes on `connection`, unless it has been replaced meanwhile. */
  #resubscribe(connection, subscription) {
    if (connection === this.#connection) this.#sendSubscribe(connection, subscription);
  }

  #onNotification(connection, method, params) {
    if (connection !== this.#connection) return;
    if (CREDENTIAL_ENDED.has(method)) {
      const message = `The service ended the socket's credential (${method}).`;
      // About the token it had accepted: one sent since (a refresh) may not have been read yet.
      const refusal = new UnauthorizedError(message, params);
      return this.#lost(connection, { refusal, refusedToken: this.#acceptedToken });
    }
    if (method === NOTIFICATION.MATCH_EVENT) this.#subscriptions.deliver(params);
  }

  /**
   * The current connection is over, for one of these reasons: `refusal` (auth refused, 4401, the
   * credential ended), `closeCode` (closed by the server or the network), `error` (the attempt
   * failed: timeout, rate_limited, ...), or nothing (dropped by us: dead or dropConnection()).
   * `refusedToken` is the token a refusal is about, when it is not the one last sent.
   */
  /**
   * @param {Connection} connection
   * @param {{ refusal?: UnauthorizedError | null, refusedToken?: string | null, closeCode?: number | null,
   *   error?: unknown }} why
   */
  #lost(connection, { refusal = null, refusedToken = this.#socketToken, closeCode = null, error = null }) {
    const wasOpen = this.#state === STATE.OPEN;
    connection.close();
    this.#connection = null;
    this.#timers.cancel(this.#openTimer);
    this.#schedule.ended();
    if (FINAL_CLOSE_CODES.has(closeCode)) {
      const message = `The service closed the socket with code ${closeCode}: this credential may not connect.`;
      return this.#giveUp(new UnauthorizedError(message, { closeCode }));
    }
    if (closeCode === CLOSE.UNAUTHORIZED) {
      // The answer that came just before the close says why, when there was one.
      const said = connection.lastError instanceof UnauthorizedError ? connection.lastError : null;
      refusal = said ?? new UnauthorizedError("The service closed the socket with code 4401 (unauthorized).", { closeCode });
    }
    if (refusal) return this.#refused(refusal, refusedToken);
    if (closeCode === CLOSE.RATE_LIMITED) error = rateLimitedClose(connection.lastError);
    // The service refused the socket for the account's limits: `auth` answered rate_limited (the
    // connections or the requests per minute), or the 4429 close that follows it.
    const retryState = closeCode === CLOSE.RATE_LIMITED || isRateLimited(error) ? STATE.LIMITED : STATE.RECONNECTING;
    if (error && !wasOpen) return this.#attemptFailed(error, retryState);
    if (error) this.#schedule.deferFor(error);
    if (!wasOpen) {
      const message = `The WebSocket closed before it was authenticated (code ${closeCode}).`;
      return this.#attemptFailed(new RpcError(ERROR.UNAVAILABLE, message, { closeCode }));
    }
    this.#renewal = { reason: REASON.RECONNECT, from: this.#socketToken };
    this.#scheduleRetry(retryState);
  }

  /**
   * `token` was refused: once is retried with another token (a newer one held, else one newly
   * minted), twice in a row is final.
   */
  #refused(refusal, token) {
    this.#tokens.refuse(token);
    if (this.#schedule.refused()) return this.#giveUp(refusal);
    this.#renewal = { reason: REASON.UNAUTHORIZED, from: token };
    this.#scheduleRetry();
  }

  /** @param {unknown} error @param {ConnectionState} retryState "reconnecting", or "limited" (4429) */
  #attemptFailed(error, retryState = STATE.RECONNECTING) {
    this.#schedule.deferFor(error);
    this.#rejectWaiters(error);
    this.#scheduleRetry(retryState);
    this.#events.onError(error); // last: a listener may close() the client
  }

  /** Nothing more by itself: no socket, no mint, until the page calls connect() again. */
  #giveUp(error) {
    this.#cancelTimers();
    this.#tokens.refuse(this.#socketToken);
    this.#tokens.pause();
    this.#subscriptions.suspendAll();
    this.#rejectWaiters(error);
    this.#setState(STATE.UNAUTHORIZED);
    this.#events.onError(error);
  }

  /** Pending connect() calls and subscriptions not yet confirmed settle with this attempt's error. */
  #rejectWaiters(error) {
    for (const waiter of this.#openWaiters.splice(0)) waiter.reject(error);
    this.#subscriptions.failUnconfirmed(error);
  }

  /** @param {ConnectionState} retryState */
  #scheduleRetry(retryState = STATE.RECONNECTING) {
    this.#subscriptions.detachAll();
    this.#setState(retryState);
    if (!this.#wanted()) return; // a state listener closed the client
    if (!this.#online) return this.#rejectWaiters(offline()); // wentOnline() schedules the attempt
    this.#retryTimer = this.#timers.after(this.#schedule.nextDelayMs(), () => this.#attemptNow());
  }

  #cancelTimers() {
    for (const timer of [this.#retryTimer, this.#openTimer]) this.#timers.cancel(timer);
    this.#retryTimer = this.#openTimer = null;
  }

  async #sendSubscribe(connection, subscription) {
    let result;
    try {
      result = await connection.request("matches.subscribe", subscription.params);
    } catch (error) {
      if (connection !== this.#connection || !this.#subscriptions.has(subscription)) return;
      if (CONNECTION_LOST_CODES.has(error.code)) return; // the next connection restores it
      return this.#subscribeRefused(connection, subscription, error);
    }
    if (connection !== this.#connection) return;
    if (!this.#subscriptions.has(subscription)) {
      // Unsubscribed while the server was still saying yes.
      const unsubscribed = connection.request("matches.unsubscribe", { subscriptionId: result.subscriptionId });
      return unsubscribed.catch(() => {});
    }
    this.#subscriptions.activate(subscription, result.subscriptionId);
  }

  /** A first subscribe rejects its caller; a restore is retried, unless no retry can help. */
  #subscribeRefused(connection, subscription, error) {
    if (!subscription.confirmed) {
      this.#subscriptions.remove(subscription);
      return subscription.fail(error);
    }
    if (FINAL_SUBSCRIBE_CODES.has(error.code)) {
      this.#subscriptions.remove(subscription);
      subscription.fail(error);
    } else {
      subscription.retryLater(error, () => this.#resubscribe(connection, subscription));
    }
    this.#events.onError(error);
  }

  async #unsubscribe(subscription) {
    const serverId = subscription.serverId;
    if (!this.#subscriptions.remove(subscription)) return;
    subscription.close();
    const connection = this.#connection;
    if (serverId === null || this.#state !== STATE.OPEN || !connection) return;
    try {
      await connection.request("matches.unsubscribe", { subscriptionId: serverId });
    } catch (error) {
      // A closed socket drops the subscription anyway.
      if (!CONNECTION_LOST_CODES.has(error.code)) throw error;
    }
  }
}
