// The browser client under faults: rules 1 to 14 of the contract's "The browser client, under
// faults", one describe per rule, each on the fake clock.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { AuthEndpointError, RpcError, SportsClient, UnauthorizedError } from "../../mintroute/static/sports/sports-client.js";
import {
  BASE_URL,
  FakeLocks,
  FakeWindow,
  MINT_URL,
  RPC_URL,
  createBroadcastHub,
  createTab,
  connected,
  createWorld,
  flush,
  never,
  subscribed,
} from "./fakes.mjs";

const HOUR_MS = 3_600_000;
const LOCK_NAME = "sports-client:https://sports.test/api/sports-token-refresh";

/** Settles to {value} or {error}, or stays "pending", without an unhandled rejection. */
function track(promise) {
  const outcome = { state: "pending" };
  promise.then(
    (value) => Object.assign(outcome, { state: "resolved", value }),
    (error) => Object.assign(outcome, { state: "rejected", error }),
  );
  return outcome;
}

/** A subscribed client whose socket dropped and came back: `next` is waiting for the restore. */
async function restoring(options) {
  const { world, client, events, socket } = await connected(options);
  const { subscription } = await subscribed(client, socket, "srv-1", { sports: ["tennis"] });
  socket.serverClose(1006);
  await world.clock.advance(options.random() * 500); // the first reconnect's backoff
  const next = world.WebSocket.latest;
  await next.acceptAuth();
  return { world, client, events, subscription, next };
}

/** Opens the latest socket and refuses its auth frame as unauthorized, with `data`. */
async function refuseAuth(world, data = undefined) {
  const socket = world.WebSocket.latest;
  socket.serverOpen();
  await flush();
  socket.replyError(socket.sent[0], { code: "unauthorized", message: "Token expired.", data });
  await flush();
}

/** A TokenResponse whose token is JWT-shaped, with `iat` at the backend's (server) time. */
function issueJwt(backend) {
  const issuedAtMs = backend.serverNow;
  const claims = { iat: Math.floor(issuedAtMs / 1000), jti: `j${backend.issued.size + 1}` };
  const token = `eyJhbGciOiJIUzI1NiJ9.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.signature`;
  backend.issued.set(token, issuedAtMs + 600_000);
  return { token, expiresAt: new Date(issuedAtMs + 600_000).toISOString() };
}

