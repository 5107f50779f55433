/**
 * The client's subscriptions. Each one owns its state and the moves between them:
 *
 *     restoring ──activate──▶ active ──detach──▶ restoring     (the socket dropped)
 *         │                     │
 *         ├──fail──▶ failed ◀──suspend (the socket gave up; restart() makes it restoring again)
 *         └──close / end──▶ closed (unsubscribed, or the client closed)
 *
 * The registry finds a subscription by its local id (stable across reconnects) and by the id the
 * server gave it on the current socket, and moves all of them at once when the socket changes.
 */

import { SUBSCRIPTION } from "./constants.js";
import { callSafely } from "./events.js";
import { retryAfterSec, retryDelayMs } from "./timing.js";

/** @import { SubscriptionState } from "./sports-client.js" */
/** @import { Timers } from "./timing.js" */

/** What `subscribe()` resolves with. `state`: "active" | "restoring" | "failed" | "closed". */
class SubscriptionHandle {
  #subscription;
  #unsubscribe;

  constructor(subscription, unsubscribe) {
    this.#subscription = subscription;
    this.#unsubscribe = unsubscribe;
  }

  get id() {
    return this.#subscription.id;
  }

  get state() {
    return this.#subscription.state;
  }

  unsubscribe() {
    return this.#unsubscribe(this.#subscription);
  }
}

/** One subscription, under its local id; `handle` is what the page holds. */
export class Subscription {
  /** @type {SubscriptionState} */
  #state = SUBSCRIPTION.RESTORING;
  #serverId = null;
  /** subscribe() has resolved: later refusals are restores, retried instead of rejected. */
  #confirmed = false;
  #failures = 0;
  /** The service's retryAfter for this subscription: no subscribe frame before then. */
  #notBeforeMs = 0;
  #retryTimer = null;
  #settle;
  #onEvent;
  #clock;

  /** @param {{id: string, params: object, onEvent: Function, unsubscribe: Function, clock: object}} options */
  constructor({ id, params, onEvent, unsubscribe, clock }) {
    this.id = id;
    this.params = params;
    this.#onEvent = onEvent;
    this.#clock = clock;
    this.handle = new SubscriptionHandle(this, unsubscribe);
    /** What subscribe() returns: the handle once the server first says yes. */
    this.confirmation = new Promise((resolve, reject) => {
      this.#settle = { resolve, reject };
    });
  }

  get state() {
    return this.#state;
  }

  get serverId() {
    return this.#serverId;
  }

  get confirmed() {
    return this.#confirmed;
  }

  /** The server said yes on the current socket: events flow, and subscribe() resolves the first time. */
  activate(serverId) {
    this.#serverId = serverId;
    this.#state = SUBSCRIPTION.ACTIVE;
    this.#failures = 0;
    if (this.#confirmed) return;
    this.#confirmed = true;
    this.#settle.resolve(this.handle);
  }

  /** Its socket is gone: it waits to be restored on the next one. */
  detach() {
    this.#forgetSocket();
    if (this.#state === SUBSCRIPTION.ACTIVE) this.#state = SUBSCRIPTION.RESTORING;
  }

  /** The socket gave up: failed, until connect() starts over and restart() restores it. */
  suspend() {
    this.#forgetSocket();
    this.#state = SUBSCRIPTION.FAILED;
  }

  /** connect() starts over after the socket gave up. */
  restart() {
    this.#state = SUBSCRIPTION.RESTORING;
  }

  /** Refused for good; a subscribe() still waiting rejects with `error`. */
  fail(error) {
    this.end(error, SUBSCRIPTION.FAILED);
  }

  /** Unsubscribed by the page (through its handle, so subscribe() has resolved). */
  close() {
    this.#forgetSocket();
    this.#state = SUBSCRIPTION.CLOSED;
  }

  /** Over (`state` "closed" or "failed"); a subscribe() still waiting rejects with `reason`. */
  end(reason, state) {
    this.#clock.timers.cancel(this.#retryTimer);
    this.#state = state;
    if (!this.#confirmed) this.#settle.reject(reason);
  }

  /** Sends `subscribe` now, or once the retryAfter the service gave it has passed. */
  whenAllowed(subscribe) {
    const waitMs = this.#notBeforeMs - this.#clock.now();
    if (waitMs <= 0) return subscribe();
    this.#retryTimer = this.#clock.timers.after(waitMs, subscribe);
  }

  /** A restore was refused: `subscribe` again after the backoff (and after any retryAfter, on any socket). */
  retryLater(error, subscribe) {
    const delayMs = retryDelayMs(error, this.#failures++, this.#clock.random);
    this.#notBeforeMs = this.#clock.now() + retryAfterSec(error) * 1000;
    this.#retryTimer = this.#clock.timers.after(delayMs, subscribe);
  }

  /** Hands a `matches.event` to the page, under the local id. */
  deliver(params) {
    callSafely(this.#onEvent, { ...params, subscriptionId: this.id });
  }

  #forgetSocket() {
    this.#clock.timers.cancel(this.#retryTimer);
    this.#retryTimer = null;
    this.#serverId = null;
  }
}

/** Every subscription of the client, by local id and by the server's id on the current socket. */
export class Subscriptions {
  #byId = new Map();
  #byServerId = new Map();
  #nextLocalId = 1;
  #clock;

  /** @param {{timers: Timers, now: () => number, random: () => number}} clock */
  constructor(clock) {
    this.#clock = clock;
  }

  /** A new subscription, "restoring" until the server says yes; `unsubscribe(it)` ends it. */
  add(params, onEvent, unsubscribe) {
    const id = `sub-${this.#nextLocalId++}`;
    const subscription = new Subscription({ id, params, onEvent, unsubscribe, clock: this.#clock });
    this.#byId.set(id, subscription);
    return subscription;
  }

  has(subscription) {
    return this.#byId.get(subscription.id) === subscription;
  }

  all() {
    return [...this.#byId.values()];
  }

  /** The server said yes to `subscription` under `serverId`. */
  activate(subscription, serverId) {
    subscription.activate(serverId);
    this.#byServerId.set(serverId, subscription);
  }

  /** Forgets `subscription`; false when it was already gone. */
  remove(subscription) {
    if (!this.has(subscription)) return false;
    this.#byId.delete(subscription.id);
    if (subscription.serverId !== null) this.#byServerId.delete(subscription.serverId);
    return true;
  }

  /** The socket dropped: every subscription waits for the next one. */
  detachAll() {
    this.#byServerId.clear();
    for (const subscription of this.#byId.values()) subscription.detach();
  }

  /** The socket gave up: every subscription is failed until connect() starts over. */
  suspendAll() {
    this.#byServerId.clear();
    for (const subscription of this.#byId.values()) subscription.suspend();
  }

  restartAll() {
    for (const subscription of this.#byId.values()) subscription.restart();
  }

  /** Subscriptions whose subscribe() has not resolved yet are dropped, rejected with `error`. */
  failUnconfirmed(error) {
    for (const subscription of this.all()) {
      if (subscription.confirmed) continue;
      this.remove(subscription);
      subscription.fail(error);
    }
  }

  /** The client stopped: every subscription ends in `state`; those still waiting reject with `reason`. */
  endAll(reason, state) {
    for (const subscription of this.#byId.values()) subscription.end(reason, state);
    this.#byId.clear();
    this.#byServerId.clear();
  }

  /** A `matches.event` goes to the subscription the server named, if it is still ours. */
  deliver(params) {
    this.#byServerId.get(params?.subscriptionId)?.deliver(params);
  }
}
