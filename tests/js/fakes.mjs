/**
 * Stand-ins for the browser pieces the client touches. Each records what the client did so a test
 * can assert exact counts, and lets the test decide when time passes and what the servers answer.
 */

import { SportsClient } from "../../mintroute/static/sports/sports-client.js";

export const START_MS = Date.UTC(2025, 5, 1, 12, 0, 0);
export const MINT_URL = "/api/sports-token";
export const BASE_URL = "https://sports.test";
export const RPC_URL = `${BASE_URL}/sdk/v1/rpc`;
export const WS_URL = "wss://sports.test/sdk/v1/ws";

/** Lets every promise chain that is already runnable finish. */
export const flush = () => new Promise((resolve) => setImmediate(resolve));

/** A manual timer queue: time moves only when a test says so. */
export class FakeClock {
  now = START_MS;
  #timers = [];
  #nextId = 1;

  setTimeout = (callback, delayMs = 0) => {
    const id = this.#nextId++;
    this.#timers.push({ id, at: this.now + Math.max(0, delayMs), delayMs, callback });
    return id;
  };

  clearTimeout = (id) => {
    this.#timers = this.#timers.filter((timer) => timer.id !== id);
  };

  /** Timers not yet fired, as {at, delayMs}. */
  pending() {
    return this.#timers.map(({ at, delayMs }) => ({ at, delayMs }));
  }

  /** Runs every timer due within `ms`, in order, settling promises after each. */
  async advance(ms) {
    const target = this.now + ms;
    await flush();
    for (;;) {
      const due = this.#timers.filter((timer) => timer.at <= target).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((timer) => timer !== due);
      this.now = due.at;
      due.callback();
      await flush();
    }
    this.now = target;
    await flush();
  }

  /** Time passes without any timer firing: a frozen background tab or a sleeping laptop. */
  async jump(ms) {
    this.now += ms;
    await flush();
  }
}

export function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** What fetch resolves with: enough of Response for the client (`redirected`, `url` as fetch sets them). */
export function fakeResponse({ status = 200, headers = {}, body, redirected = false, url = "" } = {}) {
  return {
    ok: status >= 200 && status < 300,
    status,
    statusText: "",
    type: "basic",
    redirected,
    url,
    headers: new Headers(headers),
    json: async () => (typeof body === "string" ? JSON.parse(body) : structuredClone(body)),
  };
}

/** A promise that never settles: a server that accepted the request and went silent. */
export const never = () => new Promise(() => {});

/**
 * The integrator's mint route and the service's RPC endpoint behind one fetch. The mint route
 * mints jwt-1, jwt-2, ... valid `ttlSec` in server time (the local clock plus `serverAheadMs`),
 * unless the test queued other answers in `mintAnswers`. The RPC endpoint accepts tokens the route
 * minted that have not expired and are not in `refusedTokens`, and answers `rpcResult`.
 */
export class FakeBackend {
  requests = [];
  mintAnswers = [];
  refusedTokens = new Set();
  /** The `error.data` of those refusals, e.g. {reason: "expired_token"}; absent when undefined. */
  refusalData = undefined;
  rpcResult = (envelope) => ({ echo: envelope.method });
  issued = new Map();
  ttlSec = 600;
  serverAheadMs = 0;
  #minted = 0;
  #clock;

  constructor(clock) {
    this.#clock = clock;
  }

  get serverNow() {
    return this.#clock.now + this.serverAheadMs;
  }

  get mints() {
    return this.requests.filter((request) => request.url === MINT_URL);
  }

  get mintReasons() {
    return this.mints.map((request) => request.body.reason);
  }

  get rpcs() {
    return this.requests.filter((request) => request.url === RPC_URL);
  }

  /** The fetch to inject. Queued answers may be a spec, an Error to throw, or a deferred's promise. */
  fetch = async (url, init = {}) => {
    const request = { url, ...init, headers: { ...init.headers }, body: init.body && JSON.parse(init.body) };
    this.requests.push(request);
    if (url === MINT_URL) return this.#answerMint();
    if (url === RPC_URL) return this.#answerRpc(request);
    throw new TypeError(`fetch failed: nothing at ${url}`);
  };

