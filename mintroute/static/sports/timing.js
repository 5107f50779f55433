/**
 * Time, in one place: the backoff schedule and the timers. Every delay and timeout of the client
 * runs on the injected setTimeout/clearTimeout, so a test can move time by hand.
 */

import { AuthEndpointError } from "./errors.js";

const BACKOFF = Object.freeze({ baseMs: 500, capMs: 30_000 });
/**
 * A mint route that hands back the token already held, past its half-life, could not mint (it is
 * riding through an outage): the next ask waits at least this long, so a page never asks in a loop.
 */
const ASK_AGAIN_AFTER_MS = 10_000;
/** setTimeout fires at once for larger delays (a signed 32-bit overflow). */
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * Full-jitter exponential backoff: a delay drawn uniformly from [0, min(cap, base * 2^attempt)).
 * Jitter keeps many clients that failed together from retrying together.
 * @param {number} attempt
 * @param {{ baseMs?: number, capMs?: number, random?: () => number }} [options]
 * @returns {number}
 */
export function backoff(attempt, options = {}) {
  const { baseMs = BACKOFF.baseMs, capMs = BACKOFF.capMs, random = Math.random } = options;
  return random() * Math.min(capMs, baseMs * 2 ** attempt);
}

/**
 * How long the service (`error.data.retryAfter`) or the mint route (`Retry-After`, read into
 * `AuthEndpointError.retryAfter`) asked us to wait before trying again, in seconds; 0 when neither.
 */
export function retryAfterSec(error) {
  const seconds = error instanceof AuthEndpointError ? error.retryAfter : error?.data?.retryAfter;
  return Number.isFinite(seconds) && seconds > 0 ? seconds : 0;
}

/** The wait before attempt `attempt`: the backoff, but never less than the server asked for. */
export function retryDelayMs(error, attempt, random) {
  return Math.max(retryAfterSec(error) * 1000, backoff(attempt, { random }));
}

/**
 * The wait before asking again when the mint route answered a token already due for refresh: the
 * backoff of attempt `attempt` on top of ASK_AGAIN_AFTER_MS, so the pages that hold one token (the
 * site's) do not ask together, and at most one ask in 10 s even when `random()` returns 0.
 * @param {number} attempt
 * @param {() => number} random
 * @returns {number}
 */
export function askAgainDelayMs(attempt, random) {
  return ASK_AGAIN_AFTER_MS + backoff(attempt, { random });
}

/**
 * Every timer the client starts goes through here, so close() can cancel them all, and delays
 * are capped at what setTimeout accepts (the callers re-check the time when woken).
 */
export class Timers {
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
    return new Promise(/** @param {(value?: void) => void} resolve */ (resolve) => {
      const wake = () => {
        this.#sleepers.delete(wake);
        resolve();
      };
      this.#sleepers.add(wake);
      this.after(delayMs, wake);
    });
  }

  /** `promise`, or the error `onTimeout()` returns if it has not settled within timeoutMs. */
  deadline(promise, timeoutMs, onTimeout) {
    return new Promise((resolve, reject) => {
      const timer = this.after(timeoutMs, () => reject(onTimeout()));
      promise.then(
        (value) => {
          this.cancel(timer);
          resolve(value);
        },
        (error) => {
          this.cancel(timer);
          reject(error);
        },
      );
    });
  }

  cancelAll() {
    for (const handle of this.#handles) this.#clearTimeout(handle);
    this.#handles.clear();
    for (const wake of [...this.#sleepers]) wake();
  }
}
