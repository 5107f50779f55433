// Construction, calls over HTTP, the unauthorized retry, and the errors of the token fetch.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { describe, test } from "node:test";

import * as exported from "../../mintroute/static/sports/sports-client.js";
import {
  AuthEndpointError,
  RpcError,
  SportsClient,
  UnauthorizedError,
  backoff,
} from "../../mintroute/static/sports/sports-client.js";
import { BASE_URL, MINT_URL, RPC_URL, START_MS, createTab, createWorld, deferred, flush } from "./fakes.mjs";

const bearerOf = (request) => request.headers.Authorization;

describe("public API", () => {
  test("the module exports exactly the values its .d.ts declares", async () => {
    const declarations = await readFile(new URL("../../mintroute/static/sports/sports-client.d.ts", import.meta.url), "utf8");
    const declared = [...declarations.matchAll(/^export (?:class|function) (\w+)/gm)].map((found) => found[1]);
    assert.deepEqual(Object.keys(exported).sort(), declared.sort());
    assert.deepEqual(declared.sort(), ["AuthEndpointError", "RpcError", "SportsClient", "UnauthorizedError", "backoff"]);
  });
});

describe("construction", () => {
  test("needs exactly one of authEndpoint and fetchToken", () => {
    assert.throws(() => new SportsClient({ baseUrl: BASE_URL }), {
      name: "TypeError",
      message: /exactly one of authEndpoint .* or fetchToken/,
    });
    const both = { baseUrl: BASE_URL, authEndpoint: MINT_URL, fetchToken: async () => ({}) };
    assert.throws(() => new SportsClient(both), TypeError);
    assert.throws(() => new SportsClient({ baseUrl: BASE_URL, fetchToken: "nope" }), TypeError);
  });

  test("baseUrl and wsUrl default to the page's origin, wss: for https:", async (t) => {
    globalThis.location = { origin: "https://shop.example" };
    t.after(() => delete globalThis.location);
    const world = createWorld();
    const { client } = createTab(world, { baseUrl: undefined });

    await assert.rejects(client.rpc("matches.list"), { code: "unavailable" });
    client.connect().catch(() => {});
    await flush();

    assert.equal(world.backend.rpcs.length, 0);
    assert.equal(world.backend.requests.at(-1).url, "https://shop.example/sdk/v1/rpc");
    assert.equal(world.WebSocket.latest.url, "wss://shop.example/sdk/v1/ws");
    client.close();
  });

  test("a plain-http baseUrl gives a ws: socket on the same host", async () => {
    const world = createWorld();
    const { client } = createTab(world, { baseUrl: "http://localhost:8000/" });
    client.connect().catch(() => {});
    await flush();
    assert.equal(world.WebSocket.latest.url, "ws://localhost:8000/sdk/v1/ws");
    client.close();
  });

  test("errors are Errors with a name, and UnauthorizedError is an RpcError", () => {
    const unauthorized = new UnauthorizedError("Token expired.");
    assert.ok(unauthorized instanceof RpcError && unauthorized instanceof Error);
    assert.equal(unauthorized.name, "UnauthorizedError");
    assert.equal(unauthorized.code, "unauthorized");
    assert.equal(unauthorized.message, "Token expired.");

    const rpcError = new RpcError("rate_limited", "Slow down.", { retryAfter: 3 });
    assert.deepEqual([rpcError.name, rpcError.code, rpcError.data], ["RpcError", "rate_limited", { retryAfter: 3 }]);

    const refused = new AuthEndpointError("No.", { status: 403 });
    assert.deepEqual([refused.name, refused.status, refused.final], ["AuthEndpointError", 403, true]);
    assert.equal(new AuthEndpointError("Busy.", { status: 429 }).final, false);
    assert.equal(new AuthEndpointError("Down.").status, 0);
  });

  test("on() rejects unknown events and returns a function that stops listening", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    assert.throws(() => client.on("tokens", () => {}), /Unknown event "tokens"/);

    const seen = [];
    const stopListening = client.on("token", (event) => seen.push(event.reason));
    await client.rpc("ping");
    stopListening();
    await world.clock.jump(600_000);
    await client.rpc("ping");

    assert.deepEqual(seen, ["initial"]);
    assert.equal(world.backend.mints.length, 2);
    client.close();
  });
});

