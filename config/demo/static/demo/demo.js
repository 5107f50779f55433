// The demo page: the browser client minting, calling and subscribing, with its life on screen.

import { csrfToken, pageClient, pageConfig as config } from "../page-client.js";
import { AuthEndpointError, RpcError, UnauthorizedError } from "../sports/sports-client.js";

const $ = (id) => document.getElementById(id);
const client = pageClient();

// --- The token's life ------------------------------------------------------------------------

const token = { mintedAt: null, refreshAt: null, fingerprint: null };
const clock = (time) => new Date(time).toLocaleTimeString();

client.on("token", ({ expiresAt, reason, mintedBy, fingerprint }) => {
  // The mint route hands back the token it gave this login while it is still good (after a
  // reconnect, say): the same token again is no new mint. The page knows it only by comparing
  // with the token it holds, so the log says "the same token" only then.
  const reused = fingerprint === token.fingerprint;
  const expires = Date.parse(expiresAt);
  if (!reused) token.mintedAt = Date.now();
  token.fingerprint = fingerprint;
  // The client asks again at the token's half-life, from its `iat`; the page, which never sees the token,
  // reckons from when it first got it. With refreshLeewaySec set: that long before expiry.
  const leewaySec = config.refreshLeewaySec;
  token.refreshAt = leewaySec == null ? (token.mintedAt + expires) / 2 : expires - leewaySec * 1000;
  $("token-fingerprint").textContent = `…${fingerprint}`;
  $("token-minted-at").textContent = clock(token.mintedAt);
  $("token-expires-at").textContent = clock(expires);
  const entry = document.createElement("li");
  entry.dataset.reason = reason;
  entry.dataset.mintedBy = mintedBy;
  entry.dataset.reused = String(reused);
  const source = reused ? " · the same token, handed back (not a new mint)" : mintedBy === "tab" ? " · from another tab" : "";
  entry.textContent = `${clock(Date.now())} · ${reason} · …${fingerprint}${source}`;
  $("mint-log").prepend(entry);
  clearRetrying();
});

setInterval(() => {
  if (token.refreshAt === null) return;
  const left = Math.max(0, token.refreshAt - Date.now());
  $("token-countdown").textContent = `${Math.ceil(left / 1000)} s`;
  $("token-progress").value = 1 - left / Math.max(1, token.refreshAt - token.mintedAt);
}, 250);

// --- What went wrong: the final failures in red, the retried ones as a quiet line -------------------

/** RpcError codes the client retries by itself (reconnects, restores, refreshes). */
const RETRIED_CODES = new Set(["unavailable", "timeout", "rate_limited"]);

/** A failure the client recovers from on its own, so the user has nothing to do. */
function isRetried(error) {
  if (error instanceof AuthEndpointError) return !error.final;
  return error instanceof RpcError && !(error instanceof UnauthorizedError) && RETRIED_CODES.has(error.code);
}

function errorText(error) {
  if (error instanceof AuthEndpointError && error.final) {
    return `The mint route refused a token (HTTP ${error.status}): ${error.message} Log in again to continue.`;
  }
  if (error instanceof UnauthorizedError) {
    const reason = error.reason ? ` (reason: ${error.reason})` : "";
    return `The service refused the token${reason}: ${error.message}`;
  }
  return `${error.name}: ${error.message}`;
}

function showError(error) {
  const box = $("client-error");
  box.hidden = false;
  box.dataset.kind = error.name;
  if (error instanceof UnauthorizedError && error.reason) box.dataset.reason = error.reason;
  else delete box.dataset.reason;
  box.textContent = errorText(error);
}

function showRetrying(error) {
  const line = $("client-status");
  line.hidden = false;
  line.dataset.kind = error.name;
  line.textContent = `${clock(Date.now())} · ${error.message} Retrying on its own.`;
}

function clearRetrying() {
  $("client-status").hidden = true;
  $("client-status").textContent = "";
}

client.on("error", (error) => {
  if (isRetried(error)) showRetrying(error);
  else showError(error);
});

// --- Matches over HTTP, with the token -------------------------------------------------------

