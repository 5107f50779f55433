// Tabs of one origin share their token: one mint per refresh, however many tabs are open.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { FakeLocks, START_MS, createBroadcastHub, createTab, createWorld, flush } from "./fakes.mjs";

/** The default channel is named after the mint route, resolved; the Web Lock after the channel. */
const CHANNEL_NAME = "sports-client:https://sports.test/api/sports-token";
const LOCK_NAME = `${CHANNEL_NAME}-refresh`;

/** `count` tabs sharing a BroadcastChannel hub and (when `withLocks`) one Web Locks manager. */
function openTabs(count, { withLocks, randoms = [] } = {}) {
  const world = createWorld();
  const BroadcastChannel = createBroadcastHub(world.clock);
  const locks = withLocks ? new FakeLocks() : null;
  const tabs = Array.from({ length: count }, (_, index) =>
    createTab(world, { BroadcastChannel, locks, random: () => randoms[index] ?? 0 }),
  );
  return { world, tabs, BroadcastChannel, locks };
}

const bearersAfter = async (world, tabs) => {
  const before = world.backend.rpcs.length;
  for (const { client } of tabs) await client.rpc("ping");
  return world.backend.rpcs.slice(before).map((request) => request.headers.Authorization);
};

describe("tabs sharing a token", () => {
  test("a tab adopts another tab's token and calls with it without minting", async () => {
    const { world, tabs, BroadcastChannel } = openTabs(2, { withLocks: true });
    const [first, second] = tabs;
    await first.client.rpc("ping");
    await world.clock.advance(0); // the broadcast arrives

    await second.client.rpc("ping");

    assert.deepEqual(world.backend.mintReasons, ["initial"]);
    assert.equal(world.backend.rpcs[1].headers.Authorization, "Bearer jwt-1");
    const [message] = [...BroadcastChannel.members][0].posted;
    assert.deepEqual(message, {
      type: "token",
      token: "jwt-1",
      expiresAt: new Date(START_MS + 600_000).toISOString(),
      skewMs: 0,
      reason: "initial",
    });
    assert.deepEqual(second.events.token, [
      { expiresAt: message.expiresAt, reason: "initial", mintedBy: "tab", fingerprint: "jwt-1" },
    ]);
    for (const { client } of tabs) client.close();
  });

  test("two tabs with Web Locks mint once per refresh", async () => {
    const { world, tabs, locks } = openTabs(2, { withLocks: true });
    await tabs[0].client.rpc("ping");
    await world.clock.advance(0);

    await world.clock.advance(300_000); // both tabs' timers fire now (the token's half-life)
    await world.clock.advance(50); // the first tab releases the lock; the second finds a fresh token
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    assert.deepEqual(locks.requested, [LOCK_NAME, LOCK_NAME]);
    assert.deepEqual(await bearersAfter(world, tabs), ["Bearer jwt-2", "Bearer jwt-2"]);

    await world.clock.advance(300_000);
    await world.clock.advance(50);
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh", "refresh"]);
    for (const { client } of tabs) client.close();
  });

  test("five tabs with Web Locks mint once per refresh", async () => {
    const { world, tabs } = openTabs(5, { withLocks: true });
    await tabs[0].client.rpc("ping");
    await world.clock.advance(0);

    for (let refresh = 1; refresh <= 3; refresh++) {
      await world.clock.advance(300_000);
      await world.clock.advance(50);
      assert.equal(world.backend.mints.length, 1 + refresh);
    }

    assert.deepEqual(await bearersAfter(world, tabs), Array(5).fill("Bearer jwt-4"));
    // Each of the 4 tokens: "self" in the tab that minted it, "tab" in the 4 others.
    const tokenEvents = tabs.flatMap(({ events }) => events.token);
    assert.equal(tokenEvents.filter((event) => event.mintedBy === "self").length, 4);
    assert.equal(tokenEvents.filter((event) => event.mintedBy === "tab").length, 16);
    for (const { client } of tabs) client.close();
  });

  test("without Web Locks, refreshes are spread over 2 s and a received token cancels the rest", async () => {
    // random() of 0.1 and 0.6: the tabs wait 200 ms and 1200 ms before minting.
    const { world, tabs } = openTabs(2, { withLocks: false, randoms: [0.1, 0.6] });
    await tabs[1].client.rpc("ping");
    await world.clock.advance(0);

    await world.clock.advance(300_000 + 199);
    assert.equal(world.backend.mints.length, 1);
    await world.clock.advance(1);
    await world.clock.advance(5_000);

    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    assert.deepEqual(tabs[0].events.token.map((event) => event.mintedBy), ["tab", "self"]);
    assert.deepEqual(tabs[1].events.token.map((event) => event.mintedBy), ["self", "tab"]);
    assert.deepEqual(await bearersAfter(world, tabs), ["Bearer jwt-2", "Bearer jwt-2"]);
    for (const { client } of tabs) client.close();
  });

  test("a token that expires no later than the held one is not adopted", async () => {
    const { world, tabs, BroadcastChannel } = openTabs(1, { withLocks: true });
    const [{ client, events }] = tabs;
    await client.rpc("ping");
    const held = events.token[0].expiresAt;
    const otherTab = new BroadcastChannel(CHANNEL_NAME);

    otherTab.postMessage({ type: "token", token: "older", expiresAt: held, skewMs: 0 });
    otherTab.postMessage({ type: "token", token: "broken", expiresAt: "later", skewMs: 0 });
    otherTab.postMessage({ type: "noise" });
    await world.clock.advance(0);
    await client.rpc("ping");

    assert.equal(events.token.length, 1);
    assert.equal(world.backend.rpcs.at(-1).headers.Authorization, "Bearer jwt-1");
    otherTab.close();
    client.close();
  });

  test("a token already due for refresh is not adopted, even by a tab without one", async () => {
    const { world, tabs, BroadcastChannel } = openTabs(1, { withLocks: true });
    const [{ client, events }] = tabs;
    const otherTab = new BroadcastChannel(CHANNEL_NAME);
    // Issued 400 s ago, 200 s left: past its half-life (a token an outage left the route to hand out).
    const { token, expiresAt } = world.backend.jwtToken(world.backend.serverNow - 400_000);

    otherTab.postMessage({ type: "token", token, expiresAt, skewMs: 0 });
    await world.clock.advance(0);
    await client.rpc("ping");

    assert.deepEqual(events.token.map((event) => event.mintedBy), ["self"]);
    assert.deepEqual(world.backend.mintReasons, ["initial"]);
    otherTab.close();
    client.close();
  });

  test("an adopted token reschedules the refresh to its own half-life", async () => {
    const { world, tabs, BroadcastChannel } = openTabs(1, { withLocks: true });
    const [{ client }] = tabs;
    await client.rpc("ping");
    const otherTab = new BroadcastChannel(CHANNEL_NAME);
    const later = new Date(world.clock.now + 900_000).toISOString();

    otherTab.postMessage({ type: "token", token: "from-tab", expiresAt: later, skewMs: 0, reason: "refresh" });
    await world.clock.advance(0);
    await world.clock.advance(449_999); // halfway through its 900 s
    assert.equal(world.backend.mints.length, 1);
    await world.clock.advance(1);

    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    assert.deepEqual(otherTab.posted.length, 1);
    otherTab.close();
    client.close();
  });

  test("closing a tab while it holds the refresh lock releases the lock", async () => {
    const { world, tabs, locks } = openTabs(2, { withLocks: true });
    const [first, second] = tabs;
    await first.client.rpc("ping");
    await world.clock.advance(0);

    await world.clock.advance(300_000); // the first tab mints, then holds the lock for 50 ms
    first.client.close();
    let granted = false;
    locks.request(LOCK_NAME, () => (granted = true));
    await flush();

    assert.equal(granted, true);
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    // Only the second tab's next refresh is left; the first tab's 50 ms wait is gone.
    assert.deepEqual(world.clock.pending().map((timer) => timer.delayMs), [300_000]);
    await second.client.rpc("ping");
    assert.equal(world.backend.rpcs.at(-1).headers.Authorization, "Bearer jwt-2");
    second.client.close();
    assert.deepEqual(world.clock.pending(), []);
  });
});