describe("backoff", () => {
  test("is full jitter: random() * min(cap, base * 2^attempt)", () => {
    const options = { baseMs: 500, capMs: 30_000 };
    const ceilings = [500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000];
    ceilings.forEach((ceiling, attempt) => {
      assert.equal(backoff(attempt, { ...options, random: () => 1 }), ceiling);
      assert.equal(backoff(attempt, { ...options, random: () => 0 }), 0);
      assert.equal(backoff(attempt, { ...options, random: () => 0.25 }), ceiling / 4);
    });
  });

  test("defaults to a 500 ms base and a 30 s cap", () => {
    assert.equal(backoff(0, { random: () => 1 }), 500);
    assert.equal(backoff(20, { random: () => 1 }), 30_000);
  });
});

describe("rpc over HTTP", () => {
  test("the first call mints a token (reason initial) and sends it as a Bearer", async () => {
    const world = createWorld();
    const { client, events } = createTab(world, { authHeaders: { "X-CSRFToken": "csrf-abc" } });

    const result = await client.rpc("matches.list", { limit: 5 });

    assert.deepEqual(result, { echo: "matches.list" });
    const [mint] = world.backend.mints;
    assert.equal(world.backend.mints.length, 1);
    assert.deepEqual(mint, {
      url: MINT_URL,
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRFToken": "csrf-abc" },
      body: { reason: "initial" },
      credentials: "same-origin",
      signal: mint.signal,
    });
    assert.ok(mint.signal instanceof AbortSignal);
    const [call] = world.backend.rpcs;
    assert.deepEqual(call, {
      url: RPC_URL,
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: "Bearer jwt-1" },
      body: { jsonrpc: "2.0", id: "1", method: "matches.list", params: { limit: 5 } },
      credentials: "omit",
      signal: call.signal,
    });
    assert.ok(call.signal instanceof AbortSignal);
    assert.deepEqual(events.token, [
      {
        expiresAt: new Date(world.clock.now + 600_000).toISOString(),
        reason: "initial",
        mintedBy: "self",
        fingerprint: "jwt-1",
      },
    ]);
    client.close();
  });

  test("a fresh token is reused and every call gets its own string id", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    await client.rpc("a");
    await client.rpc("b", {});
    assert.equal(world.backend.mints.length, 1);
    assert.deepEqual(world.backend.rpcs.map((request) => request.body.id), ["1", "2"]);
    assert.deepEqual(world.backend.rpcs.map((request) => request.body.params), [{}, {}]);
    client.close();
  });

  test("authHeaders may be an async function, read at every mint", async () => {
    const world = createWorld();
    let rotations = 0;
    const authHeaders = async () => ({ "X-CSRFToken": `csrf-${++rotations}` });
    const { client } = createTab(world, { authHeaders });

    await client.rpc("a");
    await world.clock.jump(600_000); // the token has expired
    await client.rpc("b");

    assert.deepEqual(
      world.backend.mints.map((request) => request.headers["X-CSRFToken"]),
      ["csrf-1", "csrf-2"],
    );
    client.close();
  });

  test("matches.list drops undefined keys and returns the page", async () => {
    const world = createWorld();
    const page = { data: [], pagination: { limit: 2, total: 0, nextCursor: null } };
    world.backend.rpcResult = () => page;
    const { client } = createTab(world);

    assert.deepEqual(await client.matches.list({ sports: ["tennis"], limit: 2, cursor: undefined }), page);
    assert.deepEqual(await client.matches.list(), page);

    assert.deepEqual(
      world.backend.rpcs.map((request) => [request.body.method, request.body.params]),
      [["matches.list", { sports: ["tennis"], limit: 2 }], ["matches.list", {}]],
    );
    client.close();
  });

  test("an error envelope becomes an RpcError with code, message and data", async () => {
    const world = createWorld();
    const fetch = wrapRpc(world, (envelope) => ({
      jsonrpc: "2.0",
      id: envelope.id,
      error: { code: "rate_limited", message: "Requests per minute exhausted.", data: { retryAfter: 12 } },
    }));
    const { client } = createTab(world, { fetch });

    await assert.rejects(client.rpc("matches.list"), (error) => {
      assert.ok(error instanceof RpcError && !(error instanceof UnauthorizedError));
      assert.deepEqual(
        [error.code, error.message, error.data, error.requestId],
        ["rate_limited", "Requests per minute exhausted.", { retryAfter: 12 }, "1"],
      );
      return true;
    });
    client.close();
  });

  test("an answer carrying another id is refused as bad_response", async () => {
    const world = createWorld();
    const fetch = wrapRpc(world, () => ({ jsonrpc: "2.0", id: "999", result: {} }));
    const { client } = createTab(world, { fetch });
    await assert.rejects(client.rpc("matches.list"), { name: "RpcError", code: "bad_response" });
    client.close();
  });

  test("a service that cannot be reached is RpcError unavailable", async () => {
    const world = createWorld();
    const fetch = async (url, init) => {
      if (url === RPC_URL) throw new TypeError("fetch failed");
      return world.backend.fetch(url, init);
    };
    const { client } = createTab(world, { fetch });
    await assert.rejects(client.rpc("matches.list"), { name: "RpcError", code: "unavailable" });
    client.close();
  });
});

