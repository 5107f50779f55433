/**
 * The token keeper: holds the current token and decides when a new one is needed. One mint in
 * flight per tab, bounded in time; the tabs of an origin share it (tab-sharing.js).
 *
 * A held token is *fresh* until `refreshAtMs` and *valid* until it expires (both on the server's
 * clock). Between the two a refresh runs in the background; calls keep using the valid token, and a
 * refresh that fails is retried with backoff, not once per call.
 *
 * `refreshAtMs` is the token's half-life (halfway from its `iat` to its expiry), unless the page set
 * a leeway (`refreshLeewaySec`): then that long before its expiry. The mint route hands a token out
 * again until its half-life and mints after it, and rides through an upstream outage with the held
 * token while that has more than a minute left: asking at the half-life keeps half a token's life in
 * hand whenever an outage starts (ttl 600: the route answers for at least 240 s). A refresh answered
 * with a token already past its half-life (the one held, handed back) means the route could not
 * mint: the token is kept and the route asked again on the backoff, never at once and never after
 * the token expires.
 */

import { REASON, REFRESH } from "./constants.js";
import { AuthEndpointError } from "./errors.js";
import { askAgainDelayMs, retryAfterSec, retryDelayMs } from "./timing.js";

/** @import { TabSharing } from "./tab-sharing.js" */
/** @import { Timers } from "./timing.js" */

/**
 * A token as the keeper holds it: the answer, its expiry and its issue (server milliseconds; issue
 * null when unknown), the server's clock skew, and when to refresh it (local milliseconds).
 * @typedef {{ token: string, expiresAt: string, expiresAtMs: number, skewMs: number, issuedAtMs: number | null,
 *   refreshAtMs: number }} HeldToken
 */

/** Holds one token at a time: current() for a call, replace() after a refusal. */
export class TokenKeeper {
  #source;
  #leewayMs;
  #timeoutMs;
  #waitForRefreshMs;
  #now;
  #random;
  #timers;
  #tabs;
  #events;
  /** {token, expiresAt, expiresAtMs, skewMs, refreshAtMs}, or null before the first token. */
  /** @type {HeldToken | null} */
  #held = null;
  /** The service refused this token: it is never sent again, the next use mints afresh. */
  /** @type {string | null} */
  #refusedToken = null;
  /** @type {"on-schedule" | "retrying" | "paused" | "stopped"} */
  #phase = REFRESH.ON_SCHEDULE;
  /** @type {Error | null} */
  #stopReason = null;
  /** @type {Promise<HeldToken> | null} */
  #inFlight = null;
  /** @type {AbortController | null} */
  #mintAbort = null;
  /** The next scheduled refresh, or the backoff timer of a failed one (phase RETRYING). */
  /** @type {unknown} */
  #refreshTimer = null;
  #refreshFailures = 0;
  /** The mint route's Retry-After: {untilMs, status}; no mint before then, whoever asks. */
  /** @type {{ untilMs: number, status: number } | null} */
  #mintDeferral = null;