describe("rule 1: nothing waits forever", () => {
  test("a mint route that never answers fails the call after authTimeoutSec (status 0) and aborts it", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    world.backend.mintAnswers.push(never());

    const call = track(client.rpc("ping"));
    await world.clock.advance(9_999);
    assert.equal(call.state, "pending");
    await world.clock.advance(1);

    assert.equal(call.state, "rejected");
    assert.ok(call.error instanceof AuthEndpointError);
    assert.equal(call.error.status, 0);
    assert.equal(call.error.final, false);
    assert.match(call.error.message, /did not answer within 10 s/);
    assert.equal(world.backend.mints[0].signal.aborted, true);
    // The stuck mint no longer blocks anything: the next call mints afresh and succeeds.
    assert.deepEqual(await client.rpc("ping"), { echo: "ping" });
    assert.equal(world.backend.mints.length, 2);
    client.close();
  });

  test("authTimeoutSec sets the bound", async () => {
    const world = createWorld();
    const { client } = createTab(world, { authTimeoutSec: 3 });
    world.backend.mintAnswers.push(never());
    const call = track(client.rpc("ping"));
    await world.clock.advance(2_999);
    assert.equal(call.state, "pending");
    await world.clock.advance(1);
    assert.equal(call.error.status, 0);
    client.close();
  });

  test("fetchToken gets {reason, signal}; a hung one times out and its signal aborts", async () => {
    const world = createWorld();
    const seen = [];
    const { client } = createTab(world, {
      authEndpoint: undefined,
      fetchToken: (request) => {
        seen.push(request);
        return never();
      },
    });
    const call = track(client.rpc("ping"));
    await world.clock.advance(10_000);

    assert.equal(call.error.status, 0);
    assert.equal(seen[0].reason, "initial");
    assert.ok(seen[0].signal instanceof AbortSignal);
    assert.equal(seen[0].signal.aborted, true);
    client.close();
  });

  test("an RPC never answered fails with code timeout after requestTimeoutSec, and is aborted", async () => {
    const world = createWorld();
    const calls = [];
    const fetch = (url, init) => (url === RPC_URL ? (calls.push(init), never()) : world.backend.fetch(url, init));
    const { client } = createTab(world, { fetch, requestTimeoutSec: 4 });

    const call = track(client.rpc("matches.list"));
    await world.clock.advance(3_999);
    assert.equal(call.state, "pending");
    await world.clock.advance(1);

    assert.ok(call.error instanceof RpcError);
    assert.equal(call.error.code, "timeout");
    assert.equal(call.error.requestId, "1");
    assert.equal(calls[0].signal.aborted, true);
    client.close();
  });

  test("close() rejects a call waiting on a hung mint at once with code closed, and aborts the mint", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    world.backend.mintAnswers.push(never());
    const call = track(client.rpc("ping"));
    await flush();

    client.close();
    await flush();

    assert.equal(call.state, "rejected");
    assert.equal(call.error.code, "closed");
    assert.equal(world.backend.mints[0].signal.aborted, true);
    assert.deepEqual(world.clock.pending(), []);
    await assert.rejects(client.rpc("ping"), { code: "closed" });
    assert.equal(world.backend.mints.length, 1);
  });

  test("close() settles connect(), subscribe() and an RPC in flight at once", async () => {
    const world = createWorld();
    const calls = [];
    const fetch = (url, init) => (url === RPC_URL ? (calls.push(init), never()) : world.backend.fetch(url, init));
    const { client } = createTab(world, { fetch });
    const rpc = track(client.rpc("ping"));
    const connecting = track(client.connect());
    const subscribing = track(client.subscribe({ sports: ["tennis"] }, () => {}));
    await flush();
    world.WebSocket.latest.serverOpen(); // auth sent, never answered
    await flush();

    client.close();
    await flush();

    for (const outcome of [rpc, connecting, subscribing]) assert.equal(outcome.error.code, "closed");
    assert.equal(calls[0].signal.aborted, true);
    assert.equal(client.state, "closed");
  });

  test("an auth frame never answered: connect() rejects with timeout, the socket is dropped and replaced", async () => {
    const world = createWorld();
    const { client, events } = createTab(world, { random: () => 0 });
    const connecting = track(client.connect());
    await flush();
    const first = world.WebSocket.latest;
    first.serverOpen();
    await world.clock.advance(9_999);
    assert.equal(connecting.state, "pending");
    await world.clock.advance(1);

    assert.equal(connecting.error.code, "timeout");
    assert.deepEqual(first.closedByClient, { code: 1000 });
    assert.deepEqual(events.error.map((error) => error.code), ["timeout"]);
    await world.clock.advance(0); // backoff 0 with random() = 0
    assert.equal(world.WebSocket.instances.length, 2);
    assert.equal(client.state, "reconnecting");
    await world.WebSocket.latest.acceptAuth();
    assert.equal(client.state, "open");
    client.close();
  });

  test("a socket that never opens is given up after requestTimeoutSec", async () => {
    const world = createWorld();
    const { client } = createTab(world, { random: () => 0 });
    const connecting = track(client.connect());
    await world.clock.advance(10_000);

    assert.equal(connecting.error.code, "timeout");
    assert.match(connecting.error.message, /did not open/);
    assert.deepEqual(world.WebSocket.instances[0].closedByClient, { code: 1000 });
    client.close();
  });

  test("a subscribe frame never answered rejects with timeout", async () => {
    const { world, client } = await connected();
    const subscribing = track(client.subscribe({ sports: ["tennis"] }, () => {}));
    await world.clock.advance(10_000);
    assert.equal(subscribing.error.code, "timeout");
    client.close();
  });

  test("another tab stuck holding the refresh lock delays this tab's refresh by authTimeoutSec at most", async () => {
    const world = createWorld();
    const locks = new FakeLocks();
    const { client } = createTab(world, { locks });
    await client.rpc("ping");
    locks.request(LOCK_NAME, never); // a tab frozen mid-refresh: never releases
    await world.clock.jump(600_000); // jwt-1 has expired; the refresh timer has not fired (a frozen tab)

    const call = track(client.rpc("ping"));
    await world.clock.advance(9_999);
    assert.equal(call.state, "pending");
    await world.clock.advance(1);

    assert.deepEqual(call.value, { echo: "ping" });
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    client.close();
  });
});

