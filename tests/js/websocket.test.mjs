// The live connection: auth frames, subscriptions, reconnects, superseded sockets, close().

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { RpcError } from "../../mintroute/static/sports/sports-client.js";
import {
  FakeDocument,
  FakeLocks,
  WS_URL,
  connected,
  createBroadcastHub,
  createTab,
  createWorld,
  flush,
  subscribed,
} from "./fakes.mjs";

const match = { id: "m-1", sport: "tennis", status: "live", score: { home: 1, away: 0 } };
const event = (subscriptionId) => ({
  jsonrpc: "2.0",
  method: "matches.event",
  params: { subscriptionId, kind: "score", match },
});

describe("connecting", () => {
  test("sends auth with a token minted for reason initial as the first frame, then is open", async () => {
    const { world, client, events, socket } = await connected();

    assert.equal(socket.url, WS_URL);
    assert.deepEqual(socket.sent, [{ jsonrpc: "2.0", id: "1", method: "auth", params: { token: "jwt-1" } }]);
    assert.deepEqual(world.backend.mintReasons, ["initial"]);
    assert.deepEqual(events.state, ["connecting", "open"]);
    assert.equal(client.state, "open");
    await client.connect(); // already open: nothing new
    assert.equal(world.WebSocket.instances.length, 1);
    client.close();
  });

  test("reuses a fresh token an earlier call minted", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    await client.rpc("ping");
    client.connect().catch(() => {}); // close() rejects it
    await flush();
    world.WebSocket.latest.serverOpen();
    assert.deepEqual(world.WebSocket.latest.sent[0].params, { token: "jwt-1" });
    assert.deepEqual(world.backend.mintReasons, ["initial"]);
    client.close();
  });

  test("a refresh re-authenticates the open socket instead of reconnecting", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    socket.keepAlive(world.clock);

    await world.clock.advance(300_000);
    socket.reply(socket.sent.at(-1), { ok: true });
    await flush();

    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    assert.deepEqual(socket.framesOf("auth").map((frame) => frame.params.token), ["jwt-1", "jwt-2"]);
    assert.equal(world.WebSocket.instances.length, 1);
    assert.equal(client.state, "open");
    client.close();
  });

  test("a token arriving while the socket opens is sent right after auth succeeds", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    client.connect().catch(() => {}); // close() rejects it
    await flush();
    const socket = world.WebSocket.latest;
    socket.serverOpen();
    await world.clock.jump(600_000);
    await client.rpc("ping"); // mints jwt-2 before the server has answered auth(jwt-1)
    socket.reply(socket.sent[0], { ok: true });
    await flush();

    assert.deepEqual(socket.framesOf("auth").map((frame) => frame.params.token), ["jwt-1", "jwt-2"]);
    client.close();
  });
});

describe("subscriptions", () => {
  test("subscribe connects, sends matches.subscribe, and routes events under the local id", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    const received = [];
    const pending = client.subscribe({ sports: ["tennis"] }, (params) => received.push(params));
    await flush();
    const socket = world.WebSocket.latest;
    await socket.acceptAuth();
    const [frame] = socket.framesOf("matches.subscribe");
    socket.reply(frame, { subscriptionId: "srv-1" });
    const subscription = await pending;

    socket.serverSend(event("srv-1"));
    socket.serverSend(event("srv-unknown"));

    assert.deepEqual(frame, { jsonrpc: "2.0", id: "2", method: "matches.subscribe", params: { sports: ["tennis"] } });
    assert.equal(subscription.id, "sub-1");
    assert.deepEqual(received, [{ subscriptionId: "sub-1", kind: "score", match }]);
    client.close();
  });

  test("unsubscribe sends matches.unsubscribe and stops the events", async () => {
    const { client, socket } = await connected();
    const { subscription, received } = await subscribed(client, socket, "srv-1");

    const done = subscription.unsubscribe();
    await flush();
    const [frame] = socket.framesOf("matches.unsubscribe");
    socket.reply(frame, { ok: true });
    await done;
    socket.serverSend(event("srv-1"));

    assert.deepEqual(frame.params, { subscriptionId: "srv-1" });
    assert.deepEqual(received, []);
    client.close();
  });

  test("unsubscribing while a restore is in flight unsubscribes the id the server then sends", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    const { subscription, received } = await subscribed(client, socket, "srv-1");
    socket.serverClose(1006);
    await world.clock.advance(0);
    const replacement = world.WebSocket.latest;
    await replacement.acceptAuth();
    const [resubscribe] = replacement.framesOf("matches.subscribe");

    await subscription.unsubscribe(); // nothing to send yet: the server has not named it
    replacement.reply(resubscribe, { subscriptionId: "srv-2" });
    await flush();
    replacement.serverSend(event("srv-2"));

    assert.deepEqual(replacement.framesOf("matches.unsubscribe").map((frame) => frame.params), [
      { subscriptionId: "srv-2" },
    ]);
    assert.deepEqual(socket.framesOf("matches.unsubscribe"), []);
    assert.deepEqual(received, []);
    client.close();
  });

  test("a subscription the server refuses rejects with its RpcError", async () => {
    const { client, socket } = await connected();
    const pending = client.subscribe({ sports: ["curling"] }, () => {});
    await flush();
    socket.replyError(socket.framesOf("matches.subscribe")[0], { code: "invalid_params", message: "Unknown sport: curling." });
    await assert.rejects(pending, { name: "RpcError", code: "invalid_params" });
    client.close();
  });

  test("subscribe needs an onEvent function", async () => {
    const { client } = createTab(createWorld());
    await assert.rejects(client.subscribe({ sports: ["tennis"] }), TypeError);
    client.close();
  });
});