  /**
   * @param {object} options
   * @param {{name: string, mint: Function}} options.source where tokens come from (mint.js)
   * @param {number | null} options.leewayMs refresh this long before expiry; null: at the token's half-life
   * @param {number} options.timeoutMs a mint not settled by then fails (authTimeoutSec)
   * @param {number} options.waitForRefreshMs a call waits for a refresh only when the held token
   *   expires within this (requestTimeoutSec); otherwise it goes at once with the held token
   * @param {() => number} options.now
   * @param {() => number} options.random
   * @param {Timers} options.timers from timing.js
   * @param {TabSharing} options.tabs from tab-sharing.js
   * @param {{onToken: Function, onFinal: Function, onBackgroundError: Function}} options.events
   */
  constructor({ source, leewayMs, timeoutMs, waitForRefreshMs, now, random, timers, tabs, events }) {
    this.#source = source;
    this.#leewayMs = leewayMs;
    this.#timeoutMs = timeoutMs;
    this.#waitForRefreshMs = waitForRefreshMs;
    this.#now = now;
    this.#random = random;
    this.#timers = timers;
    this.#tabs = tabs;
    this.#events = events;
    tabs.listen((record, reason) => this.#receiveFromTab(record, reason));
  }

  /** The token to send now (the latest usable one, fresh or not), or null. */
  get latest() {
    return this.#usable() ? this.#record.token : null;
  }

  /** A token to send: the held one while it is fresh or a refresh is under way, else a new one. */
  async current() {
    this.#resume();
    if (this.#stopReason) throw this.#stopReason;
    if (this.#usable() && this.#isFresh()) return this.#record.token;
    if (this.#usable() && this.#isValid()) return this.#refreshedOrHeld();
    const record = await this.#fetchOnce(this.#reasonForNewToken());
    return record.token;
  }

  /** A token other than `rejectedToken`: a newer one already held, or one fetched for `reason`. */
  async replace(rejectedToken, reason) {
    this.#resume();
    // A fetch already under way may bring the replacement; waiting for it saves a second mint.
    if (this.#inFlight) await this.#inFlight.catch(() => {});
    if (this.#stopReason) throw this.#stopReason;
    if (this.#usable() && this.#record.token !== rejectedToken && this.#isFresh()) return this.#record.token;
    const record = await this.#fetchOnce(reason);
    return record.token;
  }

  /** The held token while it is valid (fresh or not), else null. */
  validToken() {
    return this.#usable() && this.#isValid() ? this.#record.token : null;
  }

  /** The service refused `token`: never send it again. */
  refuse(token) {
    if (this.#held?.token === token) this.#refusedToken = token;
  }

  /** No more minting by timer until current() or replace() is called (the socket gave up). */
  pause() {
    if (this.#phase === REFRESH.STOPPED) return;
    this.#phase = REFRESH.PAUSED;
    this.#cancelRefreshTimer();
  }

  /** Hidden tabs get their timers throttled or frozen; a tab coming back checks the time itself. */
  checkFreshness() {
    if (this.#phase !== REFRESH.ON_SCHEDULE || this.#inFlight) return;
    if (this.#usable() && !this.#isFresh()) this.#refreshDue({ spread: false });
  }

  /** For good: no timer, no mint; the one in flight is aborted with `reason`. */
  stop(reason) {
    if (this.#phase === REFRESH.STOPPED) return;
    this.#phase = REFRESH.STOPPED;
    this.#stopReason = reason;
    this.#cancelRefreshTimer();
    this.#mintAbort?.abort(reason);
    this.#tabs.close();
  }

  /** The held token, where the caller knows there is one (`#usable()`, or one just accepted). */
  get #record() {
    return /** @type {HeldToken} */ (this.#held);
  }

  #usable() {
    return this.#held !== null && this.#held.token !== this.#refusedToken;
  }

  #isFresh() {
    return this.#now() < this.#record.refreshAtMs;
  }

  #isValid() {
    return this.#remainingMs() > 0;
  }

  /** How long the held token stays valid, on the server's clock. */
  #remainingMs() {
    return this.#record.expiresAtMs - this.#record.skewMs - this.#now();
  }

  /**
   * Inside the leeway window a refresh runs in the background and the call goes at once with the
   * held token, unless that token expires within `waitForRefreshMs`: then the call waits for the
   * refresh, at most half the held token's remaining life, so it can still go out with it valid.
   */
  async #refreshedOrHeld() {
    if (this.#phase === REFRESH.RETRYING) return this.#record.token;
    if (!this.#inFlight) this.#refreshInBackground(); // it reports its own failure
    const refresh = this.#inFlight;
    const remainingMs = this.#remainingMs();
    // No refresh (the route asked us to wait), or one this call need not wait for.
    if (!refresh || remainingMs > this.#waitForRefreshMs) return this.#record.token;
    const tooSlow = new Error("the refresh is taking too long");
    try {
      return (await this.#timers.deadline(refresh, remainingMs / 2, () => tooSlow)).token;
    } catch (error) {
      if (error !== tooSlow && (error?.final || this.#stopReason)) throw error;
      if (this.#usable() && this.#isValid()) return this.#record.token;
      throw error;
    }
  }

  #reasonForNewToken() {
    if (this.#held && !this.#usable()) return REASON.UNAUTHORIZED;
    return this.#held ? REASON.REFRESH : REASON.INITIAL;
  }

  #resume() {
    if (this.#phase !== REFRESH.PAUSED) return;
    this.#phase = REFRESH.ON_SCHEDULE;
    if (this.#usable()) this.#scheduleRefresh();
  }

  /** @returns {Promise<HeldToken>} */
  #fetchOnce(reason) {
    if (this.#inFlight) return this.#inFlight;
    const deferral = this.#mintDeferral;
    const waitMs = deferral ? deferral.untilMs - this.#now() : 0;
    if (deferral && waitMs > 0) {
      const seconds = Math.ceil(waitMs / 1000);
      const message = `${this.#source.name} asked to wait ${seconds} s more (Retry-After); no token was requested.`;
      return Promise.reject(new AuthEndpointError(message, { status: deferral.status, retryAfter: seconds }));
    }
    this.#cancelRefreshTimer(); // the mint's outcome schedules what comes next
    if (this.#phase === REFRESH.RETRYING) this.#phase = REFRESH.ON_SCHEDULE;
    const inFlight = this.#acquire(reason)
      .catch((error) => {
        this.#mintFailed(error);
        throw error;
      })
      .finally(() => {
        this.#inFlight = null;
      });
    this.#inFlight = inFlight;
    return inFlight;
  }

  #mintFailed(error) {
    if (error?.final) return this.#events.onFinal(error);
    const seconds = retryAfterSec(error);
    if (seconds) this.#mintDeferral = { untilMs: this.#now() + seconds * 1000, status: error.status };
    if (this.#phase !== REFRESH.ON_SCHEDULE || !this.#usable()) return;
    if (this.#isFresh()) return this.#scheduleRefresh(); // a mint for a socket failed: the refresh stays due
    if (!this.#isValid()) return; // nothing left to keep fresh: the next call mints
    // A valid token is still held: keep it in use and try again later.
    this.#retryIn(retryDelayMs(error, this.#refreshFailures++, this.#random));
  }

  /** Phase RETRYING: the held token stays in use, and a refresh runs after `delayMs`. */
  #retryIn(delayMs) {
    this.#cancelRefreshTimer();
    this.#phase = REFRESH.RETRYING;
    this.#refreshTimer = this.#timers.after(delayMs, () => {
      this.#refreshTimer = null;
      this.#phase = REFRESH.ON_SCHEDULE;
      if (this.#usable() && this.#isValid()) this.#refreshInBackground(); // else the next call mints
    });
  }

  /** A refresh takes the tabs' lock; a mint for another reason is this tab's alone. */
  #acquire(reason) {
    if (reason !== REASON.REFRESH) return this.#mintAndShare(reason);
    return this.#tabs.exclusively(async () => {
      if (this.#stopReason) throw this.#stopReason;
      // Queued behind another tab that has just shared a new token: nothing left to do.
      if (this.#usable() && this.#isFresh()) return this.#record;
      return this.#mintAndShare(reason);
    });
  }

  async #mintAndShare(reason) {
    const record = await this.#mint(reason);
    if (this.#stopReason) throw this.#stopReason;
    const handedBack = this.#holds(record); // no news for the other tabs
    this.#accept(record, { reason, mintedBy: "self" });
    if (!handedBack) this.#tabs.share(record, reason);
    return this.#record;
  }

  /** Whether `record` is the very token held (and still usable): the route handed it back. */
  #holds(record) {
    return this.#usable() && this.#record.token === record.token && this.#record.expiresAtMs === record.expiresAtMs;
  }

  /** One token from the source, or AuthEndpointError (status 0) once the timeout has passed. */
  async #mint(reason) {
    const abort = new AbortController();
    this.#mintAbort = abort;
    const timedOut = () => {
      const seconds = this.#timeoutMs / 1000;
      const error = new AuthEndpointError(
        `${this.#source.name} did not answer within ${seconds} s (authTimeoutSec); the request was aborted.`,
      );
      abort.abort(error);
      return error;
    };
    try {
      return await this.#timers.deadline(this.#source.mint({ reason, signal: abort.signal }), this.#timeoutMs, timedOut);
    } finally {
      if (this.#mintAbort === abort) this.#mintAbort = null;
    }
  }

  #receiveFromTab(record, reason) {
    if (this.#stopReason) return;
    // Adopt only what outlives our own token, and never a token that is already due for refresh.
    if (this.#usable() && record.expiresAtMs <= this.#record.expiresAtMs) return;
    if (this.#held?.token === record.token) return;
    if (this.#now() >= this.#withRefreshTime(record).refreshAtMs) return;
    this.#accept(record, { reason: reason ?? REASON.REFRESH, mintedBy: "tab" });
  }

  /** `record` with its refresh time (local): its half-life, or the leeway before its expiry when one is set. */
  #withRefreshTime(record) {
    const serverNowMs = this.#now() + record.skewMs;
    if (this.#leewayMs !== null) {
      // A leeway longer than half the remaining life would make every new token stale on arrival.
      const leewayMs = Math.min(this.#leewayMs, (record.expiresAtMs - serverNowMs) / 2);
      return { ...record, refreshAtMs: record.expiresAtMs - record.skewMs - leewayMs };
    }
    // Halfway from its issue to its expiry; a token with no (sensible) issue time counts from now.
    const issued = record.issuedAtMs;
    const issuedAtMs = issued !== null && issued < record.expiresAtMs ? issued : serverNowMs;
    return { ...record, refreshAtMs: (issuedAtMs + record.expiresAtMs) / 2 - record.skewMs };
  }

  /**
   * Holds `record` (kept as it is when it is the token held, handed back) and schedules what comes
   * next: its refresh while it is fresh; otherwise the source could not give a fresh token (the
   * route rides through an outage), so it is asked again on the backoff.
   */
  #accept(record, { reason, mintedBy }) {
    if (!this.#holds(record)) {
      this.#held = this.#withRefreshTime(record);
      this.#refusedToken = null;
    }
    const fresh = this.#isFresh();
    if (fresh) this.#refreshFailures = 0;
    if (this.#phase === REFRESH.RETRYING) this.#phase = REFRESH.ON_SCHEDULE;
    if (this.#phase === REFRESH.ON_SCHEDULE && fresh) this.#scheduleRefresh();
    if (this.#phase === REFRESH.ON_SCHEDULE && !fresh) {
      const delayMs = askAgainDelayMs(this.#refreshFailures++, this.#random);
      this.#retryIn(Math.min(delayMs, this.#remainingMs())); // never after it expires
    }
    this.#events.onToken(this.#record, { reason, mintedBy });
  }

  #scheduleRefresh() {
    this.#cancelRefreshTimer();
    const delayMs = this.#record.refreshAtMs - this.#now();
    this.#refreshTimer = this.#timers.after(delayMs, () => this.#refreshDue({ spread: true }));
  }

  #cancelRefreshTimer() {
    this.#timers.cancel(this.#refreshTimer);
    this.#refreshTimer = null;
  }

  #refreshDue({ spread }) {
    this.#refreshTimer = null;
    if (this.#isFresh()) return this.#scheduleRefresh(); // a capped timer woke early
    const spreadMs = spread ? this.#tabs.refreshSpreadMs(this.#random) : null;
    if (spreadMs !== null) {
      this.#refreshTimer = this.#timers.after(spreadMs, () => this.#refreshDue({ spread: false }));
      return;
    }
    this.#refreshInBackground();
  }

  async #refreshInBackground() {
    try {
      await this.#fetchOnce(REASON.REFRESH);
    } catch (error) {
      if (!error?.final && !this.#stopReason) this.#events.onBackgroundError(error);
    }
  }
}