describe("rule 1, in hostile pages", () => {
  test("going offline while connect() waits for a retry settles it", async () => {
    const window = new FakeWindow();
    const world = createWorld();
    const { client } = createTab(world, { window, random: () => 1 });
    client.connect().catch(() => {});
    await flush();
    world.WebSocket.latest.serverClose(1006); // the first attempt fails: a retry is scheduled
    await flush();
    const waiting = track(client.connect());
    window.goes(false);
    await flush();
    assert.equal(waiting.error.code, "unavailable");
    assert.match(waiting.error.message, /offline/);
    client.close();
  });

  test("WebSocket: null makes connect() reject at once, without retrying", async () => {
    const world = createWorld();
    const { client, events } = createTab(world, { WebSocket: null });
    await assert.rejects(client.connect(), TypeError);
    await world.clock.advance(HOUR_MS);
    assert.deepEqual(events.error, []);
    assert.equal(world.backend.mints.length, 0);
    client.close();
  });

  test("a fetch that answers something other than a Response fails the mint with status 0", async () => {
    const world = createWorld();
    const { client } = createTab(world, { fetch: async () => undefined });
    const error = await client.rpc("ping").catch((caught) => caught);
    assert.ok(error instanceof AuthEndpointError);
    assert.equal(error.status, 0);
    client.close();
  });

  test("close() inside an error listener leaves no timer and the state closed", async () => {
    const world = createWorld();
    const { client, events } = createTab(world);
    world.backend.mintAnswers.push({ status: 503, body: {} });
    client.on("error", () => client.close());
    client.connect().catch(() => {});
    await world.clock.advance(0);
    assert.equal(client.state, "closed");
    assert.deepEqual(events.state, ["connecting", "reconnecting", "closed"]);
    assert.deepEqual(world.clock.pending(), []);
  });

  test("close() inside a reconnecting state listener leaves no timer", async () => {
    const { world, client } = await connected();
    client.on("state", (state) => state === "reconnecting" && client.close());
    world.WebSocket.latest.serverClose(1006);
    await flush();
    assert.equal(client.state, "closed");
    assert.deepEqual(world.clock.pending(), []);
  });

  test("connect() inside the unauthorized state listener starts over", async () => {
    const world = createWorld();
    const { client } = createTab(world, { random: () => 0 });
    let again = null;
    client.on("state", (state) => {
      if (state === "unauthorized" && again === null) again = track(client.connect());
    });
    client.connect().catch(() => {});
    await flush();
    await refuseAuth(world);
    await world.clock.advance(0);
    await refuseAuth(world);
    await world.clock.advance(0);
    assert.equal(again.state, "pending");
    await world.WebSocket.latest.acceptAuth();
    assert.equal(again.state, "resolved");
    client.close();
  });

  test("a BroadcastChannel that throws is done without", async () => {
    const world = createWorld();
    class Refused {
      constructor() {
        throw new DOMException("Denied", "SecurityError");
      }
    }
    class Broken {
      postMessage() {
        throw new DOMException("Closed", "InvalidStateError");
      }
      close() {}
    }
    for (const BroadcastChannel of [Refused, Broken]) {
      const { client } = createTab(world, { BroadcastChannel });
      assert.deepEqual(await client.rpc("ping"), { echo: "ping" });
      client.close();
    }
  });
});

describe("rule 2: the socket gives up like HTTP does", () => {
  for (const [label, refuseFirst] of [
    ["auth refused", (world) => refuseAuth(world)],
    ["closed with 4401", async (world) => world.WebSocket.latest.serverClose(4401)],
  ]) {
    test(`${label}, then refused again with a new token: error, state unauthorized, nothing more`, async () => {
      const world = createWorld();
      const { client, events } = createTab(world, { random: () => 0 });
      const connecting = track(client.connect());
      await flush();
      await refuseFirst(world);
      await world.clock.advance(0);
      assert.equal(connecting.state, "pending"); // one refusal is retried with a new token
      assert.deepEqual(world.backend.mintReasons, ["initial", "unauthorized"]);

      await refuseAuth(world, { reason: "revoked_key" });

      assert.equal(connecting.state, "rejected");
      assert.ok(connecting.error instanceof UnauthorizedError);
      assert.equal(connecting.error.reason, "revoked_key");
      assert.deepEqual(events.error, [connecting.error]);
      assert.equal(client.state, "unauthorized");
      assert.deepEqual(events.state.slice(-1), ["unauthorized"]);
      await world.clock.advance(HOUR_MS);
      assert.equal(world.WebSocket.instances.length, 2);
      assert.deepEqual(world.backend.mintReasons, ["initial", "unauthorized"]);

      // A later explicit connect() starts over, with a token minted afresh.
      const again = client.connect();
      await flush();
      await world.WebSocket.latest.acceptAuth();
      await again;
      assert.equal(client.state, "open");
      assert.deepEqual(world.backend.mintReasons, ["initial", "unauthorized", "unauthorized"]);
      client.close();
    });
  }

  test("a refusal after a successful auth starts the count again", async () => {
    const { world, client, events } = await connected({ random: () => 0 });
    world.WebSocket.latest.serverClose(4401);
    await world.clock.advance(0);
    await world.WebSocket.latest.acceptAuth(); // the new token works: the count starts over
    world.WebSocket.latest.serverClose(4401);
    await world.clock.advance(0);
    await world.WebSocket.latest.acceptAuth();

    assert.equal(client.state, "open");
    assert.deepEqual(events.error, []);
    client.close();
  });

  test("subscriptions show failed after the socket gives up, and come back with connect()", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    const { subscription } = await subscribed(client, socket, "srv-1", { sports: ["tennis"] });
    socket.serverClose(4401);
    await world.clock.advance(0);
    await refuseAuth(world);
    assert.equal(subscription.state, "failed");

    client.connect().catch(() => {});
    await flush();
    const socket3 = world.WebSocket.latest;
    await socket3.acceptAuth();
    assert.equal(subscription.state, "restoring");
    socket3.reply(socket3.framesOf("matches.subscribe")[0], { subscriptionId: "srv-2" });
    await flush();
    assert.equal(subscription.state, "active");
    client.close();
  });
});

