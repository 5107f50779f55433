/**
 * When the socket tries again, and when it stops trying: full-jitter backoff whose n starts over
 * only after a socket has stayed authenticated for 10 s, never sooner than the service asked
 * (retryAfter), and the second refusal of the credential in a row is final.
 */

import { backoff, retryAfterSec } from "./timing.js";

/** A socket authenticated this long has proven itself: the backoff starts over. */
const STABLE_AFTER_MS = 10_000;
/** `auth` refused once may be a token that died in flight; refused again with a new one, it is final. */
const FINAL_REFUSALS = 2;

/** The socket's retry bookkeeping; it starts no timer itself. */
export class ReconnectSchedule {
  #now;
  #random;
  /** n of the backoff: attempts since the last socket that stayed authenticated for 10 s. */
  #attempt = 0;
  /** Refusals of the credential in a row. */
  #refusals = 0;
  /** When the current socket authenticated, or null while there is none. */
  /** @type {number | null} */
  #authenticatedAtMs = null;
  /** The service asked for no attempt before this time (retryAfter). */
  #notBeforeMs = 0;

  /** @param {{now: () => number, random: () => number}} clock */
  constructor({ now, random }) {
    this.#now = now;
    this.#random = random;
  }

  /** A socket authenticated: the refusals in a row are over. */
  authenticated() {
    this.#refusals = 0;
    this.#authenticatedAtMs = this.#now();
  }

  /** The socket is gone; if it had stayed authenticated long enough, the backoff starts over. */
  ended() {
    if (this.#authenticatedAtMs !== null && this.#now() - this.#authenticatedAtMs >= STABLE_AFTER_MS) {
      this.#attempt = 0;
    }
    this.#authenticatedAtMs = null;
  }

  /** The credential was refused; true when that makes refusals enough to give up. */
  refused() {
    return ++this.#refusals >= FINAL_REFUSALS;
  }

  /** The service asked (`error.data.retryAfter`, or a mint's Retry-After) to wait before trying again. */
  deferFor(error) {
    this.#notBeforeMs = Math.max(this.#notBeforeMs, this.#now() + retryAfterSec(error) * 1000);
  }

  /** How long until the service allows the next attempt; 0 or less when it does now. */
  waitMs() {
    return this.#notBeforeMs - this.#now();
  }

  /** The wait before the next attempt: the n-th backoff, never less than the service asked. */
  nextDelayMs() {
    return Math.max(this.waitMs(), backoff(this.#attempt++, { random: this.#random }));
  }

  /** connect() after the socket gave up: no backoff, no refusal, no wait carried over. */
  startOver() {
    this.#attempt = 0;
    this.#refusals = 0;
    this.#notBeforeMs = 0;
    this.#authenticatedAtMs = null;
  }
}
