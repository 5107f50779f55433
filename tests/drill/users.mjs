// The drill's users (tests/drill/outage.py): each a logged-in page of the site running the real browser client
// (mintroute/static/sports/sports-client.js) with its default options, in Node. Each user's fetch carries its own
// cookie jar to the site (the session and CSRF cookies a browser would send) and connects from an address of its
// own (127.0.1.x), as users on their own machines do: the route's limits count per login and per client address,
// and 20 users from one address would be one address's limit. The service's calls go to the service as a page's
// do. A page with Web Locks (one tab per user), no socket.
//
// stdin: one JSON object {site, service, users: [{username, password}], spreadMs, callEveryMs}. The users open
// their pages spread evenly over spreadMs; each page calls the service every callEveryMs (what makes a page whose
// token ended ask for a new one, as the page's own calls do). stdout: one JSON object a line, each with `t`
// (seconds since the epoch) and `user` (its index):
//   {event: "open"}                          the page got its first token
//   {event: "answer", status, error}         an answer of the mint route that was not 200 (status 0: no answer)
//   {event: "token", expiresAt, reason}      the client took a token (a new one or its own handed back)
//   {event: "invalid", why} / {event: "valid"}  the page holds no valid token from then / holds one again
// SIGTERM closes every client and exits.

import http from "node:http";

import { SportsClient } from "../../mintroute/static/sports/sports-client.js";

const TICK_MS = 200; // how often each page's hold on a valid token is looked at

const emit = (record) => process.stdout.write(`${JSON.stringify({ t: Date.now() / 1000, ...record })}\n`);

const NO_BODY = new Set([101, 204, 205, 304]);

/** fetch() over node:http from `localAddress`: Node's own fetch cannot choose the address it connects from. */
function fetchFrom(localAddress) {
  return (url, init = {}) =>
    new Promise((resolve, reject) => {
      const target = new URL(url);
      const headers = Object.fromEntries(new Headers(init.headers ?? {}));
      const body = init.body == null ? null : String(init.body);
      if (body !== null) headers["content-length"] = String(Buffer.byteLength(body));
      const request = http.request(
        { host: target.hostname, port: target.port, path: target.pathname + target.search, method: init.method ?? "GET", localAddress },
        (response) => {
          const chunks = [];
          response.on("data", (chunk) => chunks.push(chunk));
          response.on("error", reject);
          response.on("end", () => {
            const answered = new Headers();
            for (let at = 0; at < response.rawHeaders.length; at += 2) {
              answered.append(response.rawHeaders[at], response.rawHeaders[at + 1]);
            }
            const content = NO_BODY.has(response.statusCode) ? null : Buffer.concat(chunks);
            resolve(new Response(content, { status: response.statusCode, headers: answered }));
          });
        },
      );
      request.setHeader("host", target.host);
      for (const [name, value] of Object.entries(headers)) request.setHeader(name, value);
      request.on("error", reject);
      init.signal?.addEventListener("abort", () => request.destroy(init.signal.reason), { once: true });
      if (init.signal?.aborted) request.destroy(init.signal.reason);
      request.end(body ?? undefined);
    });
}

/** A fetch from `localAddress` that keeps `jar` (name -> value) for the site's answers and sends it back to the site. */
function jarFetch(site, jar, user, localAddress) {
  const send = fetchFrom(localAddress);
  return async (url, init = {}) => {
    const toSite = String(url).startsWith(site);
    const headers = new Headers(init.headers ?? {});
    if (toSite && jar.size) headers.set("Cookie", [...jar].map(([name, value]) => `${name}=${value}`).join("; "));
    const minting = toSite && String(url).endsWith("/api/sports-token");
    let response;
    try {
      response = await send(url, { ...init, headers });
    } catch (error) {
      if (minting) emit({ user, event: "answer", status: 0, error: String(error?.code ?? error?.cause?.code ?? error?.name ?? error) });
      throw error;
    }
    if (toSite) {
      for (const line of response.headers.getSetCookie()) {
        const [pair] = line.split(";");
        const at = pair.indexOf("=");
        jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
      }
    }
    if (minting && response.status !== 200) {
      const body = await response
        .clone()
        .json()
        .catch(() => ({}));
      emit({ user, event: "answer", status: response.status, error: body?.error ?? "not JSON" });
    }
    return response;
  };
}

async function logIn(site, { username, password }, jar, fetchOf) {
  const form = await (await fetchOf(`${site}/accounts/login/`)).text();
  const csrf = form.match(/name="csrfmiddlewaretoken" value="([^"]+)"/)?.[1];
  if (!csrf) throw new Error(`No login form at ${site}/accounts/login/`);
  const body = new URLSearchParams({ username, password, csrfmiddlewaretoken: csrf });
  const answer = await fetchOf(`${site}/accounts/login/`, {
    method: "POST",
    body: body.toString(),
    headers: { Origin: site, Referer: `${site}/accounts/login/`, "Content-Type": "application/x-www-form-urlencoded" },
  });
  if (answer.status !== 302) throw new Error(`Logging in ${username} answered ${answer.status}, not 302`);
  if (!jar.has("sessionid") && ![...jar.keys()].some((name) => name.includes("session"))) {
    throw new Error(`Logging in ${username} set no session cookie`);
  }
}

async function openPage({ site, service, callEveryMs }, account, user, pages) {
  const jar = new Map();
  const fetchOf = jarFetch(site, jar, user, `127.0.1.${user + 1}`);
  await logIn(site, account, jar, fetchOf);
  const page = { user, expiresAtMs: 0, final: false, valid: null, client: null, caller: null };
  page.client = new SportsClient({
    baseUrl: service,
    authEndpoint: `${site}/api/sports-token`,
    authHeaders: () => ({ "X-CSRFToken": jar.get("csrftoken") ?? "" }),
    fetch: fetchOf,
    locks: { request: async (_name, callback) => callback() },
    BroadcastChannel: null,
    WebSocket: null,
    document: null,
    window: null,
  });
  page.client.on("token", ({ expiresAt, reason }) => {
    page.expiresAtMs = Date.parse(expiresAt);
    emit({ user, event: "token", expiresAt, reason });
  });
  page.client.on("error", (error) => {
    if (error?.final) page.final = true; // the mint route said this user is signed out: the client stops
  });
  const call = () => page.client.matches.list({ limit: 1 }).catch(() => {});
  await call();
  if (!page.expiresAtMs) throw new Error(`${account.username}'s page got no token`);
  emit({ user, event: "open" });
  page.caller = setInterval(call, callEveryMs);
  pages.push(page);
}

function watch(pages) {
  for (const page of pages) {
    const valid = !page.final && page.expiresAtMs > Date.now();
    if (valid === page.valid) continue;
    page.valid = valid;
    emit({ user: page.user, event: valid ? "valid" : "invalid", why: page.final ? "refused for good" : "expired" });
  }
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const settings = JSON.parse(input);
const pages = [];
const ticker = setInterval(() => watch(pages), TICK_MS);
process.on("SIGTERM", () => {
  clearInterval(ticker);
  for (const page of pages) {
    clearInterval(page.caller);
    page.client.close();
  }
  process.exit(0);
});
const gapMs = settings.users.length > 1 ? settings.spreadMs / (settings.users.length - 1) : 0;
const started = Date.now();
for (const [user, account] of settings.users.entries()) {
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + user * gapMs - Date.now())));
  await openPage(settings, account, user, pages);
}
