/**
 * The tabs of one origin share their tokens: a BroadcastChannel carries each minted token to the
 * others, and a Web Lock lets one tab at a time refresh, so N tabs cost one mint per refresh.
 * Either may be missing or broken (a sandboxed frame, an old browser): a tab then mints for itself.
 */

import { issuedAtMsOf, tokenShapeProblem } from "./mint.js";

/** @import { BroadcastChannelLike, LocksLike } from "./sports-client.js" */
/** @import { Timers } from "./timing.js" */

/** BroadcastChannel delivers asynchronously; holding the lock this long lets the news land first. */
const BROADCAST_SETTLE_MS = 50;
/** Without Web Locks, tabs whose refresh timers fire together spread out over this window. */
const UNLOCKED_REFRESH_SPREAD_MS = 2_000;
const MESSAGE_TYPE = "token";

/** This tab's end of the channel and the lock; each part works alone or not at all. */
export class TabSharing {
  /** @type {BroadcastChannelLike | null} */
  #channel = null;
  #locks;
  #lockName;
  #timers;
  #lockWaitMs;
  /** Tokens this tab has shared: a holder of the lock waits for its broadcast to land. */
  #shared = 0;

  /**
   * @param {object} options
   * @param {(new (name: string) => BroadcastChannelLike) | null | undefined} options.BroadcastChannel
   *   its constructor, or none
   * @param {LocksLike | null | undefined} options.locks the Web Locks API, or none
   * @param {string} options.channelName the channel's name; the lock is `${channelName}-refresh`
   * @param {Timers} options.timers from timing.js
   * @param {number} options.lockWaitMs a lock not granted by then is done without
   */
  constructor({ BroadcastChannel, locks, channelName, timers, lockWaitMs }) {
    this.#locks = locks;
    this.#lockName = `${channelName}-refresh`;
    this.#timers = timers;
    this.#lockWaitMs = lockWaitMs;
    try {
      this.#channel = BroadcastChannel ? new BroadcastChannel(channelName) : null;
    } catch {
      this.#channel = null; // a frame where it is refused: this tab mints for itself
    }
  }

  /** Calls `onToken(record, reason)` with each well-formed token another tab shares. */
  listen(onToken) {
    if (!this.#channel) return;
    try {
      this.#channel.onmessage = (message) => {
        const record = recordFrom(message?.data);
        if (record) onToken(record, message.data.reason);
      };
    } catch {
      this.#channel = null;
    }
  }

  /** Tells the other tabs about a token this tab minted. */
  share({ token, expiresAt, skewMs }, reason) {
    this.#shared++;
    try {
      this.#channel?.postMessage({ type: MESSAGE_TYPE, token, expiresAt, skewMs, reason });
    } catch {
      // The other tabs mint their own; this tab has its token either way.
    }
  }

  /**
   * How long to put off a refresh whose timer just fired, or null when the lock keeps tabs apart.
   * Without a lock, whichever tab wakes first mints and shares; the others adopt its token.
   */
  refreshSpreadMs(random) {
    return this.#locks ? null : random() * UNLOCKED_REFRESH_SPREAD_MS;
  }

  /**
   * Runs `work` (a refresh) while holding the lock, so that one tab at a time refreshes; the
   * caller gets its result at once, the lock is released a little later. A lock that cannot be
   * had (refused, broken, or held by another tab past `lockWaitMs`) is done without: one extra
   * mint is better than a tab that cannot refresh.
   */
  exclusively(work) {
    const locks = this.#locks;
    if (!locks) return work();
    return new Promise((resolve, reject) => {
      let decided = false;
      const decide = () => {
        if (decided) return false;
        decided = true;
        this.#timers.cancel(waitTimer);
        return true;
      };
      const withoutLock = () => {
        if (decide()) work().then(resolve, reject);
      };
      const waitTimer = this.#timers.after(this.#lockWaitMs, withoutLock);
      const underLock = async () => {
        if (!decide()) return;
        const sharedBefore = this.#shared;
        try {
          resolve(await work());
        } catch (error) {
          return reject(error);
        }
        if (this.#shared !== sharedBefore) await this.#timers.sleep(BROADCAST_SETTLE_MS);
      };
      try {
        Promise.resolve(locks.request(this.#lockName, underLock)).catch(withoutLock);
      } catch {
        withoutLock();
      }
    });
  }

  close() {
    this.#channel?.close();
    this.#channel = null;
  }
}

/** The token record in another tab's message, or null when the message is not one. */
function recordFrom(message) {
  if (message?.type !== MESSAGE_TYPE || tokenShapeProblem(message)) return null;
  if (!Number.isFinite(message.skewMs)) return null;
  const { token, expiresAt, skewMs } = message;
  // The token's own `iat`; without one, it is taken to be issued as it arrives, as in the tab that minted it.
  return { token, expiresAt, expiresAtMs: Date.parse(expiresAt), skewMs, issuedAtMs: issuedAtMsOf(token) };
}