describe("reconnecting", () => {
  test("after a drop: backoff, a token for reason reconnect, auth, then the subscriptions again", async () => {
    const { world, client, events, socket } = await connected({ random: () => 0.5 });
    const { subscription, received } = await subscribed(client, socket, "srv-1");

    socket.serverClose(1006);
    await flush();
    assert.equal(client.state, "reconnecting");
    await world.clock.advance(249); // backoff(0) with random 0.5 = 250 ms
    assert.equal(world.WebSocket.instances.length, 1);
    await world.clock.advance(1);

    const replacement = world.WebSocket.latest;
    assert.equal(world.WebSocket.instances.length, 2);
    assert.deepEqual(world.backend.mintReasons, ["initial", "reconnect"]);
    await replacement.acceptAuth();
    const [resubscribe] = replacement.framesOf("matches.subscribe");
    replacement.reply(resubscribe, { subscriptionId: "srv-2" });
    await flush();
    replacement.serverSend(event("srv-1")); // the old server id means nothing on the new socket
    replacement.serverSend(event("srv-2"));

    assert.deepEqual(replacement.sent[0].params, { token: "jwt-2" });
    assert.deepEqual(resubscribe.params, { sports: ["tennis"] });
    assert.deepEqual(received, [{ subscriptionId: subscription.id, kind: "score", match }]);
    assert.deepEqual(events.state, ["connecting", "open", "reconnecting", "open"]);
    client.close();
  });

  test("dropConnection() closes the open socket like a drop: reconnect, new token, subscriptions back", async () => {
    const { world, client, events, socket } = await connected({ random: () => 0.5 });
    const { subscription, received } = await subscribed(client, socket, "srv-1");

    client.dropConnection();
    assert.equal(socket.readyState, 3);
    assert.equal(client.state, "reconnecting");
    await world.clock.advance(250);
    const replacement = world.WebSocket.latest;
    assert.equal(world.WebSocket.instances.length, 2);
    await replacement.acceptAuth();
    replacement.reply(replacement.framesOf("matches.subscribe")[0], { subscriptionId: "srv-9" });
    await flush();
    replacement.serverSend(event("srv-9"));

    assert.deepEqual(world.backend.mintReasons, ["initial", "reconnect"]);
    assert.deepEqual(received, [{ subscriptionId: subscription.id, kind: "score", match }]);
    assert.deepEqual(events.state, ["connecting", "open", "reconnecting", "open"]);
    client.dropConnection(); // while open again: the same, once
    client.dropConnection(); // no longer open: nothing
    assert.equal(world.WebSocket.instances.length, 2);
    client.close();
  });

  for (const [label, random, ceilings] of [
    ["random pinned to 1: the ceiling", () => 1, [500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]],
    ["random pinned to 0: no wait", () => 0, [0, 0, 0, 0, 0, 0, 0, 0]],
  ]) {
    test(`reconnect delays stay within [0, min(30 s, 500 ms * 2^n)], ${label}`, async () => {
      const { world, client, socket } = await connected({ random });
      socket.serverClose(1006);
      const delays = [];
      for (const _ of ceilings) {
        await flush();
        delays.push(...world.clock.pending().filter((timer) => timer.delayMs <= 30_000).map((timer) => timer.delayMs));
        await world.clock.advance(delays.at(-1));
        world.WebSocket.latest.serverClose(1006); // the server is still down
      }

      assert.deepEqual(delays, ceilings);
      assert.equal(world.WebSocket.instances.length, 1 + ceilings.length);
      // One new token per drop, not one per failed attempt.
      assert.deepEqual(world.backend.mintReasons, ["initial", "reconnect"]);
      client.close();
    });
  }

  test("the backoff starts over only once a socket has stayed authenticated for 10 s", async () => {
    const { world, client, socket } = await connected({ random: () => 1 });
    const backoffTimers = () => world.clock.pending().filter((timer) => timer.delayMs <= 30_000);
    socket.serverClose(1006);
    await world.clock.advance(500);
    world.WebSocket.latest.serverClose(1006);
    await world.clock.advance(1_000);
    await world.WebSocket.latest.acceptAuth();

    world.WebSocket.latest.serverClose(1006); // authenticated, then dropped at once: n goes on
    await flush();
    assert.deepEqual(backoffTimers().map((timer) => timer.delayMs), [2_000]);
    await world.clock.advance(2_000);
    await world.WebSocket.latest.acceptAuth();
    await world.clock.advance(9_999);
    world.WebSocket.latest.serverClose(1006); // 1 ms short of proving itself
    await flush();
    assert.deepEqual(backoffTimers().map((timer) => timer.delayMs), [4_000]);

    await world.clock.advance(4_000);
    await world.WebSocket.latest.acceptAuth();
    await world.clock.advance(10_000);
    world.WebSocket.latest.serverClose(1006); // stayed 10 s: the backoff starts over
    await flush();
    assert.deepEqual(backoffTimers().map((timer) => timer.delayMs), [500]);
    client.close();
  });

  test("a 4401 close fetches a token for reason unauthorized, then reconnects", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    socket.serverClose(4401);
    await world.clock.advance(0);

    assert.deepEqual(world.backend.mintReasons, ["initial", "unauthorized"]);
    assert.equal(world.WebSocket.instances.length, 2);
    world.WebSocket.latest.serverOpen();
    assert.deepEqual(world.WebSocket.latest.sent, [
      { jsonrpc: "2.0", id: "1", method: "auth", params: { token: "jwt-2" } },
    ]);
    client.close();
  });

  test("a refused auth frame leads to the same, even if the server keeps the socket open", async () => {
    const world = createWorld();
    const { client } = createTab(world, { random: () => 0 });
    client.connect().catch(() => {}); // close() rejects it
    await flush();
    const socket = world.WebSocket.latest;
    socket.serverOpen();
    socket.replyError(socket.sent[0], { code: "unauthorized", message: "Token expired." });
    await world.clock.advance(0);
    socket.serverClose(4401); // late: that socket is already superseded

    assert.deepEqual(socket.closedByClient, { code: 1000 });
    assert.deepEqual(world.backend.mintReasons, ["initial", "unauthorized"]);
    assert.equal(world.WebSocket.instances.length, 2);
    client.close();
  });

  test("auth.expired: the socket is superseded, and what it still sends is ignored", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    const { received } = await subscribed(client, socket, "srv-1");
    const lateSubscribe = client.subscribe({ sports: ["football"] }, () => {});
    await flush();
    const [, lateFrame] = socket.framesOf("matches.subscribe");

    socket.serverSend({ jsonrpc: "2.0", method: "auth.expired", params: {} });
    await world.clock.advance(0);
    socket.serverSend(event("srv-1"));
    socket.reply(lateFrame, { subscriptionId: "srv-old" });
    socket.serverClose(4401);
    await world.clock.advance(1_000);

    assert.deepEqual(socket.closedByClient, { code: 1000 });
    assert.deepEqual(world.backend.mintReasons, ["initial", "unauthorized"]);
    assert.equal(world.WebSocket.instances.length, 2);
    assert.deepEqual(received, []);

    const replacement = world.WebSocket.latest;
    await replacement.acceptAuth();
    const frames = replacement.framesOf("matches.subscribe");
    assert.deepEqual(frames.map((frame) => frame.params.sports), [["tennis"], ["football"]]);
    replacement.reply(frames[0], { subscriptionId: "srv-7" });
    replacement.reply(frames[1], { subscriptionId: "srv-8" });
    assert.equal((await lateSubscribe).id, "sub-2");
    replacement.serverSend(event("srv-old"));
    replacement.serverSend(event("srv-7"));
    socket.serverSend(event("srv-7")); // the old socket, with an id that is valid on the new one
    socket.serverSend({ jsonrpc: "2.0", method: "auth.expired", params: {} });
    await world.clock.advance(30_000);

    assert.deepEqual(received.map((params) => params.subscriptionId), ["sub-1"]);
    assert.equal(world.WebSocket.instances.length, 2);
    assert.equal(client.state, "open");
    client.close();
  });

  test("auth.expired for the token a call has already replaced mints nothing more", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    world.backend.refusedTokens.add("jwt-1"); // ended early: the call is refused, the socket told
    await client.rpc("ping");
    assert.deepEqual(socket.framesOf("auth").map((frame) => frame.params.token), ["jwt-1", "jwt-2"]);

    // The server ended jwt-1's socket before it read the auth frame that replaced it.
    socket.serverSend({ jsonrpc: "2.0", method: "auth.expired", params: {} });
    socket.serverClose(4401);
    await world.clock.advance(1_000);

    assert.deepEqual(world.backend.mintReasons, ["initial", "unauthorized"]);
    assert.equal(world.WebSocket.instances.length, 2);
    world.WebSocket.latest.serverOpen();
    assert.deepEqual(world.WebSocket.latest.framesOf("auth").map((frame) => frame.params.token), ["jwt-2"]);
    client.close();
  });

  test("a 4429 close (too many connections) backs off and tries again", async () => {
    const { world, client, socket } = await connected({ random: () => 1 });
    socket.serverClose(4429);
    await world.clock.advance(499);
    assert.equal(world.WebSocket.instances.length, 1);
    await world.clock.advance(1);
    assert.equal(world.WebSocket.instances.length, 2);
    assert.equal(client.state, "limited"); // the service's refusal, in the client's own state (socket-limit.test.mjs)
    client.close();
  });

  test("a 401 from the mint route while reconnecting is final", async () => {
    const { world, client, events, socket } = await connected({ random: () => 0 });
    await subscribed(client, socket, "srv-1");
    world.backend.mintAnswers.push({ status: 401, body: { error: "not_authenticated", message: "Log in." } });

    socket.serverClose(1006);
    await world.clock.advance(0);
    await world.clock.advance(3_600_000);

    assert.equal(client.state, "unauthorized");
    assert.deepEqual(events.state, ["connecting", "open", "reconnecting", "unauthorized"]);
    assert.equal(events.error.length, 1);
    assert.deepEqual([events.error[0].name, events.error[0].status, events.error[0].final], ["AuthEndpointError", 401, true]);
    assert.deepEqual(world.backend.mintReasons, ["initial", "reconnect"]);
    assert.equal(world.WebSocket.instances.length, 1);
    assert.deepEqual(world.clock.pending(), []);
    await assert.rejects(client.subscribe({}, () => {}), events.error[0]);
    await assert.rejects(client.connect(), events.error[0]);
  });

  test("a 503 from the mint route while reconnecting is reported, and the socket goes with the valid token", async () => {
    const { world, client, events, socket } = await connected({ random: () => 1 });
    world.backend.mintAnswers.push({ status: 503, body: { error: "upstream_unavailable" } });

    socket.serverClose(1006);
    await world.clock.advance(499);
    assert.equal(world.WebSocket.instances.length, 1);
    await world.clock.advance(1); // attempt 0: the mint fails, the socket opens with jwt-1 all the same

    assert.deepEqual(world.backend.mintReasons, ["initial", "reconnect"]);
    assert.equal(world.WebSocket.instances.length, 2);
    world.WebSocket.latest.serverOpen();
    assert.deepEqual(world.WebSocket.latest.sent[0].params, { token: "jwt-1" }); // still valid for 9 minutes
    assert.deepEqual(events.error.map((error) => error.status), [503]);
    client.close();
  });

  test("while that socket fails too (the whole site is down), each attempt tries to mint again", async () => {
    const { world, client, socket } = await connected({ random: () => 1 });
    world.backend.mintAnswers.push({ status: 503, body: {} }, { status: 503, body: {} });
    socket.serverClose(1006);
    await world.clock.advance(500);
    world.WebSocket.latest.serverClose(1006);
    await world.clock.advance(1_000);
    world.WebSocket.latest.serverClose(1006);
    await world.clock.advance(2_000); // the site is back: one mint, one socket
    await world.WebSocket.latest.acceptAuth();

    assert.deepEqual(world.backend.mintReasons, ["initial", "reconnect", "reconnect", "reconnect"]);
    assert.deepEqual(world.WebSocket.latest.sent[0].params, { token: "jwt-2" });
    assert.equal(client.state, "open");
    client.close();
  });

  test("a reconnect mint failing after the token expired is retried with a mint", async () => {
    const { world, client, socket } = await connected({ random: () => 1, refreshLeewaySec: 0 });
    socket.keepAlive(world.clock);
    await world.clock.jump(600_000); // a frozen tab: jwt-1 expired, no refresh ran
    world.backend.mintAnswers.push({ status: 503, body: { error: "upstream_unavailable" } });
    socket.serverClose(1006);
    await world.clock.advance(500 + 1_000);

    assert.deepEqual(world.backend.mintReasons, ["initial", "reconnect", "reconnect"]);
    client.close();
  });

  test("Retry-After from the mint route is the minimum delay before the next attempt", async () => {
    const { world, client, socket } = await connected({ random: () => 0 });
    world.backend.mintAnswers.push({ status: 429, headers: { "Retry-After": "10" }, body: { error: "rate_limited" } });

    socket.serverClose(1006);
    await world.clock.advance(0); // the mint is refused: the socket goes with jwt-1, still valid
    assert.equal(world.WebSocket.instances.length, 2);
    world.WebSocket.latest.serverClose(1006);
    await world.clock.advance(9_999); // that socket failed too; no mint before Retry-After has passed
    assert.deepEqual(world.backend.mintReasons, ["initial", "reconnect"]);
    world.WebSocket.latest.serverClose(1006);
    await world.clock.advance(10_000);

    assert.deepEqual(world.backend.mintReasons, ["initial", "reconnect", "reconnect"]);
    client.close();
  });
});