describe("single flight", () => {
  test("100 concurrent first calls cause exactly 1 mint", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    await Promise.all(Array.from({ length: 100 }, () => client.rpc("ping")));
    assert.deepEqual(world.backend.mintReasons, ["initial"]);
    assert.equal(world.backend.rpcs.length, 100);
    client.close();
  });

  test("100 concurrent calls on an expired token cause exactly 1 mint", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    await client.rpc("ping");
    await world.clock.jump(700_000); // timers frozen (background tab); the token is dead

    await Promise.all(Array.from({ length: 100 }, () => client.rpc("ping")));

    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
    const bearers = new Set(world.backend.rpcs.slice(1).map(bearerOf));
    assert.deepEqual([...bearers], ["Bearer jwt-2"]);
    assert.equal(world.backend.rpcs.length, 101);
    client.close();
  });
});

describe("unauthorized mid-call", () => {
  test("retries once with a token minted for reason unauthorized", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    await client.rpc("ping");
    world.backend.refusedTokens.add("jwt-1"); // e.g. rejected for a reason the clock cannot see

    assert.deepEqual(await client.rpc("ping"), { echo: "ping" });

    assert.deepEqual(world.backend.mintReasons, ["initial", "unauthorized"]);
    assert.deepEqual(world.backend.rpcs.map(bearerOf), ["Bearer jwt-1", "Bearer jwt-1", "Bearer jwt-2"]);
    client.close();
  });

  test("a retry refused again raises UnauthorizedError", async () => {
    const world = createWorld();
    world.backend.refusedTokens = { has: () => true };
    const { client, events } = createTab(world);

    await assert.rejects(client.rpc("ping"), (error) => {
      assert.ok(error instanceof UnauthorizedError);
      assert.deepEqual([error.name, error.code, error.message], ["UnauthorizedError", "unauthorized", "Token expired."]);
      return true;
    });

    assert.deepEqual(world.backend.mintReasons, ["initial", "unauthorized"]);
    assert.deepEqual(world.backend.rpcs.map(bearerOf), ["Bearer jwt-1", "Bearer jwt-2"]);
    assert.equal(client.state, "idle"); // the service refusing a call does not stop the client
    assert.deepEqual(events.error, []);
    client.close();
  });

  test("a refused call waits for a refresh in flight, and mints anew if it brings back the same token", async () => {
    const world = createWorld();
    const rpcGate = deferred();
    const fetch = async (url, init) => {
      if (url === RPC_URL && world.backend.rpcs.length === 1) await rpcGate.promise;
      return world.backend.fetch(url, init);
    };
    // The held-back call outlives the refresh timer: far beyond the default request timeout.
    const { client } = createTab(world, { fetch, random: () => 0, requestTimeoutSec: 3600 });
    await client.rpc("warm-up");
    const reused = deferred();
    world.backend.mintAnswers.push(reused.promise);

    const call = client.rpc("ping"); // sent with jwt-1, answer held back
    await world.clock.advance(300_000); // the refresh starts, its answer held back
    world.backend.refusedTokens.add("jwt-1");
    rpcGate.resolve();
    await flush();
    // The route hands out its last token again while it has over half its life left.
    const again = { token: "jwt-1", expiresAt: new Date(START_MS + 600_000).toISOString() };
    reused.resolve({ status: 200, body: again });

    assert.deepEqual(await call, { echo: "ping" });
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh", "unauthorized"]);
    assert.equal(world.backend.rpcs.at(-1).headers.Authorization, "Bearer jwt-2");
    client.close();
  });

  test("calls refused with the same token share one unauthorized mint", async () => {
    const world = createWorld();
    const { client } = createTab(world);
    await client.rpc("ping");
    world.backend.refusedTokens.add("jwt-1");

    await Promise.all(Array.from({ length: 10 }, () => client.rpc("ping")));

    assert.deepEqual(world.backend.mintReasons, ["initial", "unauthorized"]);
    assert.equal(world.backend.rpcs.filter((request) => bearerOf(request) === "Bearer jwt-2").length, 10);
    client.close();
  });
});