describe("rule 3: backoff that holds", () => {
  test("a server that accepts auth and drops every socket costs at most 25 sockets and 25 mints in 10 minutes", async () => {
    const world = createWorld();
    const { client } = createTab(world, { random: () => 0.999999 });
    client.connect().catch(() => {});
    const dropped = new Set();
    const started = world.clock.now;
    while (world.clock.now - started < 600_000) {
      await flush();
      const socket = world.WebSocket.latest;
      if (socket && !dropped.has(socket)) {
        dropped.add(socket);
        await socket.acceptAuth();
        socket.serverClose(1006);
      }
      await world.clock.advance(100);
    }

    assert.equal(world.WebSocket.instances.length, 25);
    assert.equal(world.backend.mints.length, 25);
    client.close();
  });

  test("the n-th attempt waits random() * min(30 s, 0.5 s * 2**n)", async () => {
    const world = createWorld();
    const { client } = createTab(world, { random: () => 1 });
    client.connect().catch(() => {});
    const waits = [];
    for (let attempt = 0; attempt < 8; attempt++) {
      await flush();
      world.WebSocket.latest.serverClose(1006); // closed before it opened
      await flush();
      const [timer] = world.clock.pending().filter((pending) => pending.delayMs <= 30_000);
      waits.push(timer.delayMs);
      await world.clock.advance(timer.delayMs);
    }
    assert.deepEqual(waits, [500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    client.close();
  });

  for (const code of [1008, 4403]) {
    test(`close code ${code} is final: error, state unauthorized, no other socket`, async () => {
      const { world, client, events, socket } = await connected();
      socket.serverClose(code);
      await world.clock.advance(HOUR_MS);

      assert.equal(client.state, "unauthorized");
      assert.equal(events.error.length, 1);
      assert.ok(events.error[0] instanceof UnauthorizedError);
      assert.equal(events.error[0].data.closeCode, code);
      assert.equal(world.WebSocket.instances.length, 1);
      assert.equal(world.backend.mints.length, 1);
      client.close();
    });
  }
});

describe("rule 4: being told to wait", () => {
  test("auth answered rate_limited with retryAfter 40: one more socket, 40 s later", async () => {
    const world = createWorld();
    const { client, events } = createTab(world, { random: () => 1 });
    const connecting = track(client.connect());
    await flush();
    const socket = world.WebSocket.latest;
    socket.serverOpen();
    await flush();
    const limited = { code: "rate_limited", message: "Too many connections.", data: { retryAfter: 40 } };
    socket.replyError(socket.sent[0], limited);
    socket.serverClose(4429);
    await flush();

    assert.equal(connecting.error.code, "rate_limited");
    assert.deepEqual(events.error.map((error) => error.code), ["rate_limited"]);
    await world.clock.advance(39_999);
    assert.equal(world.WebSocket.instances.length, 1);
    await world.clock.advance(1);
    assert.equal(world.WebSocket.instances.length, 2);
    client.close();
  });

  test("a restore refused as rate_limited waits its retryAfter before subscribing again", async () => {
    const { world, client, events, subscription, next } = await restoring({ random: () => 0 });
    const limited = { code: "rate_limited", message: "Too many subscriptions.", data: { retryAfter: 7 } };
    next.replyError(next.framesOf("matches.subscribe")[0], limited);
    await flush();
    assert.equal(subscription.state, "restoring");
    assert.deepEqual(events.error.map((error) => error.code), ["rate_limited"]);

    await world.clock.advance(6_999);
    assert.equal(next.framesOf("matches.subscribe").length, 1);
    await world.clock.advance(1);
    assert.equal(next.framesOf("matches.subscribe").length, 2);
    next.reply(next.framesOf("matches.subscribe")[1], { subscriptionId: "srv-2" });
    await flush();
    assert.equal(subscription.state, "active");
    client.close();
  });

  test("a 4429 close defers by the retryAfter the socket was last told", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    client.subscribe({ sports: ["tennis"] }, () => {}).catch(() => {});
    await flush();
    const limited = { code: "rate_limited", message: "Slow down.", data: { retryAfter: 12 } };
    socket.replyError(socket.framesOf("matches.subscribe")[0], limited);
    socket.serverClose(4429);
    await world.clock.advance(11_999);
    assert.equal(world.WebSocket.instances.length, 1);
    await world.clock.advance(1);
    assert.equal(world.WebSocket.instances.length, 2);
    client.close();
  });
});

describe("rule 4, for every caller", () => {
  test("the mint route's Retry-After holds for calls too: no mint before it has passed", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    world.backend.mintAnswers.push({ status: 429, headers: { "Retry-After": "60" }, body: { error: "rate_limited" } });
    await assert.rejects(client.rpc("ping"), { status: 429 });

    await world.clock.advance(59_000);
    const early = await client.rpc("ping").catch((caught) => caught);
    assert.ok(early instanceof AuthEndpointError);
    assert.equal(early.retryAfter, 1);
    assert.equal(world.backend.mints.length, 1);
    await world.clock.advance(1_000);
    assert.deepEqual(await client.rpc("ping"), { echo: "ping" });
    assert.equal(world.backend.mints.length, 2);
    client.close();
  });

  test("a Retry-After date is read on the server's clock (its Date header)", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    const serverNow = world.clock.now - HOUR_MS;
    world.backend.mintAnswers.push({
      status: 503,
      headers: { Date: new Date(serverNow).toUTCString(), "Retry-After": new Date(serverNow + 60_000).toUTCString() },
      body: {},
    });
    const error = await client.rpc("ping").catch((caught) => caught);
    assert.equal(error.retryAfter, 60);
    client.close();
  });

  test("a subscription told to wait waits on a new socket too", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    await subscribed(client, socket, "srv-1", { sports: ["tennis"] });
    socket.serverClose(1006);
    await world.clock.advance(0);
    let next = world.WebSocket.latest;
    await next.acceptAuth();
    const limited = { code: "rate_limited", message: "Too many subscriptions.", data: { retryAfter: 60 } };
    next.replyError(next.framesOf("matches.subscribe")[0], limited);
    await world.clock.advance(1_000);
    next.serverClose(1006);
    await world.clock.advance(0);
    next = world.WebSocket.latest;
    await next.acceptAuth();

    await world.clock.advance(58_999);
    assert.equal(next.framesOf("matches.subscribe").length, 0);
    await world.clock.advance(1);
    assert.equal(next.framesOf("matches.subscribe").length, 1);
    client.close();
  });

  test("connect() while offline still waits out the service's retryAfter", async () => {
    const window = new FakeWindow();
    const world = createWorld();
    const { client } = createTab(world, { window, random: () => 0 });
    client.connect().catch(() => {});
    await flush();
    const socket = world.WebSocket.latest;
    socket.serverOpen();
    await flush();
    socket.replyError(socket.sent[0], { code: "rate_limited", message: "Busy.", data: { retryAfter: 60 } });
    await flush();
    window.goes(false);
    client.connect().catch(() => {});
    await world.clock.advance(59_999);
    assert.equal(world.WebSocket.instances.length, 1);
    await world.clock.advance(1);
    assert.equal(world.WebSocket.instances.length, 2);
    client.close();
  });
});

