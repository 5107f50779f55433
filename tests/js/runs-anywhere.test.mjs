// The contract's "The browser client: a call never waits for a refresh it does not need", one
// describe per rule. (The rule on the .d.ts without the DOM library is `make typecheck`'s:
// tests/types/tsconfig.no-dom.json.)

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, readdir } from "node:fs/promises";
import { dirname, relative, resolve } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { SportsClient } from "../../mintroute/static/sports/sports-client.js";
import { BASE_URL, MINT_URL, createTab, createWorld, deferred, flush } from "./fakes.mjs";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const CLIENT_FOLDER = resolve(REPO, "mintroute/static/sports");
const bearers = (world) => world.backend.rpcs.map((request) => request.headers.Authorization.replace("Bearer ", ""));

/** Settles to {value} or {error}, or stays "pending", without an unhandled rejection. */
function track(promise) {
  const outcome = { state: "pending" };
  promise.then(
    (value) => Object.assign(outcome, { state: "resolved", value }),
    (error) => Object.assign(outcome, { state: "rejected", error }),
  );
  return outcome;
}

/** A client holding jwt-1 (ttl 600 s) whose refresh started at `refreshAtMs` and waits for `mint` to resolve. */
async function refreshInFlight(options, refreshAtMs) {
  const world = createWorld();
  const tab = createTab(world, options);
  await tab.client.rpc("ping");
  const mint = deferred();
  world.backend.mintAnswers.push(mint.promise);
  await world.clock.jump(refreshAtMs); // timers frozen: the first call of the window starts the refresh
  tab.client.rpc("start-refresh").catch(() => {});
  await flush();
  assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]);
  return { world, ...tab, mint };
}

describe("a call waits for a refresh in flight only when the held token expires within requestTimeoutSec", () => {
  test("jwt-1 valid 25 s more, requestTimeoutSec 10: the call goes at once with jwt-1", async () => {
    const { world, client, mint } = await refreshInFlight({}, 575_000);

    const call = track(client.rpc("ping"));
    await flush(); // no time passes, the refresh has not answered

    assert.equal(call.state, "resolved");
    assert.deepEqual(bearers(world).slice(1), ["jwt-1", "jwt-1"]);
    mint.resolve(world.backend.okMint());
    await flush();
    await client.rpc("ping");
    assert.equal(bearers(world).at(-1), "jwt-2");
    assert.deepEqual(world.backend.mintReasons, ["initial", "refresh"]); // the calls started no mint of their own
    client.close();
  });

  test("a refresh started by its timer and slow to answer costs a call nothing", async () => {
    const world = createWorld();
    const { client } = createTab(world, { random: () => 0 });
    await client.rpc("ping");
    world.backend.mintAnswers.push(deferred().promise);
    await world.clock.advance(300_000); // the timer starts the refresh at the half-life: 300 s of validity left

    const call = track(client.rpc("ping"));
    await flush();

    assert.equal(call.state, "resolved");
    assert.deepEqual(bearers(world), ["jwt-1", "jwt-1"]);
    client.close();
  });

  for (const [name, options, now] of [
    ["jwt-1 valid 25 s more, requestTimeoutSec 30: the call waits and goes with the refreshed token", { requestTimeoutSec: 30 }, 575_000],
    ["jwt-1 valid 8 s more, requestTimeoutSec 10: the call waits for the refresh", {}, 592_000],
  ]) {
    test(name, async () => {
      const { world, client, mint } = await refreshInFlight(options, now);

      const call = track(client.rpc("ping"));
      await world.clock.advance(1_000);
      assert.equal(call.state, "pending");

      mint.resolve(world.backend.okMint());
      await flush();
      assert.equal(call.state, "resolved");
      assert.equal(bearers(world).at(-1), "jwt-2");
      client.close();
    });
  }

  test("the socket's auth follows the same rule: sent at once with the valid token", async () => {
    const { world, client } = await refreshInFlight({}, 575_000);

    client.connect().catch(() => {});
    await flush();
    const socket = world.WebSocket.latest;
    socket.serverOpen();
    await flush();

    assert.deepEqual(socket.sent[0].params, { token: "jwt-1" });
    client.close();
  });
});

/**
 * A URL as React Native has it: `href` and `toString()` work, every other field throws when read
 * or written. (Its constructor resolves relative addresses like the real one.)
 */
class ReadOnlyURL {
  #href;

  constructor(url, base) {
    this.#href = new RealURL(url, base).href;
  }

  get href() {
    return this.#href;
  }

  set href(_value) {
    throw new TypeError("URL.href is read-only");
  }

  toString() {
    return this.#href;
  }
}
const RealURL = globalThis.URL;
for (const field of ["protocol", "host", "hostname", "port", "pathname", "search", "hash", "origin", "username"]) {
  Object.defineProperty(ReadOnlyURL.prototype, field, {
    get: () => {
      throw new Error(`URL.${field} is not implemented`);
    },
    set: () => {
      throw new TypeError(`URL.${field} is read-only`);
    },
  });
}

