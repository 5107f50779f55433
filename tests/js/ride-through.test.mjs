// The browser client's default schedule against the mint route's rules: an upstream outage that starts
// after a page got its token costs no page its token for at least ttl/2 - 60 s (240 s with ttl 600).
// tests/mintroute/test_client_schedule.py asks the real route at the moment this client chooses.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { MINT_URL, START_MS, createTab, createWorld, fakeResponse } from "./fakes.mjs";

const TTL_MS = 600_000;
/** The route rides through only while the held token has more than this left (mintroute/ridethrough.py). */
const LEAST_LIFE_LEFT_MS = 60_000;
/** SPORTS_TOKEN_RATE's default, "10/m", per login. */
const RATE_PER_MINUTE = 10;
const GUARANTEE_MS = TTL_MS / 2 - LEAST_LIFE_LEFT_MS;

/**
 * The mint route's rules on the fake clock, as mintroute/reuse.py, mintroute/sharing.py and
 * mintroute/ridethrough.py state them. "login": the token this login was last given while it has more
 * than half its ttl left, else a mint. "site": the site's token for everyone while it has more than half
 * its ttl left, else a mint that becomes the site's token. A mint that fails upstream answers the token
 * the caller would have been handed while that has more than 60 s left, else 503. Every answer counts
 * against the login's rate limit first. Tokens are JWT-shaped with `iat` and `exp` (`exp - iat == ttl`).
 */
class RouteModel {
  upstreamDown = false;
  /** {atMs, page, status, again}: every answer; `again` when it repeats the token that page was last given. */
  answers = [];
  #backend;
  #mode;
  /** login (or "site") -> {token, expiresAt} */
  #held = new Map();
  /** page -> the token last answered to it */
  #given = new Map();
  /** `${login} ${minute}` -> answers counted */
  #counts = new Map();

  constructor(backend, mode) {
    this.#backend = backend;
    this.#mode = mode;
  }