describe("rule 5: subscriptions survive", () => {
  test("a handle is active, restoring after a drop, active again, closed once unsubscribed", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    const { subscription } = await subscribed(client, socket, "srv-1", { sports: ["tennis"] });
    assert.equal(subscription.state, "active");

    socket.serverClose(1006);
    await flush();
    assert.equal(subscription.state, "restoring");
    await world.clock.advance(0);
    const next = world.WebSocket.latest;
    await next.acceptAuth();
    next.reply(next.framesOf("matches.subscribe")[0], { subscriptionId: "srv-2" });
    await flush();
    assert.equal(subscription.state, "active");

    const unsubscribed = subscription.unsubscribe();
    await flush();
    next.reply(next.framesOf("matches.unsubscribe")[0], { ok: true });
    await unsubscribed;
    assert.equal(subscription.state, "closed");
    client.close();
  });

  test("a restore refused once for another reason is retried with backoff, never dropped", async () => {
    const { world, client, events, subscription, next } = await restoring({ random: () => 1 });
    next.replyError(next.framesOf("matches.subscribe")[0], { code: "internal_error", message: "Oops." });
    await world.clock.advance(500);

    assert.equal(events.error.length, 1);
    next.reply(next.framesOf("matches.subscribe")[1], { subscriptionId: "srv-2" });
    await flush();
    assert.equal(subscription.state, "active");
    client.close();
  });

  for (const code of ["invalid_params", "forbidden"]) {
    test(`a restore refused with ${code} is final: error event, state failed, no retry`, async () => {
      const { world, client, events, subscription, next } = await restoring({ random: () => 0 });
      next.replyError(next.framesOf("matches.subscribe")[0], { code, message: "No." });
      await world.clock.advance(60_000);

      assert.equal(subscription.state, "failed");
      assert.deepEqual(events.error.map((error) => error.code), [code]);
      assert.equal(next.framesOf("matches.subscribe").length, 1);
      client.close();
    });
  }

  test("close() leaves every handle closed", async () => {
    const { client, socket } = await connected();
    const { subscription } = await subscribed(client, socket, "srv-1", {});
    client.close();
    assert.equal(subscription.state, "closed");
  });
});

