// The service refuses the socket for the account's limits (auth answered rate_limited, close code 4429):
// the client says so in its own state, "limited", and keeps trying on its backoff.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { STATE } from "../../mintroute/static/sports/constants.js";
import { FakeWindow, createTab, createWorld, flush } from "./fakes.mjs";

const connectionsFull = {
  code: "rate_limited",
  message: "This account already has its 20 connections open; close one first.",
  data: { limit: "connections" },
};

/** The socket's first `auth` answered `rate_limited` for the connections, then closed with 4429, as the service does. */
async function refuse(socket, error = connectionsFull) {
  socket.serverOpen();
  await flush();
  socket.replyError(socket.framesOf("auth")[0], error);
  socket.serverClose(4429);
  await flush();
}

/** A client whose first socket was refused for the account's connections. */
async function limited(options = {}) {
  const world = createWorld();
  const tab = createTab(world, { random: () => 1, ...options });
  const connecting = tab.client.connect();
  connecting.catch(() => {});
  await flush();
  await refuse(world.WebSocket.latest);
  return { world, ...tab, connecting };
}

describe("the account's socket limit", () => {
  test("auth refused for the connections: state limited, the answer as the error, connect() rejects with it", async () => {
    const { client, events, connecting } = await limited();
    assert.equal(client.state, "limited");
    assert.equal(STATE.LIMITED, "limited");
    assert.deepEqual(events.state, ["connecting", "limited"]);
    assert.equal(events.error.length, 1);
    assert.deepEqual([events.error[0].code, events.error[0].data.limit], ["rate_limited", "connections"]);
    await assert.rejects(connecting, events.error[0]);
    client.close();
  });

  test("it retries on its backoff, stays limited while refused, and is open once a socket is free", async () => {
    const { world, client, events } = await limited();
    await world.clock.advance(499); // random() = 1: the n-th wait is 500 ms × 2^n
    assert.equal(world.WebSocket.instances.length, 1);
    await world.clock.advance(1);
    assert.equal(world.WebSocket.instances.length, 2);
    await refuse(world.WebSocket.latest);
    assert.equal(client.state, "limited");

    await world.clock.advance(999);
    assert.equal(world.WebSocket.instances.length, 2);
    await world.clock.advance(1);
    assert.equal(world.WebSocket.instances.length, 3);
    await world.WebSocket.latest.acceptAuth();
    assert.equal(client.state, "open");
    assert.deepEqual(events.state, ["connecting", "limited", "open"]); // no state event per refusal
    assert.equal(events.error.length, 2); // one per refusal
    assert.deepEqual(world.backend.mints.length, 1); // the same token: a refusal for limits is not about it
    client.close();
  });

  test("a 4429 close with no answer before it is limited too, its error naming the close code", async () => {
    const world = createWorld();
    const { client, events } = createTab(world);
    client.connect().catch(() => {});
    await flush();
    world.WebSocket.latest.serverOpen();
    await flush();
    world.WebSocket.latest.serverClose(4429);
    await flush();
    assert.equal(client.state, "limited");
    assert.deepEqual([events.error[0].code, events.error[0].data.closeCode], ["rate_limited", 4429]);
    client.close();
  });

  test("the requests-per-minute quota refusing auth is limited, no sooner than its retryAfter", async () => {
    const world = createWorld();
    const { client, events } = createTab(world, { random: () => 0 });
    client.connect().catch(() => {});
    await flush();
    const spent = { code: "rate_limited", message: "Spent.", data: { limit: "requests_per_minute", retryAfter: 30 } };
    await refuse(world.WebSocket.latest, spent);
    assert.equal(client.state, "limited");
    assert.equal(events.error[0].data.limit, "requests_per_minute");
    await world.clock.advance(29_999);
    assert.equal(world.WebSocket.instances.length, 1);
    await world.clock.advance(1);
    assert.equal(world.WebSocket.instances.length, 2);
    client.close();
  });

  test("another failure after a limit is plain reconnecting", async () => {
    const { world, client, events } = await limited();
    await world.clock.advance(500);
    world.WebSocket.latest.serverClose(1006); // the network, before auth
    await flush();
    assert.equal(client.state, "reconnecting");
    assert.deepEqual(events.state, ["connecting", "limited", "reconnecting"]);
    client.close();
  });

  test("an open socket closed with 4429 is limited, and reconnects", async () => {
    const world = createWorld();
    const { client, events } = createTab(world, { random: () => 1 });
    const opened = client.connect();
    await flush();
    await world.WebSocket.latest.acceptAuth();
    await opened;
    world.WebSocket.latest.serverClose(4429);
    await flush();
    assert.deepEqual(events.state, ["connecting", "open", "limited"]);
    await world.clock.advance(500);
    assert.equal(world.WebSocket.instances.length, 2);
    client.close();
  });

  test("offline while limited: no attempt until the network is back, then one at once", async () => {
    const window = new FakeWindow();
    const { world, client } = await limited({ window });
    window.goes(false);
    await world.clock.advance(60_000);
    assert.equal(world.WebSocket.instances.length, 1);
    assert.equal(client.state, "limited");
    window.goes(true);
    await flush();
    assert.equal(world.WebSocket.instances.length, 2);
    client.close();
  });

  test("connect() while limited waits for the next attempt; close() ends it all", async () => {
    const { world, client, events } = await limited();
    const waiting = client.connect();
    await world.clock.advance(500);
    await world.WebSocket.latest.acceptAuth();
    await waiting;
    assert.equal(client.state, "open");
    client.close();
    assert.equal(client.state, "closed");
    assert.deepEqual(events.state, ["connecting", "limited", "open", "closed"]);
    assert.deepEqual(world.clock.pending(), []);
  });

  test("close() while limited: closed, no timer left, the subscription closed", async () => {
    const { world, client } = await limited();
    const subscribing = client.subscribe({}, () => {});
    subscribing.catch(() => {});
    client.close();
    assert.equal(client.state, "closed");
    await assert.rejects(subscribing, { code: "closed" });
    assert.deepEqual(world.clock.pending(), []);
  });
});
