// When tokens are refreshed: the timer, clock skew, visibility, and background failures.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { FakeDocument, FakeLocks, START_MS, connected, createBroadcastHub, createTab, createWorld } from "./fakes.mjs";

const FIVE_MINUTES = 5 * 60_000;
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

describe("scheduled refresh", () => {
  const clocks = [
    ["agrees with the server", 0],
    ["is 5 minutes fast (Date header behind it)", -FIVE_MINUTES],
    ["is 5 minutes slow (Date header ahead of it)", +FIVE_MINUTES],
  ];
  for (const [label, serverAheadMs] of clocks) {
    test(`fires at the token's half-life in server time when the local clock ${label}`, async () => {
      const world = createWorld();
      world.backend.serverAheadMs = serverAheadMs;
      const { client, events } = createTab(world, { random: () => 0 });
      await client.rpc("ping"); // ttl 600 s: due 300 s after minting, by any clock

      await world.clock.advance(299_999);
      assert.deepEqual(world.backend.mintReasons, ["initial"]);
      await world.clock.advance(1);
      assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);

      assert.deepEqual(events.token.map(({ reason, mintedBy }) => [reason, mintedBy]), [
        ["initial", "self"],
        ["refresh", "self"],
      ]);
      await world.clock.advance(300_000);
      assert.deepEqual(world.backend.mintReasons, ["initial", "refresh", "refresh"]);
      client.close();
    });
  }

  test("a token handed out part-way through its life is refreshed at its own half-life, read from its iat", async () => {
    const world = createWorld();
    // Issued 200 s ago with a life of 600 s (the route hands it out again while over half is left).
    world.backend.mintAnswers.push(() => world.backend.ok(world.backend.jwtToken(world.backend.serverNow - 200_000)));
    const { client } = createTab(world, { random: () => 0 });
    await client.rpc("ping");

    await world.clock.advance(99_999); // not halfway through the 400 s it has left (200 s)
    assert.deepEqual(world.backend.mintReasons, ["initial"]);
    await world.clock.advance(1);
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    client.close();
  });

  test("refreshLeewaySec moves the refresh to that long before expiry; null keeps the half-life", async () => {
    for (const [refreshLeewaySec, dueMs] of [[60, 540_000], [30, 570_000], [null, 300_000]]) {
      const world = createWorld();
      const { client } = createTab(world, { refreshLeewaySec, random: () => 0 });
      await client.rpc("ping");
      await world.clock.advance(dueMs - 1);
      assert.equal(world.backend.mints.length, 1, `refreshLeewaySec ${refreshLeewaySec}`);
      await world.clock.advance(1);
      assert.equal(world.backend.mints.length, 2, `refreshLeewaySec ${refreshLeewaySec}`);
      client.close();
    }
    assert.throws(() => createTab(createWorld(), { refreshLeewaySec: -1 }), /0 or more, or null/);
  });

  test("a leeway longer than the token's life refreshes at half-life instead of looping", async () => {
    const world = createWorld();
    world.backend.ttlSec = 60;
    const { client } = createTab(world, { refreshLeewaySec: 90, random: () => 0 });
    await client.rpc("ping");
    await client.rpc("ping");
    await world.clock.advance(29_999);
    assert.equal(world.backend.mints.length, 1);
    await world.clock.advance(1);
    assert.equal(world.backend.mints.length, 2);
    client.close();
  });

  test("the next call uses the refreshed token", async () => {
    const world = createWorld();
    const { client } = createTab(world, { random: () => 0 });
    await client.rpc("ping");
    await world.clock.advance(300_000);
    await client.rpc("ping");
    assert.deepEqual(world.backend.rpcs.map((request) => request.headers.Authorization), [
      "Bearer jwt-1",
      "Bearer jwt-2",
    ]);
    client.close();
  });

  test("never asks setTimeout for more than 2**31-1 ms, and wakes up to re-check", async () => {
    const world = createWorld();
    world.backend.ttlSec = 120 * 86_400; // refreshed after 60 days: well past setTimeout's limit
    const { client } = createTab(world, { random: () => 0 });
    await client.rpc("ping");
    assert.deepEqual(world.clock.pending().map((timer) => timer.delayMs), [MAX_TIMER_DELAY_MS]);

    await world.clock.advance(MAX_TIMER_DELAY_MS);
    assert.equal(world.backend.mints.length, 1);
    assert.deepEqual(world.clock.pending().map((timer) => timer.delayMs), [MAX_TIMER_DELAY_MS]);

    const dueAfterMs = 60 * 86_400_000; // its half-life
    await world.clock.advance(dueAfterMs - MAX_TIMER_DELAY_MS - 1);
    assert.equal(world.backend.mints.length, 1);
    await world.clock.advance(1);
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    client.close();
  });
});