describe("AuthEndpointError", () => {
  const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();
  const cases = [
    { name: "401", answer: { status: 401, body: { error: "not_authenticated", message: "Log in." } }, status: 401, final: true, message: /answered 401 not_authenticated: Log in\./ },
    { name: "403", answer: { status: 403, body: { error: "csrf_failed", message: "CSRF." } }, status: 403, final: true, message: /answered 403 csrf_failed/ },
    { name: "429", answer: { status: 429, headers: { "Retry-After": "7" }, body: { error: "rate_limited" } }, status: 429, final: false, retryAfter: 7 },
    { name: "500", answer: { status: 500, body: "<h1>Server Error</h1>" }, status: 500, final: false, message: /answered 500\./ },
    { name: "503", answer: { status: 503, body: { error: "upstream_unavailable" } }, status: 503, final: false },
    { name: "network failure", answer: new TypeError("fetch failed"), status: 0, final: false, message: /unreachable \(fetch failed\)/ },
    { name: "missing token", answer: () => ({ body: { expiresAt: inAnHour() } }), status: 0, final: false, message: /returned no token/ },
    { name: "empty token", answer: () => ({ body: { token: "", expiresAt: inAnHour() } }), status: 0, final: false, message: /returned no token/ },
    { name: "bad expiresAt", answer: { body: { token: "jwt-x", expiresAt: "soon" } }, status: 0, final: false, message: /no valid expiresAt/ },
    { name: "not JSON", answer: { body: "<html>login</html>" }, status: 0, final: false, message: /not a JSON object/ },
    { name: "already expired", answer: { body: { token: "jwt-x", expiresAt: "2000-01-01T00:00:00+00:00" } }, status: 0, final: false, message: /already expired/ },
  ];

  for (const { name, answer, status, final, message, retryAfter = null } of cases) {
    test(`${name} from the mint route rejects the call with status ${status}`, async () => {
      const world = createWorld();
      world.backend.mintAnswers.push(answer);
      const { client } = createTab(world);

      await assert.rejects(client.rpc("ping"), (error) => {
        assert.ok(error instanceof AuthEndpointError);
        assert.equal(error.name, "AuthEndpointError");
        assert.equal(error.status, status);
        assert.equal(error.final, final);
        assert.equal(error.retryAfter, retryAfter);
        assert.match(error.message, /The token mint route \/api\/sports-token/);
        if (message) assert.match(error.message, message);
        return true;
      });
      assert.equal(world.backend.mints.length, 1);
      assert.equal(world.backend.rpcs.length, 0);
      client.close();
    });
  }

  test("after a 500 a direct call simply rejects; the next call mints again", async () => {
    const world = createWorld();
    world.backend.mintAnswers.push({ status: 500, body: {} });
    const { client, events } = createTab(world);

    await assert.rejects(client.rpc("ping"), { status: 500 });
    assert.deepEqual(await client.rpc("ping"), { echo: "ping" });

    assert.deepEqual(world.backend.mintReasons, ["initial", "initial"]);
    assert.deepEqual(events.error, []);
    assert.equal(client.state, "idle");
    client.close();
  });

  test("a 401 is final: state unauthorized, one error event, later calls reject without a mint", async () => {
    const world = createWorld();
    world.backend.mintAnswers.push({ status: 401, body: { error: "not_authenticated" } });
    const { client, events } = createTab(world);

    const calls = await Promise.allSettled([client.rpc("a"), client.rpc("b"), client.connect()]);
    const later = await Promise.allSettled([client.rpc("c"), client.subscribe({}, () => {})]);

    const [refusal] = events.error;
    assert.equal(events.error.length, 1);
    assert.equal(refusal.status, 401);
    assert.deepEqual([...calls, ...later].map((outcome) => outcome.reason), Array(5).fill(refusal));
    assert.deepEqual(events.state, ["connecting", "unauthorized"]);
    assert.equal(world.backend.mints.length, 1);
    assert.equal(world.WebSocket.instances.length, 0);
    assert.deepEqual(world.clock.pending(), []);

    client.close();
    client.close();
    assert.deepEqual(events.state, ["connecting", "unauthorized", "closed"]);
    assert.equal(events.error.length, 1);
    await assert.rejects(client.rpc("d"), { code: "closed" });
  });
});