describe("rule 6: a valid token is used while it is valid", () => {
  test("a refresh failing in the leeway window: calls keep jwt-1 until expiresAt, retried with backoff", async () => {
    const world = createWorld();
    const { client, events } = createTab(world, { random: () => 1, refreshLeewaySec: 30 });
    await client.rpc("ping");
    for (let failure = 0; failure < 20; failure++) {
      world.backend.mintAnswers.push({ status: 503, body: { error: "upstream_unavailable" } });
    }

    await world.clock.advance(570_000); // the refresh fails: next try within 500 ms
    for (let call = 0; call < 10; call++) await client.rpc("ping");
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    assert.ok(world.backend.rpcs.slice(1).every((request) => request.headers.Authorization === "Bearer jwt-1"));
    assert.deepEqual(events.error.map((error) => error.status), [503]);

    await world.clock.advance(500); // the first retry
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh", "refresh"]);
    await world.clock.advance(1_000); // the second, 1 s later
    assert.equal(world.backend.mints.length, 4);
    client.close();
  });

  test("a refresh timing out in the leeway window: the call waiting for it goes on with the valid token", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    await client.rpc("ping");
    world.backend.mintAnswers.push(never());
    await world.clock.jump(575_000); // the tab was frozen: no refresh yet, 25 s of validity left

    const call = track(client.rpc("ping"));
    await world.clock.advance(10_000);

    assert.deepEqual(call.value, { echo: "ping" });
    assert.equal(world.backend.rpcs.at(-1).headers.Authorization, "Bearer jwt-1");
    client.close();
  });

  test("a hung refresh never costs a call its valid token, even seconds before expiry", async () => {
    const world = createWorld();
    const { client } = createTab(world, { random: () => 0, refreshLeewaySec: 30 });
    await client.rpc("ping");
    world.backend.mintAnswers.push(never(), never(), never());
    await world.clock.advance(570_000); // the refresh starts and hangs
    const calls = [];
    for (let second = 0; second < 30; second++) {
      calls.push(track(client.rpc("ping")));
      await world.clock.advance(1_000);
    }
    assert.deepEqual(calls.map((call) => call.state), Array(30).fill("resolved"));
    client.close();
  });

  test("retries stop when the token expires; the next call mints", async () => {
    const world = createWorld();
    let routeDown = false;
    let refused = 0;
    const fetch = (url, init) => {
      if (!routeDown || url !== MINT_URL) return world.backend.fetch(url, init);
      refused++;
      return Promise.reject(new TypeError("Failed to fetch"));
    };
    const { client } = createTab(world, { fetch, random: () => 1, refreshLeewaySec: 30 });
    await client.rpc("ping");
    routeDown = true;
    await world.clock.advance(570_000 + 30_000); // the refresh and its retries at +0.5, +1.5, +3.5, +7.5, +15.5 s
    assert.equal(refused, 6);
    await world.clock.advance(HOUR_MS);
    assert.equal(refused, 6);

    routeDown = false;
    await client.rpc("ping");
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    assert.equal(world.backend.rpcs.at(-1).headers.Authorization, "Bearer jwt-2");
    client.close();
  });
});

describe("rule 7: expiry read right", () => {
  test("an expiresAt without an offset is refused with status 0", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    const local = new Date(world.clock.now + 600_000).toISOString().replace("Z", "");
    world.backend.mintAnswers.push({ status: 200, body: { token: "jwt-x", expiresAt: local } });

    const error = await client.rpc("ping").catch((caught) => caught);
    assert.ok(error instanceof AuthEndpointError);
    assert.equal(error.status, 0);
    assert.match(error.message, /without an offset/);
    client.close();
  });

  test("offsets other than Z are read as written", async () => {
    const world = createWorld();
    const { client } = createTab(world, { random: () => 0 });
    const inTenMinutes = new Date(world.clock.now + 600_000);
    const losAngeles = new Date(inTenMinutes.getTime() - 8 * HOUR_MS).toISOString().replace("Z", "-08:00");
    world.backend.mintAnswers.push({ status: 200, body: { token: "jwt-la", expiresAt: losAngeles } });
    world.backend.issued.set("jwt-la", inTenMinutes.getTime());
    await client.rpc("ping");
    await world.clock.advance(299_999); // halfway to its expiry
    assert.equal(world.backend.mints.length, 1);
    await world.clock.advance(1);
    assert.equal(world.backend.mints.length, 2);
    client.close();
  });

  for (const [label, serverAheadMs] of [["an hour ahead", HOUR_MS], ["an hour behind", -HOUR_MS]]) {
    test(`fetchToken: skew from the JWT's iat when the server's clock is ${label}`, async () => {
      const world = createWorld();
      world.backend.serverAheadMs = serverAheadMs;
      const fetchToken = async () => issueJwt(world.backend);
      const { client, events } = createTab(world, { authEndpoint: undefined, fetchToken, random: () => 0 });
      await client.rpc("ping");

      await world.clock.advance(299_999); // its half-life is 300 s after minting, by any clock
      assert.equal(events.token.length, 1);
      await world.clock.advance(1);
      assert.equal(events.token.length, 2);
      client.close();
    });
  }

  test("the mint route without a Date header: skew from the JWT's iat", async () => {
    const world = createWorld();
    world.backend.serverAheadMs = -HOUR_MS;
    const answer = () => ({ status: 200, body: issueJwt(world.backend) }); // no Date header
    world.backend.mintAnswers.push(answer, answer);
    const { client, events } = createTab(world, { random: () => 0 });
    await client.rpc("ping");
    await world.clock.advance(299_999);
    assert.equal(events.token.length, 1);
    await world.clock.advance(1);
    assert.equal(events.token.length, 2);
    client.close();
  });
});