describe("freshness checked by hand", () => {
  test("a call past the half-life starts the refresh (its tab's timers were frozen)", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    await client.rpc("ping");
    await world.clock.jump(575_000); // jwt-1 still valid for 25 s, but long past its half-life

    await client.rpc("ping"); // goes with jwt-1: it outlives requestTimeoutSec (runs-anywhere.test.mjs)
    await client.rpc("ping");

    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    assert.deepEqual(world.backend.rpcs.map((request) => request.headers.Authorization).slice(1), [
      "Bearer jwt-1",
      "Bearer jwt-2",
    ]);
    client.close();
  });

  test("a tab becoming visible refreshes a stale token without any call", async () => {
    const world = createWorld();
    const document = new FakeDocument();
    const { client } = createTab(world, { document });
    await client.rpc("ping");

    document.becomes("visible"); // still fresh: nothing to do
    document.becomes("hidden");
    await world.clock.jump(580_000);
    document.becomes("hidden");
    assert.deepEqual(world.backend.mintReasons, ["initial"]);

    document.becomes("visible");
    document.becomes("visible"); // the mint in flight is not duplicated
    await world.clock.jump(0);
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    client.close();
  });

  test("repeated visibilitychange events during one failing mint report one error", async () => {
    const world = createWorld();
    const document = new FakeDocument();
    const { client, events } = createTab(world, { document, random: () => 1 });
    await client.rpc("ping");
    await world.clock.jump(580_000);
    world.backend.mintAnswers.push({ status: 503, body: {} });

    document.becomes("visible");
    document.becomes("visible");
    await world.clock.jump(0);

    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    assert.deepEqual(events.error.map((error) => error.status), [503]);
    client.close();
  });

  test("visibility does nothing before the first token", async () => {
    const world = createWorld();
    const document = new FakeDocument();
    const { client } = createTab(world, { document });
    document.becomes("visible");
    await world.clock.jump(0);
    assert.equal(world.backend.mints.length, 0);
    client.close();
  });
});

/** The mint route's answer that hands back jwt-1 (minted at START_MS, ttl 600 s): it could not mint. */
const handBackJwt1 = (world) => () => world.backend.ok({ token: "jwt-1", expiresAt: new Date(START_MS + 600_000).toISOString() });

describe("a refresh answered with the token held (the route rides through an outage)", () => {
  test("keeps it, tells no other tab, and asks again on the backoff, never at once", async () => {
    const world = createWorld();
    const BroadcastChannel = createBroadcastHub(world.clock);
    const { client, events } = createTab(world, { BroadcastChannel, locks: new FakeLocks(), random: () => 0.5 });
    await client.rpc("ping");
    world.backend.mintAnswers.push(handBackJwt1(world));

    await world.clock.advance(300_000); // the half-life: the refresh is answered jwt-1 again
    await world.clock.advance(0);
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    for (let call = 0; call < 5; call++) await client.rpc("ping"); // calls go with it and mint nothing
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    assert.ok(world.backend.rpcs.every((request) => request.headers.Authorization === "Bearer jwt-1"));

    await world.clock.advance(10_249); // 10 s, then the backoff's first step: random() * 0.5 s
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    await world.clock.advance(1);
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh", "refresh"]); // jwt-2, fresh
    await client.rpc("ping");
    assert.equal(world.backend.rpcs.at(-1).headers.Authorization, "Bearer jwt-2");

    // Each answer is a "token" event; only a new token goes to the other tabs; nothing is an error.
    assert.deepEqual(events.token.map(({ reason, fingerprint }) => [reason, fingerprint]), [
      ["initial", "jwt-1"],
      ["refresh", "jwt-1"],
      ["refresh", "jwt-2"],
    ]);
    assert.deepEqual([...BroadcastChannel.members][0].posted.map((message) => message.token), ["jwt-1", "jwt-2"]);
    assert.deepEqual(events.error, []);
    await world.clock.advance(299_000); // and jwt-2 is refreshed at its own half-life (the Date header's second)
    assert.equal(world.backend.mints.length, 3);
    await world.clock.advance(2_000);
    assert.equal(world.backend.mints.length, 4);
    client.close();
  });

  test("handed back again and again: one ask per 10 s at most, on a growing backoff, until the route refuses", async () => {
    const world = createWorld();
    const { client, events } = createTab(world, { locks: new FakeLocks(), random: () => 0.999999 });
    await client.rpc("ping");
    const handBack = handBackJwt1(world);
    const refuse = { status: 503, body: { error: "upstream_unavailable", message: "Down." } };
    // The route rides through while jwt-1 has more than 60 s left, then answers the outage.
    const asks = [];
    const answer = () => {
      asks.push(Math.round((world.clock.now - START_MS) / 100) / 10);
      return world.backend.serverNow < START_MS + 540_000 ? handBack() : refuse;
    };
    for (let ask = 0; ask < 100; ask++) world.backend.mintAnswers.push(answer);

    for (let atMs = 5_000; atMs < 600_000; atMs += 5_000) {
      await world.clock.advance(5_000);
      await client.rpc("ping"); // the page keeps calling until jwt-1 expires: always with it
    }

    // Handed back at 300 s, then 10 s + random() * min(30 s, 0.5 s * 2**n) apart: 10.5, 11, 12, 14, 18, 26, 40 s...
    const handedBack = [300, 310.5, 321.5, 333.5, 347.5, 365.5, 391.5, 431.5, 471.5, 511.5];
    // ... until the route refuses (jwt-1 has a minute or less): the failure's backoff, until jwt-1 expires.
    assert.deepEqual(asks, [...handedBack, 551.5, 581.5]);
    assert.deepEqual(events.error.map((error) => error.status), [503, 503]); // the page hears of nothing before
    assert.equal(world.backend.rpcs.length, 1 + 119);
    assert.ok(world.backend.rpcs.every((request) => request.headers.Authorization === "Bearer jwt-1"));
    client.close();
  });

  test("the retry is never set past the token's expiry", async () => {
    const world = createWorld();
    world.backend.ttlSec = 30;
    const { client } = createTab(world, { locks: new FakeLocks(), random: () => 0.5 });
    await client.rpc("ping");
    const again = () => world.backend.ok({ token: "jwt-1", expiresAt: new Date(START_MS + 30_000).toISOString() });
    world.backend.mintAnswers.push(again, again);

    await world.clock.advance(15_000); // handed back at the half-life: 10.25 s later, 4.75 s before expiry
    assert.deepEqual(world.clock.pending().map((timer) => timer.at - START_MS), [25_250]);
    await world.clock.advance(10_250); // handed back again: the next try waits no longer than jwt-1 lives
    assert.deepEqual(world.clock.pending().map((timer) => timer.at - START_MS), [30_000]);
    await world.clock.advance(60_000);
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh", "refresh"]); // expired: nothing to refresh
    await client.rpc("ping"); // the next call mints
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh", "refresh", "refresh"]);
    assert.equal(world.backend.rpcs.at(-1).headers.Authorization, "Bearer jwt-2");
    client.close();
  });

  test("handed back while still fresh (a reconnect the route answers by reuse): the refresh stays at the half-life", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    socket.keepAlive(world.clock);
    world.backend.mintAnswers.push(handBackJwt1(world));
    await world.clock.advance(100_000);
    socket.serverClose(1006);
    await world.clock.advance(0);
    await world.WebSocket.latest.acceptAuth();
    world.WebSocket.latest.keepAlive(world.clock);
    assert.deepEqual(world.backend.mintReasons, ["initial", "reconnect"]);

    await world.clock.advance(199_999);
    assert.deepEqual(world.backend.mintReasons, ["initial", "reconnect"]);
    await world.clock.advance(1);
    assert.deepEqual(world.backend.mintReasons, ["initial", "reconnect", "refresh"]);
    client.close();
  });
});