  mintToken() {
    const token = `jwt-${++this.#minted}`;
    const expiresAt = new Date(this.serverNow + this.ttlSec * 1000).toISOString();
    this.issued.set(token, Date.parse(expiresAt));
    return { token, expiresAt };
  }

  /**
   * A TokenResponse whose token is JWT-shaped (the fakes check no signature), issued at `issuedAtMs`
   * in server time and living `ttlSec` from then, as the service's tokens do (`exp - iat == ttl`).
   */
  jwtToken(issuedAtMs = this.serverNow) {
    const iat = Math.floor(issuedAtMs / 1000);
    const claims = { iat, exp: iat + this.ttlSec, jti: `j${this.issued.size + 1}` };
    const token = `eyJhbGciOiJIUzI1NiJ9.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.signature`;
    this.issued.set(token, claims.exp * 1000);
    return { token, expiresAt: new Date(claims.exp * 1000).toISOString() };
  }

  /** A mint route's 200 answer with `body`, and a Date header in server time. */
  ok(body) {
    return { status: 200, headers: { Date: new Date(this.serverNow).toUTCString() }, body };
  }

  /** The JSON a successful mint answers, with a Date header in server time. */
  okMint() {
    return this.ok(this.mintToken());
  }

  async #answerMint() {
    const answer = this.mintAnswers.length ? await this.mintAnswers.shift() : this.okMint();
    if (answer instanceof Error) throw answer;
    return fakeResponse(typeof answer === "function" ? answer() : answer);
  }

  async #answerRpc(request) {
    const envelope = request.body;
    const token = request.headers.Authorization?.replace(/^Bearer /, "");
    const expiresAtMs = this.issued.get(token);
    const accepted = expiresAtMs > this.serverNow && !this.refusedTokens.has(token);
    const body = accepted
      ? { jsonrpc: "2.0", id: envelope.id, result: this.rpcResult(envelope) }
      : { jsonrpc: "2.0", id: envelope.id, error: { code: "unauthorized", message: "Token expired.", data: this.refusalData } };
    return fakeResponse({ body });
  }
}

/** A WebSocket class whose instances record frames; the test plays the server. */
export function createFakeWebSocket() {
  return class FakeWebSocket extends EventTarget {
    static instances = [];
    readyState = 0;
    sent = [];
    closedByClient = null;

    constructor(url) {
      super();
      this.url = url;
      FakeWebSocket.instances.push(this);
    }

    static get latest() {
      return FakeWebSocket.instances.at(-1);
    }

    send(data) {
      if (this.readyState !== 1) throw new Error("InvalidStateError: not open");
      this.sent.push(JSON.parse(data));
    }

    close(code = 1000) {
      if (this.readyState === 3) return;
      this.closedByClient = { code };
      this.readyState = 3;
      queueMicrotask(() => this.dispatchEvent(Object.assign(new Event("close"), { code })));
    }

    // The server's side of the socket

    serverOpen() {
      this.readyState = 1;
      this.dispatchEvent(new Event("open"));
    }

    serverSend(frame) {
      this.dispatchEvent(new MessageEvent("message", { data: JSON.stringify(frame) }));
    }

    serverClose(code) {
      this.readyState = 3;
      this.dispatchEvent(Object.assign(new Event("close"), { code }));
    }

    framesOf(method) {
      return this.sent.filter((frame) => frame.method === method);
    }

    reply(frame, result) {
      this.serverSend({ jsonrpc: "2.0", id: frame.id, result });
    }

    replyError(frame, error) {
      this.serverSend({ jsonrpc: "2.0", id: frame.id, error });
    }

    /** Plays the service's liveness rule: a `ping` notification every 25 s while the socket is open. */
    keepAlive(clock) {
      const ping = () => {
        if (this.readyState !== 1) return;
        this.serverSend({ jsonrpc: "2.0", method: "ping", params: {} });
        clock.setTimeout(ping, 25_000);
      };
      clock.setTimeout(ping, 25_000);
    }

    /** Opens, then answers the first frame (`auth`) with success. */
    async acceptAuth() {
      this.serverOpen();
      await flush();
      this.reply(this.sent[0], { ok: true, expiresAt: null, tier: "growth", env: "test" });
      await flush();
    }
  };
}