describe("where URL objects are read-only (React Native)", () => {
  for (const [baseUrl, wsUrl] of [
    [BASE_URL, "wss://sports.test/sdk/v1/ws"],
    ["http://10.0.2.2:8000/", "ws://10.0.2.2:8000/sdk/v1/ws"],
    ["https://api.example/sports/", "wss://api.example/sports/sdk/v1/ws"],
  ]) {
    test(`baseUrl ${baseUrl}: the client is built, connects to ${wsUrl}, names its channel`, async (t) => {
      globalThis.URL = ReadOnlyURL;
      t.after(() => {
        globalThis.URL = RealURL;
      });
      const channels = [];
      class RecordingChannel {
        constructor(name) {
          channels.push(name);
        }
        postMessage() {}
        close() {}
      }
      const world = createWorld();

      const { client } = createTab(world, { baseUrl, BroadcastChannel: RecordingChannel });
      client.connect().catch(() => {});
      await flush();

      assert.equal(world.WebSocket.latest.url, wsUrl);
      assert.deepEqual(channels, [`sports-client:${new RealURL(MINT_URL, baseUrl).href}`]);
      client.close();
    });
  }

  test("a baseUrl that is not http(s) is refused with a sentence saying what to pass", () => {
    assert.throws(() => new SportsClient({ authEndpoint: MINT_URL, baseUrl: "sports.test" }), {
      name: "TypeError",
      message: /baseUrl must start with http:\/\/ or https:\/\/ \(got "sports\.test"\), or pass wsUrl/,
    });
  });
});

describe("the npm folder", () => {
  test("ships the repository's LICENSE and a README that shows the entry file", async () => {
    const [shipped, repository, readme] = await Promise.all(
      [resolve(CLIENT_FOLDER, "LICENSE"), resolve(REPO, "LICENSE"), resolve(CLIENT_FOLDER, "README.md")].map((path) =>
        readFile(path, "utf8"),
      ),
    );
    assert.equal(shipped, repository);
    assert.match(shipped, /^MIT License/);
    assert.match(readme, /from "\.\/sports-client\.js"/);
  });

  test("package.json names engines, and repository with the folder's own directory", async () => {
    const manifest = JSON.parse(await readFile(resolve(CLIENT_FOLDER, "package.json"), "utf8"));
    assert.equal(manifest.engines.node, ">=20");
    assert.ok(Number(process.versions.node.split(".")[0]) >= 20);
    assert.equal(manifest.repository.type, "git");
    assert.match(manifest.repository.url, /^git\+https:\/\/.+\.git$/);
    assert.equal(manifest.repository.directory, relative(REPO, CLIENT_FOLDER));
    assert.equal(manifest.license, "MIT");
  });

  test("npm pack takes LICENSE, README, package.json, every module and the .d.ts", async () => {
    const { stdout } = await promisify(execFile)("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: CLIENT_FOLDER,
      timeout: 20_000,
    });
    const packed = JSON.parse(stdout)[0].files.map((file) => file.path).sort();
    const names = await readdir(CLIENT_FOLDER);
    const modules = names.filter((name) => name.endsWith(".js"));
    // npm packs every LICENSE* file, so in the template also the twin a generated project's LICENSE is rendered from.
    const twins = names.filter((name) => /^LICENSE\.jinja$/.test(name));
    const expected = ["LICENSE", ...twins, "README.md", "package.json", "sports-client.d.ts", ...modules];
    assert.deepEqual(packed, expected.sort());
  });
});

describe("without a global WebSocket", () => {
  test("connect() and subscribe() say the runtime has none and which option to pass", async (t) => {
    const descriptor = Object.getOwnPropertyDescriptor(globalThis, "WebSocket");
    delete globalThis.WebSocket; // Node.js 22 has one; Node.js 20 has none
    t.after(() => descriptor && Object.defineProperty(globalThis, "WebSocket", descriptor));
    const world = createWorld();
    const { client, events } = createTab(world, { WebSocket: undefined });

    const said = { name: "TypeError", message: /no global WebSocket .*pass a WebSocket class as the WebSocket option/ };
    await assert.rejects(client.connect(), said);
    await assert.rejects(client.subscribe({}, () => {}), said);
    await assert.rejects(client.connect(), (error) => !/null/.test(error.message));
    await world.clock.advance(60_000);
    assert.deepEqual(events.error, []);
    assert.equal(world.backend.mints.length, 0);
    client.close();
  });

  test("WebSocket: null says the socket was turned off", async () => {
    const world = createWorld();
    const { client } = createTab(world, { WebSocket: null });
    await assert.rejects(client.connect(), { name: "TypeError", message: /given WebSocket: null.*HTTP calls only/ });
    client.close();
  });
});
