/** One WebSocket, the requests awaiting answers on it (each bounded in time), and its silence. */

import { CLOSE, ERROR } from "./constants.js";
import { RpcError } from "./errors.js";
import { resultOf } from "./rpc.js";

const connectionLost = (requestId) =>
  new RpcError(ERROR.UNAVAILABLE, "The WebSocket closed before the answer arrived.", undefined, { requestId });

/** Once disposed (closed by either side) it ignores everything its socket still does. */
export class Connection {
  #socket;
  #timers;
  #timeoutMs;
  #now;
  #lastFrameAtMs;
  /** @type {unknown} */
  #silenceTimer = null;
  #pending = new Map();
  #nextId = 1;
  #disposed = false;
  /** The last error the service answered on this socket: a 4429 close refers to it. */
  /** @type {unknown} */
  lastError = null;

  constructor({ WebSocket, url, timers, now, timeoutMs, onOpen, onNotification, onClose }) {
    this.#timers = timers;
    this.#timeoutMs = timeoutMs;
    this.#now = now;
    this.#lastFrameAtMs = now();
    this.#socket = new WebSocket(url);
    this.#socket.addEventListener("open", () => {
      if (!this.#disposed) onOpen();
    });
    this.#socket.addEventListener("message", (event) => {
      if (this.#disposed) return;
      this.#lastFrameAtMs = this.#now();
      this.#receive(event.data, onNotification);
    });
    this.#socket.addEventListener("close", (event) => {
      if (this.#disposed) return;
      this.#dispose(connectionLost);
      onClose(event.code);
    });
  }

  /** Sends a request; its answer's result, or RpcError ("timeout" after timeoutMs, "unavailable"). */
  request(method, params) {
    if (this.#disposed) return Promise.reject(connectionLost(null));
    const id = String(this.#nextId++);
    return new Promise((resolve, reject) => {
      const timer = this.#timers.after(this.#timeoutMs, () => {
        this.#pending.delete(id);
        const seconds = this.#timeoutMs / 1000;
        const message = `${method} got no answer on the WebSocket within ${seconds} s (requestTimeoutSec).`;
        reject(new RpcError(ERROR.TIMEOUT, message, undefined, { requestId: id }));
      });
      this.#pending.set(id, { resolve, reject, timer });
      try {
        this.#socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
      } catch {
        // Closed under our feet; its close event is on the way and will dispose this connection.
        this.#settle(id, () => reject(connectionLost(id)));
      }
    });
  }

  /** Calls `onSilent()` once no frame has come for `limitMs`: a half-open socket sends none. */
  watchForSilence(limitMs, onSilent) {
    const check = () => {
      const silentMs = this.#now() - this.#lastFrameAtMs;
      if (silentMs < limitMs) this.#silenceTimer = this.#timers.after(limitMs - silentMs, check);
      else onSilent();
    };
    this.#silenceTimer = this.#timers.after(limitMs, check);
  }

  /** Closes the socket; what is pending is rejected with `error(requestId)`. */
  close(error = connectionLost) {
    if (this.#disposed) return;
    this.#dispose(error);
    this.#socket.close(CLOSE.NORMAL);
  }

  #receive(data, onNotification) {
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
    this.#settle(frame.id, () => {
      try {
        waiter.resolve(resultOf(frame, frame.id));
      } catch (error) {
        this.lastError = error;
        waiter.reject(error);
      }
    });
  }

  #settle(id, settle) {
    const waiter = this.#pending.get(id);
    if (!waiter) return;
    this.#pending.delete(id);
    this.#timers.cancel(waiter.timer);
    settle();
  }

  #dispose(error) {
    this.#disposed = true;
    this.#timers.cancel(this.#silenceTimer);
    for (const [id, waiter] of this.#pending) {
      this.#timers.cancel(waiter.timer);
      waiter.reject(error(id));
    }
    this.#pending.clear();
  }
}