/** BroadcastChannel between the clients of one test, as between tabs; delivery is a task later. */
export function createBroadcastHub(clock) {
  const members = new Set();
  const hub = class FakeBroadcastChannel {
    onmessage = null;
    posted = [];

    constructor(name) {
      this.name = name;
      members.add(this);
    }

    postMessage(data) {
      this.posted.push(data);
      for (const member of members) {
        if (member === this || member.name !== this.name) continue;
        const copy = structuredClone(data);
        clock.setTimeout(() => members.has(member) && member.onmessage?.({ data: copy }), 0);
      }
    }

    close() {
      members.delete(this);
    }
  };
  hub.members = members;
  return hub;
}

/** The Web Locks API's exclusive `request(name, callback)`, shared by the tabs given it. */
export class FakeLocks {
  requested = [];
  #tails = new Map();

  request(name, callback) {
    this.requested.push(name);
    const previous = this.#tails.get(name) ?? Promise.resolve();
    const result = previous.then(() => callback({ name }));
    this.#tails.set(name, result.catch(() => {}));
    return result;
  }
}

export class FakeDocument extends EventTarget {
  visibilityState = "visible";
  listenerCount = 0;

  addEventListener(type, listener) {
    this.listenerCount++;
    super.addEventListener(type, listener);
  }

  removeEventListener(type, listener) {
    this.listenerCount--;
    super.removeEventListener(type, listener);
  }

  becomes(visibilityState) {
    this.visibilityState = visibilityState;
    this.dispatchEvent(new Event("visibilitychange"));
  }
}

/** The window's `online` and `offline` events. */
export class FakeWindow extends EventTarget {
  goes(online) {
    this.dispatchEvent(new Event(online ? "online" : "offline"));
  }
}

/** One client (one tab) wired to the fakes, recording every event it emits. */
export function createTab(world, options = {}) {
  const events = { state: [], error: [], token: [] };
  const client = new SportsClient({
    baseUrl: BASE_URL,
    authEndpoint: MINT_URL,
    fetch: world.backend.fetch,
    WebSocket: world.WebSocket,
    now: () => world.clock.now,
    setTimeout: world.clock.setTimeout,
    clearTimeout: world.clock.clearTimeout,
    random: () => 0.5,
    BroadcastChannel: null,
    locks: null,
    document: null,
    window: null,
    ...options,
  });
  for (const name of Object.keys(events)) client.on(name, (payload) => events[name].push(payload));
  return { client, events };
}

/** A clock, a backend and a WebSocket class shared by the tabs of one test. */
export function createWorld() {
  const clock = new FakeClock();
  return { clock, backend: new FakeBackend(clock), WebSocket: createFakeWebSocket() };
}

/** A client whose socket is open and authenticated. */
export async function connected(options = {}) {
  const world = createWorld();
  const tab = createTab(world, options);
  const opened = tab.client.connect();
  await flush();
  const socket = world.WebSocket.latest;
  await socket.acceptAuth();
  await opened;
  return { world, ...tab, socket };
}

/** Subscribes and confirms it with `serverId`; returns the subscription and the events it got. */
export async function subscribed(client, socket, serverId, filter = { sports: ["tennis"] }) {
  const received = [];
  const pending = client.subscribe(filter, (params) => received.push(params));
  await flush();
  socket.reply(socket.framesOf("matches.subscribe").at(-1), { subscriptionId: serverId });
  return { subscription: await pending, received };
}
