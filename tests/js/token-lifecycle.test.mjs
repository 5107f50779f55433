// When tokens are refreshed: the timer, clock skew, visibility, and background failures.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { FakeDocument, FakeLocks, createTab, createWorld } from "./fakes.mjs";

const FIVE_MINUTES = 5 * 60_000;
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

describe("scheduled refresh", () => {
  const clocks = [
    ["agrees with the server", 0],
    ["is 5 minutes fast (Date header behind it)", -FIVE_MINUTES],
    ["is 5 minutes slow (Date header ahead of it)", +FIVE_MINUTES],
  ];
  for (const [label, serverAheadMs] of clocks) {
    test(`fires at expiresAt - leeway in server time when the local clock ${label}`, async () => {
      const world = createWorld();
      world.backend.serverAheadMs = serverAheadMs;
      const { client, events } = createTab(world, { random: () => 0 });
      await client.rpc("ping"); // ttl 600 s, leeway 30 s: due 570 s after minting, by any clock

      await world.clock.advance(569_999);
      assert.deepEqual(world.backend.mintReasons, ["initial"]);
      await world.clock.advance(1);
      assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);

      assert.deepEqual(events.token.map(({ reason, mintedBy }) => [reason, mintedBy]), [
        ["initial", "self"],
        ["refresh", "self"],
      ]);
      await world.clock.advance(570_000);
      assert.deepEqual(world.backend.mintReasons, ["initial", "refresh", "refresh"]);
      client.close();
    });
  }

  test("refreshLeewaySec moves the refresh", async () => {
    const world = createWorld();
    const { client } = createTab(world, { refreshLeewaySec: 60, random: () => 0 });
    await client.rpc("ping");
    await world.clock.advance(539_999);
    assert.equal(world.backend.mints.length, 1);
    await world.clock.advance(1);
    assert.equal(world.backend.mints.length, 2);
    client.close();
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
    await world.clock.advance(570_000);
    await client.rpc("ping");
    assert.deepEqual(world.backend.rpcs.map((request) => request.headers.Authorization), [
      "Bearer jwt-1",
      "Bearer jwt-2",
    ]);
    client.close();
  });

  test("never asks setTimeout for more than 2**31-1 ms, and wakes up to re-check", async () => {
    const world = createWorld();
    world.backend.ttlSec = 60 * 86_400; // 60 days: well past setTimeout's limit
    const { client } = createTab(world, { random: () => 0 });
    await client.rpc("ping");
    assert.deepEqual(world.clock.pending().map((timer) => timer.delayMs), [MAX_TIMER_DELAY_MS]);

    await world.clock.advance(MAX_TIMER_DELAY_MS);
    assert.equal(world.backend.mints.length, 1);
    assert.deepEqual(world.clock.pending().map((timer) => timer.delayMs), [MAX_TIMER_DELAY_MS]);

    const dueAfterMs = 60 * 86_400_000 - 30_000;
    await world.clock.advance(dueAfterMs - MAX_TIMER_DELAY_MS - 1);
    assert.equal(world.backend.mints.length, 1);
    await world.clock.advance(1);
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    client.close();
  });
});

describe("freshness checked by hand", () => {
  test("a call inside the leeway window starts the refresh (its tab's timers were frozen)", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    await client.rpc("ping");
    await world.clock.jump(575_000); // jwt-1 still valid for 25 s, but within the 30 s leeway

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

describe("background refresh failures", () => {
  test("are reported on the error event and retried with full-jitter backoff", async () => {
    const world = createWorld();
    const { client, events } = createTab(world, { locks: new FakeLocks(), random: () => 1 });
    await client.rpc("ping");
    world.backend.mintAnswers.push({ status: 503, body: { error: "upstream_unavailable" } }, new TypeError("fetch failed"));

    await world.clock.advance(570_000); // fails (503): next try within 500 ms
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

    await world.clock.advance(570_000);
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

      await world.clock.advance(570_000);
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