const listing = { cursor: null, nextCursor: null };

async function showMatches() {
  const sport = $("sport-filter").value;
  try {
    const page = await client.matches.list({
      sports: sport ? [sport] : undefined,
      limit: 10,
      cursor: listing.cursor ?? undefined,
    });
    $("matches-rows").replaceChildren(...page.data.map(matchRow));
    listing.nextCursor = page.pagination.nextCursor;
    $("next-page").disabled = listing.nextCursor === null;
    $("matches-note").textContent = `${page.data.length} of ${page.pagination.total}, fetched by your browser with the token.`;
  } catch (error) {
    $("matches-note").textContent = "The call failed.";
    showError(error);
  }
}

function matchRow(match) {
  const row = document.createElement("tr");
  for (const text of [match.sport, `${match.home} – ${match.away}`, `${match.score.home}:${match.score.away}`, match.status]) {
    const cell = document.createElement("td");
    cell.textContent = text;
    row.append(cell);
  }
  return row;
}

$("sport-filter").addEventListener("change", () => {
  listing.cursor = null;
  showMatches();
});
$("next-page").addEventListener("click", () => {
  listing.cursor = listing.nextCursor;
  showMatches();
});

// --- Live events over the WebSocket ------------------------------------------------------------

function showBadge(id, state) {
  const badge = $(id);
  badge.dataset.state = state;
  badge.textContent = state;
}

/** The handle once subscribe() resolved; `refused` if it rejected. */
const live = { handle: null, refused: false };

/** "subscribing" until the first answer, then the handle's own state ("active", "restoring", ...). */
function showSubscriptionState() {
  const state = live.handle?.state ?? (live.refused ? "failed" : "subscribing");
  showBadge("subscription-state", state);
}

client.on("state", (state) => {
  showBadge("connection-state", state);
  if (state === "open") clearRetrying();
  showSubscriptionState();
});

// A restore turns the handle "active" when the service confirms it, with no event of its own.
setInterval(showSubscriptionState, 250);

function showNetworkState() {
  const online = navigator.onLine;
  showBadge("network-state", online ? "online" : "offline");
  $("network-state").hidden = online;
}

window.addEventListener("online", showNetworkState);
window.addEventListener("offline", showNetworkState);
showNetworkState();

function showEvent({ kind, match }) {
  const entry = document.createElement("li");
  entry.textContent = `${clock(Date.now())} · ${match.sport} · ${match.home} ${match.score.home}:${match.score.away} ${match.away} · ${kind === "status" ? match.status : "score"}`;
  $("event-feed").prepend(entry);
  while ($("event-feed").children.length > 50) $("event-feed").lastElementChild.remove();
}

// --- The failure paths ---------------------------------------------------------------------------

async function post(url) {
  const response = await fetch(url, { method: "POST", headers: { "X-CSRFToken": csrfToken() }, redirect: "manual" });
  return response;
}

$("expire-token")?.addEventListener("click", async () => {
  await post("/demo/expire-token"); // the next call is answered unauthorized, then retried once
  await showMatches();
});

$("drop-socket").addEventListener("click", () => client.dropConnection());

// The header's "Log out" stays on this page, to show what the client does when the session ends;
// the header then says so (the user's name and the button go, a link to log in comes). In the demo the
// logout also ends the token (config/demo/token_end.py), so the next call needs a new one at once.
$("session").addEventListener("submit", async (event) => {
  event.preventDefault();
  await post("/accounts/logout/");
  showLoggedOut();
  await showMatches(); // the mint route now answers 401: AuthEndpointError
});

function showLoggedOut() {
  const again = document.createElement("a");
  again.href = "/accounts/login/?next=/";
  again.textContent = "Log in";
  const note = document.createElement("p");
  note.id = "session";
  note.append("Logged out · ", again);
  $("session").replaceWith(note);
}

// --- Start ---------------------------------------------------------------------------------------

await showMatches();
client.subscribe({}, showEvent).then(
  (handle) => {
    live.handle = handle;
    showSubscriptionState();
  },
  (error) => {
    live.refused = true;
    showSubscriptionState();
    showError(error);
  },
);
