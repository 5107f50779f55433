// When does the browser client, with its default options, ask for its next token? Asked by
// tests/mintroute/test_client_schedule.py, which then asks the real route at that moment.
//
// stdin: a JSON list of {answer, headers, receivedAtMs}: the mint route's body and headers, and when they
// arrived (milliseconds since the epoch, on the route's clock). stdout: a JSON list of the moments, on that
// clock, at which a client that got each answer sends its next mint request (reason "refresh").

import { SportsClient } from "../../mintroute/static/sports/sports-client.js";
import { BASE_URL, FakeClock, MINT_URL, fakeResponse } from "./fakes.mjs";

/** Timers the client may set before its refresh fires: a generous bound, so a bug cannot spin forever. */
const MAX_TIMERS = 1_000;

async function refreshMoment({ answer, headers, receivedAtMs }) {
  const clock = new FakeClock();
  clock.now = receivedAtMs;
  const mintsAtMs = [];
  const fetch = async (url, init) => {
    if (url === MINT_URL) {
      mintsAtMs.push(clock.now);
      return fakeResponse({ status: 200, headers, body: answer });
    }
    return fakeResponse({ body: { jsonrpc: "2.0", id: JSON.parse(init.body).id, result: {} } });
  };
  const client = new SportsClient({
    baseUrl: BASE_URL,
    authEndpoint: MINT_URL,
    fetch,
    now: () => clock.now,
    setTimeout: clock.setTimeout,
    clearTimeout: clock.clearTimeout,
    // A browser's: Web Locks (one tab refreshes, at once), no other tab, no socket.
    locks: { request: async (_name, callback) => callback() },
    BroadcastChannel: null,
    WebSocket: null,
    document: null,
    window: null,
  });
  await client.rpc("ping"); // the page's first call: the answer is its first token
  for (let timer = 0; mintsAtMs.length < 2 && timer < MAX_TIMERS && clock.pending().length; timer++) {
    await clock.advance(Math.min(...clock.pending().map(({ at }) => at)) - clock.now);
  }
  client.close();
  if (mintsAtMs.length < 2) throw new Error(`The client set ${MAX_TIMERS} timers and asked for no new token.`);
  return mintsAtMs[1];
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const moments = [];
for (const received of JSON.parse(input)) moments.push(await refreshMoment(received));
process.stdout.write(JSON.stringify(moments));
