/**
 * The token keeper: holds the current token and decides when a new one is needed. One mint in
 * flight per tab, bounded in time, and one mint per refresh across the tabs of an origin (a Web
 * Lock, and a BroadcastChannel that shares the result).
 *
 * A held token is *fresh* until `refreshAtMs` (leeway seconds before its expiry, in the server's
 * time) and *valid* until it expires. Between the two a refresh runs in the background; calls keep
 * using the valid token, and a refresh that fails is retried with backoff, not once per call.
 */

import { AuthEndpointError, retryAfterSec } from "./errors.js";
import { tokenShapeProblem } from "./mint.js";
import { retryDelayMs } from "./timing.js";

/** BroadcastChannel delivers asynchronously; holding the lock this long lets the news land first. */
const BROADCAST_SETTLE_MS = 50;
/** Without Web Locks, tabs whose refresh timers fire together spread out over this window. */
const UNLOCKED_REFRESH_SPREAD_MS = 2_000;

export class TokenKeeper {
  #source;
  #leewayMs;
  #timeoutMs;
  #now;
  #random;
  #timers;
  #locks;
  #lockName;
  #channel = null;
  #events;
  #held = null;
  /** The service refused the held token: it is never sent again, the next use mints afresh. */
  #heldRefused = false;
  #inFlight = null;
  #mintAbort = null;
  #refreshTimer = null;
  #refreshFailures = 0;
  /** The mint route's Retry-After: no mint before this time, whoever asks. */
  #mintNotBeforeMs = 0;
  #mintRefusalStatus = 0;
  /** A refresh failed and waits for its backoff timer; calls meanwhile use the valid token. */
  #retrying = false;
  /** Set when the live socket gave up: no timer mints until the page asks for something again. */
  #paused = false;
  #stoppedBy = null;

