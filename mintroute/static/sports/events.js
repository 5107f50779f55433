/** The client's events ("state", "error", "token") and the listeners of each. */

/** The events a client emits; on() refuses any other name. */
export const EVENT_NAMES = ["state", "error", "token"];

/** A listener that throws must not break the client's bookkeeping; rethrow it on its own. */
export function callSafely(listener, ...args) {
  try {
    listener(...args);
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}

/** The listeners of each event; a listener that throws does not stop the others. */
export class Emitter {
  /** @type {Map<string, Set<Function>>} */
  #listeners = new Map(EVENT_NAMES.map((name) => [name, new Set()]));

  /** Listens to `eventName`; returns the function that stops listening. */
  on(eventName, listener) {
    const listeners = this.#listeners.get(eventName);
    if (!listeners) {
      throw new TypeError(`Unknown event "${eventName}"; use one of ${EVENT_NAMES.join(", ")}.`);
    }
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  emit(eventName, payload) {
    const listeners = /** @type {Set<Function>} */ (this.#listeners.get(eventName));
    for (const listener of [...listeners]) callSafely(listener, payload);
  }
}