describe("rule 8: headers of every kind", () => {
  const forms = [
    ["a plain object", { "X-CSRFToken": "abc" }],
    ["a Headers", new Headers({ "X-CSRFToken": "abc" })],
    ["a function returning an object", () => ({ "X-CSRFToken": "abc" })],
    ["a function returning a Headers", () => new Headers({ "X-CSRFToken": "abc" })],
    ["an async function returning a Headers", async () => new Headers({ "X-CSRFToken": "abc" })],
  ];
  for (const [label, authHeaders] of forms) {
    test(`authHeaders as ${label} reaches the mint route`, async () => {
      const world = createWorld();
      const { client } = createTab(world, { authHeaders });
      await client.rpc("ping");
      const sent = new Headers(world.backend.mints[0].headers);
      assert.equal(sent.get("X-CSRFToken"), "abc");
      assert.equal(sent.get("Content-Type"), "application/json");
      client.close();
    });
  }

  test("a Content-Type given in authHeaders replaces the default instead of doubling it", async () => {
    const world = createWorld();
    const { client } = createTab(world, { authHeaders: new Headers({ "content-type": "application/json" }) });
    await client.rpc("ping");
    assert.equal(new Headers(world.backend.mints[0].headers).get("Content-Type"), "application/json");
    client.close();
  });

  test("a throwing authHeaders fails the mint with status 0 and the thrown error as cause", async () => {
    const world = createWorld();
    const thrown = new ReferenceError("csrfToken is not defined");
    const { client } = createTab(world, {
      authHeaders: () => {
        throw thrown;
      },
    });
    const error = await client.rpc("ping").catch((caught) => caught);
    assert.ok(error instanceof AuthEndpointError);
    assert.equal(error.status, 0);
    assert.equal(error.cause, thrown);
    assert.equal(world.backend.mints.length, 0);
    client.close();
  });
});

describe("rule 9: logged out is final", () => {
  const redirects = [
    [
      "a redirect followed to the login page",
      {
        status: 200,
        redirected: true,
        url: "https://site.test/accounts/login/?next=/api/sports-token",
        headers: { "Content-Type": "text/html; charset=utf-8" },
        body: "<!doctype html><title>Log in</title>",
      },
    ],
    ["a 302 to the login page", { status: 302, headers: { Location: "/accounts/login/?next=/api/sports-token" } }],
  ];
  for (const [label, answer] of redirects) {
    test(`${label} is final: AuthEndpointError final, state unauthorized, no more mints`, async () => {
      const world = createWorld();
      const { client, events } = createTab(world);
      world.backend.mintAnswers.push(answer);

      const error = await client.rpc("ping").catch((caught) => caught);
      assert.ok(error instanceof AuthEndpointError);
      assert.equal(error.final, true);
      assert.match(error.message, /accounts\/login/);
      assert.equal(client.state, "unauthorized");
      assert.deepEqual(events.error, [error]);
      await world.clock.advance(HOUR_MS);
      await assert.rejects(client.rpc("ping"), AuthEndpointError);
      assert.equal(world.backend.mints.length, 1);
    });
  }

  test("a redirect that ends at JSON (the route moved to https) is read as a token", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    const ok = world.backend.okMint();
    world.backend.mintAnswers.push({ ...ok, redirected: true, headers: { ...ok.headers, "Content-Type": "application/json" } });
    assert.deepEqual(await client.rpc("ping"), { echo: "ping" });
    client.close();
  });
});

describe("rule 10: a refused token is not reused", () => {
  test("after UnauthorizedError the next call mints (reason unauthorized) before sending", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    await client.rpc("ping");
    world.backend.refusedTokens.add("jwt-1");
    world.backend.refusedTokens.add("jwt-2");
    await assert.rejects(client.rpc("ping"), UnauthorizedError);

    await client.rpc("ping");
    assert.deepEqual(world.backend.mintReasons, ["initial", "unauthorized", "unauthorized"]);
    const bearers = world.backend.rpcs.map((request) => request.headers.Authorization);
    assert.deepEqual(bearers, ["Bearer jwt-1", "Bearer jwt-1", "Bearer jwt-2", "Bearer jwt-3"]);
    client.close();
  });
});

describe("rule 11: locks that fail", () => {
  const brokenLocks = [
    ["throws", { request: () => { throw new DOMException("Access denied", "SecurityError"); } }],
    ["rejects", { request: () => Promise.reject(new DOMException("Access denied", "SecurityError")) }],
  ];
  for (const [label, locks] of brokenLocks) {
    test(`locks.request that ${label}: the refresh mints without the lock`, async () => {
      const world = createWorld();
      const { client, events } = createTab(world, { locks, random: () => 0.5 });
      await client.rpc("ping");
      await world.clock.advance(570_000);

      assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
      assert.deepEqual(events.error, []);
      client.close();
    });
  }
});

describe("rule 12: no crosstalk", () => {
  test("clients of two mint routes on one origin keep their tokens apart; one route's tabs share", async () => {
    const world = createWorld();
    const BroadcastChannel = createBroadcastHub(world.clock);
    const otherRoute = "/api/other-token";
    const fetch = (url, init) => world.backend.fetch(url === otherRoute ? MINT_URL : url, init);
    const sports = createTab(world, { BroadcastChannel });
    const sportsTwin = createTab(world, { BroadcastChannel });
    const other = createTab(world, { BroadcastChannel, authEndpoint: otherRoute, fetch });

    await sports.client.rpc("ping");
    await world.clock.advance(0);

    assert.deepEqual(sportsTwin.events.token.map((event) => event.mintedBy), ["tab"]);
    assert.deepEqual(other.events.token, []);
    for (const { client } of [sports, sportsTwin, other]) client.close();
  });

  test("with fetchToken the channel is named after baseUrl", async () => {
    const world = createWorld();
    const BroadcastChannel = createBroadcastHub(world.clock);
    const fetchToken = async () => world.backend.mintToken();
    const options = { BroadcastChannel, authEndpoint: undefined, fetchToken };
    const first = createTab(world, options);
    const sameService = createTab(world, options);
    const otherService = createTab(world, { ...options, baseUrl: "https://other.test" });

    await first.client.rpc("ping");
    await world.clock.advance(0);

    assert.equal(sameService.events.token.length, 1);
    assert.equal(otherService.events.token.length, 0);
    assert.deepEqual([...BroadcastChannel.members].map((member) => member.name).sort(), [
      "sports-client:https://other.test",
      `sports-client:${BASE_URL}`,
      `sports-client:${BASE_URL}`,
    ]);
    for (const { client } of [first, sameService, otherService]) client.close();
  });
});