  constructor({ source, leewayMs, timeoutMs, now, random, timers, locks, BroadcastChannel, channelName, events }) {
    this.#source = source;
    this.#leewayMs = leewayMs;
    this.#timeoutMs = timeoutMs;
    this.#now = now;
    this.#random = random;
    this.#timers = timers;
    this.#locks = locks;
    this.#lockName = `${channelName}-refresh`;
    this.#events = events;
    try {
      this.#channel = BroadcastChannel ? new BroadcastChannel(channelName) : null;
      if (this.#channel) this.#channel.onmessage = (message) => this.#receiveFromTab(message.data);
    } catch {
      this.#channel = null; // a frame where it is refused: this tab mints for itself
    }
  }

  /** The token to send now (the latest usable one, fresh or not), or null. */
  get latest() {
    return this.#usable() ? this.#held.token : null;
  }

  /** A token to send: the held one while it is fresh or a refresh is under way, else a new one. */
  async current() {
    this.#resume();
    if (this.#stoppedBy) throw this.#stoppedBy;
    if (this.#usable() && this.#isFresh()) return this.#held.token;
    if (this.#usable() && this.#isValid()) return this.#refreshedOrHeld();
    const record = await this.#fetchOnce(this.#reasonForNewToken());
    return record.token;
  }

  /** A token other than `rejectedToken`: a newer one already held, or one fetched for `reason`. */
  async replace(rejectedToken, reason) {
    this.#resume();
    // A fetch already under way may bring the replacement; waiting for it saves a second mint.
    if (this.#inFlight) await this.#inFlight.catch(() => {});
    if (this.#stoppedBy) throw this.#stoppedBy;
    if (this.#usable() && this.#held.token !== rejectedToken && this.#isFresh()) return this.#held.token;
    const record = await this.#fetchOnce(reason);
    return record.token;
  }

  /** The held token while it is valid (fresh or not), else null. */
  validToken() {
    return this.#usable() && this.#isValid() ? this.#held.token : null;
  }

  /** The service refused `token`: never send it again. */
  refuse(token) {
    if (this.#held?.token === token) this.#heldRefused = true;
  }

  /** No more minting by timer until current() or replace() is called (the socket gave up). */
  pause() {
    this.#paused = true;
    this.#retrying = false;
    this.#timers.cancel(this.#refreshTimer);
    this.#refreshTimer = null;
  }

  /** Hidden tabs get their timers throttled or frozen; a tab coming back checks the time itself. */
  checkFreshness() {
    if (this.#stoppedBy || this.#paused || this.#inFlight || this.#retrying) return;
    if (this.#usable() && !this.#isFresh()) this.#refreshDue({ spread: false });
  }

  stop(reason) {
    this.#stoppedBy ??= reason;
    this.#timers.cancel(this.#refreshTimer);
    this.#refreshTimer = null;
    this.#mintAbort?.abort(reason);
    this.#channel?.close();
    this.#channel = null;
  }

  #usable() {
    return this.#held !== null && !this.#heldRefused;
  }

  #isFresh() {
    return this.#now() < this.#held.refreshAtMs;
  }

  #isValid() {
    return this.#now() + this.#held.skewMs < this.#held.expiresAtMs;
  }

  /**
   * Inside the leeway window: the refreshed token if it comes soon enough, else the held one. The
   * wait is at most half the held token's remaining life, so the call still goes out with it valid.
   */
  async #refreshedOrHeld() {
    if (this.#retrying) return this.#held.token;
    if (!this.#inFlight) this.#refreshInBackground(); // it reports its own failure
    const refresh = this.#inFlight;
    if (!refresh) return this.#held.token; // the route asked us to wait (Retry-After)
    const remainingMs = this.#held.expiresAtMs - this.#held.skewMs - this.#now();
    const tooSlow = new Error("the refresh is taking too long");
    try {
      return (await this.#timers.deadline(refresh, remainingMs / 2, () => tooSlow)).token;
    } catch (error) {
      if (error !== tooSlow && (error?.final || this.#stoppedBy)) throw error;
      if (this.#usable() && this.#isValid()) return this.#held.token;
      throw error;
    }
  }

  #reasonForNewToken() {
    if (this.#heldRefused) return "unauthorized";
    return this.#held ? "refresh" : "initial";
  }

  #resume() {
    if (!this.#paused) return;
    this.#paused = false;
    if (this.#usable() && !this.#stoppedBy) this.#scheduleRefresh();
  }

  #fetchOnce(reason) {
    const waitMs = this.#mintNotBeforeMs - this.#now();
    if (!this.#inFlight && waitMs > 0) {
      const seconds = Math.ceil(waitMs / 1000);
      const message = `${this.#source.name} asked to wait ${seconds} s more (Retry-After); no token was requested.`;
      return Promise.reject(new AuthEndpointError(message, { status: this.#mintRefusalStatus, retryAfter: seconds }));
    }
    if (!this.#inFlight) {
      this.#timers.cancel(this.#refreshTimer); // the mint's outcome schedules what comes next
      this.#refreshTimer = null;
      this.#retrying = false;
      this.#inFlight = this.#acquire(reason)
        .catch((error) => {
          this.#mintFailed(error);
          throw error;
        })
        .finally(() => {
          this.#inFlight = null;
        });
    }
    return this.#inFlight;
  }

  #mintFailed(error) {
    if (error?.final) return this.#events.onFinal(error);
    if (retryAfterSec(error)) {
      this.#mintNotBeforeMs = this.#now() + retryAfterSec(error) * 1000;
      this.#mintRefusalStatus = error.status;
    }
    if (this.#stoppedBy || this.#paused || !this.#usable()) return;
    if (this.#isFresh()) return this.#scheduleRefresh(); // a mint for a socket failed: the refresh stays due
    if (!this.#isValid()) return; // nothing left to keep fresh: the next call mints
    // A valid token is still held: keep it in use and try again later.
    this.#retrying = true;
    const delayMs = retryDelayMs(error, this.#refreshFailures++, this.#random);
    this.#refreshTimer = this.#timers.after(delayMs, () => {
      this.#refreshTimer = null;
      this.#retrying = false;
      if (this.#usable() && this.#isValid()) this.#refreshInBackground(); // else the next call mints
    });
  }

  #acquire(reason) {
    return reason === "refresh" && this.#locks ? this.#refreshUnderLock() : this.#mintAndShare(reason);
  }

  async #mintAndShare(reason) {
    const record = await this.#mint(reason);
    if (this.#stoppedBy) throw this.#stoppedBy;
    this.#accept(record, { reason, mintedBy: "self" });
    const { token, expiresAt, skewMs } = record;
    try {
      this.#channel?.postMessage({ type: "token", token, expiresAt, skewMs, reason });
    } catch {
      // The other tabs mint their own; this tab has its token either way.
    }
    return this.#held;
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

  /**
   * The caller gets its token as soon as it is minted; the lock is released a little later. A lock
   * that cannot be had (a sandboxed frame, or another tab holding it past the timeout) is done
   * without: one extra mint is better than a tab that cannot refresh.
   */
  #refreshUnderLock() {
    return new Promise((resolve, reject) => {
      let decided = false;
      const decide = () => {
        if (decided) return false;
        decided = true;
        this.#timers.cancel(waitTimer);
        return true;
      };
      const mintWithoutLock = () => {
        if (decide()) this.#mintAndShare("refresh").then(resolve, reject);
      };
      const waitTimer = this.#timers.after(this.#timeoutMs, mintWithoutLock);
      const refreshOrSkip = async () => {
        if (!decide()) return;
        if (this.#stoppedBy) return reject(this.#stoppedBy);
        // Queued behind another tab that has just broadcast a new token: nothing left to do.
        if (this.#usable() && this.#isFresh()) return resolve(this.#held);
        try {
          resolve(await this.#mintAndShare("refresh"));
        } catch (error) {
          return reject(error);
        }
        await this.#timers.sleep(BROADCAST_SETTLE_MS);
      };
      try {
        Promise.resolve(this.#locks.request(this.#lockName, refreshOrSkip)).catch(mintWithoutLock);
      } catch {
        mintWithoutLock();
      }
    });
  }

  #receiveFromTab(message) {
    if (this.#stoppedBy || message?.type !== "token" || tokenShapeProblem(message)) return;
    if (!Number.isFinite(message.skewMs)) return;
    const { token, expiresAt, skewMs } = message;
    const record = { token, expiresAt, expiresAtMs: Date.parse(expiresAt), skewMs };
    // Adopt only what outlives our own token, and never a token that is already due for refresh.
    if (this.#usable() && record.expiresAtMs <= this.#held.expiresAtMs) return;
    if (this.#held?.token === token) return;
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
    this.#heldRefused = false;
    this.#refreshFailures = 0;
    this.#retrying = false;
    if (!this.#paused) this.#scheduleRefresh();
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
      if (!error?.final && !this.#stoppedBy) this.#events.onBackgroundError(error);
    }
  }
}