describe("fetchToken", () => {
  test("receives the reason, and its token is used with no clock skew", async () => {
    const world = createWorld();
    const reasons = [];
    const fetchToken = async ({ reason }) => {
      reasons.push(reason);
      return world.backend.mintToken();
    };
    const { client, events } = createTab(world, { authEndpoint: undefined, fetchToken, random: () => 0 });

    await client.rpc("ping");
    await world.clock.advance(299_999);
    assert.deepEqual(reasons, ["initial"]);
    await world.clock.advance(1);

    assert.deepEqual(reasons, ["initial", "refresh"]);
    assert.deepEqual(events.token.map((event) => event.reason), ["initial", "refresh"]);
    assert.equal(bearerOf(world.backend.rpcs[0]), "Bearer jwt-1");
    assert.equal(world.backend.mints.length, 0);
    client.close();
  });

  const badShapes = [
    ["nothing", undefined, /not a JSON object/],
    ["an empty object", {}, /no token/],
    ["a number token", { token: 42, expiresAt: "2099-01-01T00:00:00Z" }, /no token/],
    ["a numeric expiresAt", { token: "t", expiresAt: 4102444800 }, /no valid expiresAt/],
    ["an unparseable expiresAt", { token: "t", expiresAt: "tomorrow-ish" }, /no valid expiresAt/],
  ];
  for (const [label, shape, message] of badShapes) {
    test(`returning ${label} is an AuthEndpointError with status 0`, async () => {
      const world = createWorld();
      const { client } = createTab(world, { authEndpoint: undefined, fetchToken: async () => shape });
      await assert.rejects(client.rpc("ping"), (error) => {
        assert.ok(error instanceof AuthEndpointError);
        assert.equal(error.status, 0);
        assert.match(error.message, /^fetchToken\(\) returned/);
        assert.match(error.message, message);
        return true;
      });
      assert.equal(world.backend.rpcs.length, 0);
      client.close();
    });
  }

  test("a throwing fetchToken is an AuthEndpointError with the cause; its own AuthEndpointError passes through", async () => {
    const world = createWorld();
    const cause = new Error("offline");
    const { client: throwing } = createTab(world, { authEndpoint: undefined, fetchToken: async () => { throw cause; } });
    await assert.rejects(throwing.rpc("ping"), { name: "AuthEndpointError", status: 0, cause, message: "fetchToken() failed (offline)." });

    const refusal = new AuthEndpointError("Session over.", { status: 401 });
    const { client: refusing, events } = createTab(world, { authEndpoint: undefined, fetchToken: async () => { throw refusal; } });
    await assert.rejects(refusing.rpc("ping"), refusal);
    assert.deepEqual(events.error, [refusal]);
    assert.equal(refusing.state, "unauthorized");
    throwing.close();
  });
});

/** A fetch that answers the RPC endpoint with `answer(envelope)` and minting as usual. */
function wrapRpc(world, answer) {
  const mintingFetch = world.backend.fetch;
  return async (url, init) => {
    if (url !== RPC_URL) return mintingFetch(url, init);
    const envelope = JSON.parse(init.body);
    return { ok: true, status: 200, headers: new Headers(), json: async () => answer(envelope) };
  };
}