describe("background refresh failures", () => {
  test("are reported on the error event and retried with full-jitter backoff", async () => {
    const world = createWorld();
    const { client, events } = createTab(world, { locks: new FakeLocks(), random: () => 1 });
    await client.rpc("ping");
    world.backend.mintAnswers.push({ status: 503, body: { error: "upstream_unavailable" } }, new TypeError("fetch failed"));

    await world.clock.advance(300_000); // fails (503): next try within 500 ms
    await world.clock.advance(499);
    assert.equal(world.backend.mints.length, 2);
    await world.clock.advance(1); // fails (network): next try within 1000 ms
    await world.clock.advance(999);
    assert.equal(world.backend.mints.length, 3);
    await world.clock.advance(1);

    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh", "refresh", "refresh"]);
    assert.deepEqual(events.error.map((error) => [error.name, error.status, error.final]), [
      ["AuthEndpointError", 503, false],
      ["AuthEndpointError", 0, false],
    ]);
    assert.equal(client.state, "idle");
    await client.rpc("ping");
    assert.equal(world.backend.rpcs.at(-1).headers.Authorization, "Bearer jwt-2");
    client.close();
  });

  test("Retry-After is the minimum delay before the next mint", async () => {
    const world = createWorld();
    const { client, events } = createTab(world, { locks: new FakeLocks(), random: () => 0 });
    await client.rpc("ping");
    world.backend.mintAnswers.push({ status: 429, headers: { "Retry-After": "7" }, body: { error: "rate_limited" } });

    await world.clock.advance(300_000);
    assert.equal(events.error[0].retryAfter, 7);
    await world.clock.advance(6_999);
    assert.equal(world.backend.mints.length, 2);
    await world.clock.advance(1);
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh", "refresh"]);
    client.close();
  });

  for (const status of [401, 403]) {
    test(`a ${status} is final: state unauthorized, one error event, no timers left`, async () => {
      const world = createWorld();
      const { client, events } = createTab(world, { locks: new FakeLocks(), random: () => 0 });
      await client.rpc("ping");
      world.backend.mintAnswers.push({ status, body: { error: "not_authenticated" } });

      await world.clock.advance(300_000);
      await world.clock.advance(3_600_000);

      assert.equal(client.state, "unauthorized");
      assert.deepEqual(events.state, ["unauthorized"]);
      assert.deepEqual(events.error.map((error) => [error.status, error.final]), [[status, true]]);
      assert.deepEqual(world.clock.pending(), []);
      assert.equal(world.backend.mints.length, 2);
      await assert.rejects(client.rpc("ping"), events.error[0]);
      assert.equal(world.backend.mints.length, 2);
    });
  }
});