  /** The fetch of a page of `login`: the mint route here, the service's RPC endpoint in the backend. */
  fetchFor(login, page) {
    return async (url, init) => (url === MINT_URL ? fakeResponse(this.#answer(login, page)) : this.#backend.fetch(url, init));
  }

  #answer(login, page) {
    const nowMs = this.#backend.serverNow;
    const minute = `${login} ${Math.floor(nowMs / 60_000)}`;
    this.#counts.set(minute, (this.#counts.get(minute) ?? 0) + 1);
    if (this.#counts.get(minute) > RATE_PER_MINUTE) return this.#refuse(page, 429, "rate_limited");
    const key = this.#mode === "site" ? "site" : login;
    const held = this.#held.get(key);
    const leftMs = held ? Date.parse(held.expiresAt) - nowMs : 0;
    if (held && leftMs > TTL_MS / 2) return this.#hand(page, held);
    if (!this.upstreamDown) {
      this.#held.set(key, this.#backend.jwtToken(nowMs));
      return this.#hand(page, this.#held.get(key));
    }
    if (held && leftMs > LEAST_LIFE_LEFT_MS) return this.#hand(page, held);
    return this.#refuse(page, 503, "upstream_unavailable");
  }

  #hand(page, body) {
    this.answers.push({ atMs: this.#backend.serverNow, page, status: 200, again: this.#given.get(page) === body.token });
    this.#given.set(page, body.token);
    return this.#backend.ok(body);
  }

  #refuse(page, status, error) {
    this.answers.push({ atMs: this.#backend.serverNow, page, status, again: false });
    return { status, headers: { "Retry-After": "5" }, body: { error, message: "No." } };
  }
}

/**
 * Pages opened (and some closed) as `visits` say, then an upstream outage from `outageAtMs`, watched for
 * `watchMs`. The pages open at the outage call the service now and then. Per such page: the time from the
 * outage to the route's first answer to it that is not 200, to its first failed call and to its first
 * "error" event, and the route's answers to it meanwhile.
 */
async function outage({ mode, visits, outageAtMs, watchMs, random }) {
  const world = createWorld();
  const route = new RouteModel(world.backend, mode);
  const elapsedMs = () => world.clock.now - START_MS;
  const pages = [];
  const moments = visits.flatMap((visit, page) => [
    { atMs: visit.opensAtMs, open: { ...visit, page } },
    ...(visit.leavesAtMs === undefined ? [] : [{ atMs: visit.leavesAtMs, leave: page }]),
  ]);
  for (const { atMs, open, leave } of moments.sort((a, b) => a.atMs - b.atMs)) {
    await world.clock.advance(atMs - elapsedMs());
    if (leave !== undefined) pages.find((page) => page.page === leave).client.close();
    if (!open) continue;
    const tab = createTab(world, { fetch: route.fetchFor(open.login, open.page), random: () => random });
    const page = { ...open, failedAtMs: Infinity, heardAtMs: Infinity, ...tab };
    page.client.on("error", () => (page.heardAtMs = Math.min(page.heardAtMs, elapsedMs())));
    await page.client.rpc("ping");
    pages.push(page);
  }
  const open = pages.filter((page) => page.leavesAtMs === undefined);
  await world.clock.advance(outageAtMs - elapsedMs());
  route.upstreamDown = true;
  // Calls at the outage's start, every minute, and a second before the bound.
  for (const callAtMs of [0, 60_000, 120_000, 180_000, GUARANTEE_MS - 1_000, watchMs]) {
    await world.clock.advance(outageAtMs + callAtMs - elapsedMs());
    for (const page of open) {
      await page.client.rpc("ping").catch(() => (page.failedAtMs = Math.min(page.failedAtMs, elapsedMs())));
    }
  }
  return open.map((page) => {
    page.client.close();
    const answers = route.answers.filter((answer) => answer.page === page.page && answer.atMs - START_MS >= outageAtMs);
    const refusal = answers.find((answer) => answer.status !== 200);
    return {
      page: page.page,
      answers,
      refusal,
      refusedAfterMs: refusal ? refusal.atMs - START_MS - outageAtMs : Infinity,
      failedAfterMs: page.failedAtMs - outageAtMs,
      heardAfterMs: page.heardAtMs - outageAtMs,
    };
  });
}

describe("an upstream outage after the pages got their tokens", () => {
  // Login "a" opens a page at 0 s (a token is minted), leaves at 120 s and comes back at 130 s; login "b"
  // opens one at 250 s. So pages get tokens part-way through their lives: "a"'s second page its login's
  // token again, and in "site" mode both pages the site's token, whose first holder has left.
  const visits = [
    { login: "a", opensAtMs: 0, leavesAtMs: 120_000 },
    { login: "a", opensAtMs: 130_000 },
    { login: "b", opensAtMs: 250_000 },
  ];
  // The outage starts every 17th second over a token's half-life and more. random() 0 asks again most
  // often (every 10 s: the rate limit's case), 0.999999 least often.
  for (const mode of ["login", "site"]) {
    for (const random of [0, 0.999999]) {
      test(`"${mode}" mode, random() ${random}: no page loses its token, nor hears of it, for ttl/2 - 60 s`, async () => {
        let closestMs = Infinity;
        for (let outageAtMs = 260_000; outageAtMs < 260_000 + TTL_MS / 2 + 30_000; outageAtMs += 17_000) {
          for (const page of await outage({ mode, visits, outageAtMs, watchMs: TTL_MS / 2, random })) {
            const where = `page ${page.page}, outage at ${outageAtMs / 1000} s`;
            assert.ok(page.refusedAfterMs >= GUARANTEE_MS, `${where}: refused after ${page.refusedAfterMs / 1000} s`);
            assert.ok(page.failedAfterMs >= GUARANTEE_MS, `${where}: a call failed after ${page.failedAfterMs / 1000} s`);
            assert.ok(page.heardAfterMs >= GUARANTEE_MS, `${where}: an error event after ${page.heardAfterMs / 1000} s`);
            if (page.refusal) assert.equal(page.refusal.status, 503, `${where}: refused by the rate limit`);
            // Handed its own token back, a page asks again 10 s later at the soonest.
            page.answers.slice(1).forEach((answer, index) => {
              const previous = page.answers[index];
              if (previous.again) assert.ok(answer.atMs - previous.atMs >= 10_000, `${where}: asked again too soon`);
            });
            closestMs = Math.min(closestMs, page.refusedAfterMs);
          }
        }
        // The sweep reached the worst case, an outage just before a page's refresh at its token's half-life:
        // the route refused at the page's first ask after its token had a minute left (asks <= 40 s apart).
        assert.ok(closestMs < GUARANTEE_MS + 25_000, `closest ${closestMs / 1000} s`);
      });
    }
  }
});