describe("rule 13: network comes back", () => {
  test("offline skips reconnect attempts; online reconnects at once", async () => {
    const window = new FakeWindow();
    const { world, client } = await connected({ window, random: () => 1 });
    window.goes(false);
    world.WebSocket.latest.serverClose(1006);
    await world.clock.advance(HOUR_MS);
    assert.equal(world.WebSocket.instances.length, 1);
    assert.equal(client.state, "reconnecting");

    window.goes(true);
    await flush();
    assert.equal(world.WebSocket.instances.length, 2);
    await world.WebSocket.latest.acceptAuth();
    assert.equal(client.state, "open");
    client.close();
  });

  test("online while waiting out a backoff reconnects at once", async () => {
    const window = new FakeWindow();
    const { world, client } = await connected({ window, random: () => 1 });
    for (let drop = 0; drop < 6; drop++) {
      world.WebSocket.latest.serverClose(1006);
      await world.clock.advance(30_000);
    }
    world.WebSocket.latest.serverClose(1006); // now waiting 30 s
    await flush();
    const sockets = world.WebSocket.instances.length;

    window.goes(true);
    await flush();
    assert.equal(world.WebSocket.instances.length, sockets + 1);
    client.close();
  });

  test("close() stops listening to the window", async () => {
    const window = new FakeWindow();
    const added = [];
    const removed = [];
    window.addEventListener = (type) => added.push(type);
    window.removeEventListener = (type) => removed.push(type);
    const { client } = createTab(createWorld(), { window });
    client.close();
    assert.deepEqual(added.sort(), ["offline", "online"]);
    assert.deepEqual(removed.sort(), ["offline", "online"]);
  });

  test("a re-auth that is never answered drops the socket and reconnects", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    socket.keepAlive(world.clock);
    await world.clock.advance(570_000); // the refresh re-authenticates on the open socket
    assert.equal(socket.framesOf("auth").length, 2);
    await world.clock.advance(10_000);
    assert.deepEqual(socket.closedByClient, { code: 1000 });
    assert.equal(client.state, "reconnecting");
    client.close();
  });

  test("60 s without any frame is a dead socket: it is dropped and replaced", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    await world.clock.advance(59_999);
    assert.equal(socket.closedByClient, null);
    await world.clock.advance(1);

    assert.deepEqual(socket.closedByClient, { code: 1000 });
    assert.equal(client.state, "reconnecting");
    await world.clock.advance(0);
    assert.equal(world.WebSocket.instances.length, 2);
    client.close();
  });

  test("the server's pings keep a quiet socket alive", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    socket.keepAlive(world.clock);
    await world.clock.advance(300_000);
    socket.reply(socket.framesOf("auth").at(-1), { ok: true }); // the refresh's re-auth
    await world.clock.advance(10 * 60_000 - 300_000);
    assert.equal(socket.closedByClient, null);
    assert.equal(world.WebSocket.instances.length, 1);
    assert.equal(client.state, "open");
    client.close();
  });
});

describe("rule 14: why a token was refused", () => {
  test("UnauthorizedError.reason carries the service's error.data.reason", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    world.backend.refusedTokens.add("jwt-1");
    world.backend.refusedTokens.add("jwt-2");
    world.backend.refusalData = { reason: "expired_token" };

    const error = await client.rpc("ping").catch((caught) => caught);
    assert.ok(error instanceof UnauthorizedError);
    assert.equal(error.reason, "expired_token");
    client.close();
  });

  test("and is null when the service sent none", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    world.backend.refusedTokens.add("jwt-1");
    world.backend.refusedTokens.add("jwt-2");
    const error = await client.rpc("ping").catch((caught) => caught);
    assert.equal(error.reason, null);
    assert.equal(new UnauthorizedError("No.", { reason: 42 }).reason, null);
    client.close();
  });
});

test("SportsClient refuses timeouts that are not positive numbers of seconds", () => {
  for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, "10"]) {
    assert.throws(() => new SportsClient({ authEndpoint: MINT_URL, baseUrl: BASE_URL, authTimeoutSec: bad }), TypeError);
    assert.throws(() => new SportsClient({ authEndpoint: MINT_URL, baseUrl: BASE_URL, requestTimeoutSec: bad }), TypeError);
  }
});