describe("close()", () => {
  test("stops timers, socket, tab channel and visibility listener for good", async () => {
    const world = createWorld();
    const BroadcastChannel = createBroadcastHub(world.clock);
    const document = new FakeDocument();
    const { client, events } = createTab(world, { BroadcastChannel, document, locks: new FakeLocks() });
    client.connect().catch(() => {}); // close() rejects it
    await flush();
    const socket = world.WebSocket.latest;
    await socket.acceptAuth();
    const pendingSubscription = client.subscribe({ sports: ["tennis"] }, () => {});
    await flush();

    client.close();

    assert.equal(client.state, "closed");
    assert.deepEqual(events.state, ["connecting", "open", "closed"]);
    assert.deepEqual(socket.closedByClient, { code: 1000 });
    assert.deepEqual(world.clock.pending(), []);
    assert.equal(BroadcastChannel.members.size, 0);
    assert.equal(document.listenerCount, 0);
    await assert.rejects(pendingSubscription, { name: "RpcError", code: "closed" });
    await assert.rejects(client.rpc("ping"), (error) => error instanceof RpcError && error.code === "closed");
    await world.clock.advance(3_600_000);
    assert.equal(world.WebSocket.instances.length, 1);
    assert.equal(world.backend.mints.length, 1);
    assert.deepEqual(events.error, []);
  });

  test("during a reconnect backoff, leaves no timer and opens no socket", async () => {
    const { world, client, socket } = await connected({ random: () => 1 });
    socket.serverClose(1006);
    await flush();
    assert.equal(world.clock.pending().length, 2); // the refresh and the reconnect

    client.close();
    await world.clock.advance(3_600_000);

    assert.deepEqual(world.clock.pending(), []);
    assert.equal(world.WebSocket.instances.length, 1);
  });

  test("while a token is being minted for the socket, opens no socket", async () => {
    const world = createWorld();
    let answer;
    world.backend.mintAnswers.push(new Promise((resolve) => (answer = resolve)));
    const { client } = createTab(world);
    const opening = client.connect();
    const refused = assert.rejects(opening, { code: "closed" });
    await flush();

    client.close();
    answer(world.backend.okMint());
    await flush();

    await refused;
    assert.equal(world.WebSocket.instances.length, 0);
    assert.deepEqual(world.clock.pending(), []);
  });
});
