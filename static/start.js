// The product's first page: the matches, fetched by the browser with a token from this site's mint route,
// and their live events over the service's socket. Every text from the service is set as textContent.

import { pageClient } from "./page-client.js";
import { ERROR, STATE } from "./sports/constants.js";
import { AuthEndpointError, RpcError } from "./sports/sports-client.js";

const $ = (id) => document.getElementById(id);
const client = pageClient();

const PAGE_SIZE = 10;
const EVENTS_SHOWN = 8;
const SUBSCRIBE_AGAIN_MS = 15_000; // a subscription refused while the socket stays open is asked for again

// --- Names and times, as people read them --------------------------------------------------------

const sportNames = new Map([...$("sport-filter").options].map((option) => [option.value, option.textContent]));
const sportName = (sport) => sportNames.get(sport) ?? sport;

const timeOfDay = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const weekdayAndDate = new Intl.DateTimeFormat(undefined, { weekday: "short", day: "numeric", month: "short" });
const DAY_MS = 24 * 60 * 60 * 1000;
const startOfDay = (date) => new Date(date.getFullYear(), date.getMonth(), date.getDate());

/** "14:30" today (the page lists today's matches), else "Yesterday 21:00", "Tomorrow 18:45", "Sat 12 Dec 14:30". */
function kickOff(iso) {
  const when = new Date(iso);
  const days = Math.round((startOfDay(when) - startOfDay(new Date())) / DAY_MS);
  if (days === 0) return timeOfDay.format(when);
  const day = { [-1]: "Yesterday", 1: "Tomorrow" }[days] ?? weekdayAndDate.format(when);
  return `${day} ${timeOfDay.format(when)}`;
}

const STATUS_WORDS = { live: "Live", finished: "Full time", scheduled: "Scheduled" };
const statusWords = (status) => STATUS_WORDS[status] ?? status;

/** An element with a class and a text, nothing parsed. */
function element(tag, className, text) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== undefined) made.textContent = text;
  return made;
}

// --- The connection, in words ------------------------------------------------------------------

/** The client's raw states, as a sentence of a few words. */
const STATE_WORDS = {
  [STATE.IDLE]: "Connecting…",
  [STATE.CONNECTING]: "Connecting…",
  [STATE.OPEN]: "Live",
  [STATE.RECONNECTING]: "Reconnecting…",
  [STATE.LIMITED]: "Too many live connections for this account; retrying…",
  [STATE.UNAUTHORIZED]: "Signed out — log in again",
  [STATE.CLOSED]: "Disconnected",
};
/**
 * State "limited": the service refused the socket for the account's limits (close code 4429), and the
 * client retries on its own. Its `rate_limited` answer names the limit: the account's connections
 * (the state's own words), or its requests per minute.
 */
const LIMIT_WORDS = { requests_per_minute: "Too many requests for this account right now; retrying…" };

/** What the raw state does not say: the browser is offline, or which limit the service named. */
const connection = { offline: !navigator.onLine, limit: null };

function showConnection() {
  const state = client.state;
  const badge = $("connection-state");
  const wanted = state !== STATE.UNAUTHORIZED && state !== STATE.CLOSED;
  let words = STATE_WORDS[state] ?? state;
  let reason = null;
  if (state !== STATE.LIMITED) connection.limit = null;
  if (wanted && connection.offline) [words, reason] = ["Offline — waiting for the network", "offline"];
  else if (state === STATE.LIMITED) [words, reason] = [LIMIT_WORDS[connection.limit] ?? words, "socket-limit"];
  badge.dataset.state = state; // the client's own word, for scripts and styles
  if (reason) badge.dataset.reason = reason;
  else delete badge.dataset.reason;
  badge.textContent = words;
  $("signed-out").hidden = state !== STATE.UNAUTHORIZED;
}

client.on("state", (state) => {
  showConnection();
  if (state === STATE.OPEN && live.followWhenOpen) follow();
});

client.on("error", (error) => {
  if (client.state === STATE.LIMITED && error instanceof RpcError && error.code === ERROR.RATE_LIMITED) {
    connection.limit = error.data?.limit ?? null; // the answer comes just after the state
    showConnection();
  } else if (error instanceof RpcError && error.code === ERROR.RATE_LIMITED && error.data?.limit === "subscriptions") {
    $("events-note").textContent = "Too many live subscriptions for this account; retrying…";
  }
  // Anything else the client retries by itself (the state says so), or ends in "unauthorized".
});

for (const change of ["online", "offline"]) {
  window.addEventListener(change, () => {
    connection.offline = !navigator.onLine;
    showConnection();
  });
}

// --- Matches: today's, by sport, paged here -------------------------------------------------------

const FETCH_LIMIT = 100; // the largest page the service gives
const MAX_CALLS = 10; // calls for one choice of sport at most; past them the page shows what it found, and says so

/** Today's matches of the chosen sport (oldest kick-off first), fetched once per choice; shown PAGE_SIZE at a time. */
const today = { matches: [], complete: true, page: 0, request: 0, midnight: null };

/**
 * Today's matches, in local time. The service's matches.list has no date filter (it lists every match by
 * kick-off, oldest first), so the page walks its cursor until a match starts after today, or MAX_CALLS calls.
 */
async function fetchTodaysMatches(sport) {
  const dayStart = startOfDay(new Date());
  const dayEnd = new Date(dayStart.getFullYear(), dayStart.getMonth(), dayStart.getDate() + 1);
  const found = [];
  let cursor;
  for (let call = 0; call < MAX_CALLS; call += 1) {
    const result = await client.matches.list({ sports: sport ? [sport] : undefined, limit: FETCH_LIMIT, cursor });
    for (const match of result.data) {
      const startsAt = new Date(match.startsAt);
      if (startsAt >= dayEnd) return { matches: found, complete: true, dayEnd };
      if (startsAt >= dayStart) found.push(match);
    }
    cursor = result.pagination.nextCursor ?? undefined;
    if (!cursor) return { matches: found, complete: true, dayEnd };
  }
  return { matches: found, complete: false, dayEnd };
}

async function showMatches() {
  const request = ++today.request;
  const sport = $("sport-filter").value;
  $("matches-table").setAttribute("aria-busy", "true");
  $("previous-page").disabled = $("next-page").disabled = true;
  $("matches-note").textContent = "Loading today's matches…";
  try {
    const { matches, complete, dayEnd } = await fetchTodaysMatches(sport);
    if (request !== today.request) return; // a later choice of sport won
    Object.assign(today, { matches, complete, page: 0 });
    clearTimeout(today.midnight); // at midnight, the new day's matches
    today.midnight = setTimeout(showMatches, dayEnd.getTime() - Date.now() + 1000);
    $("matches-problem").hidden = true;
    showPage();
  } catch (error) {
    if (request !== today.request) return;
    today.matches = []; // no rows of another sport under this one's name
    $("matches-rows").replaceChildren();
    $("matches-note").textContent = "";
    $("matches-problem").hidden = false;
    $("matches-problem").textContent = problemWords(error);
    $("previous-page").disabled = $("next-page").disabled = true;
  } finally {
    if (request === today.request) $("matches-table").setAttribute("aria-busy", "false");
  }
}

/** The chosen page of today's matches, and a note of where it is among them. */
function showPage() {
  const { matches, complete, page } = today;
  const first = page * PAGE_SIZE;
  const shown = matches.slice(first, first + PAGE_SIZE);
  $("matches-rows").replaceChildren(...shown.map(matchRow));
  $("matches-table").hidden = !shown.length;
  $("matches-empty").hidden = shown.length > 0;
  $("matches-empty").textContent = complete ? noMatchesWords() : "None of today's matches were among those fetched.";
  const range = shown.length === 1 ? `${first + 1}` : `${first + 1}–${first + shown.length}`;
  const count = matches.length === 1 ? "1 match" : `${matches.length} matches`;
  if (!shown.length) $("matches-note").textContent = "";
  else if (complete) $("matches-note").textContent = `${range} of today's ${count}`;
  else $("matches-note").textContent = `${range} of today's first ${count} (more were not fetched)`;
  $("previous-page").disabled = page === 0;
  $("next-page").disabled = first + PAGE_SIZE >= matches.length;
}

function noMatchesWords() {
  const sport = $("sport-filter").value;
  return sport ? `No ${sportName(sport).toLowerCase()} matches today.` : "No matches today.";
}

function problemWords(error) {
  if (error instanceof AuthEndpointError && error.final) return "Your session has ended: log in again to see the matches.";
  if (error instanceof RpcError && error.code === ERROR.RATE_LIMITED) {
    return "Too many requests for this account right now; try again in a moment.";
  }
  return "The matches could not be loaded right now; try again in a moment.";
}

/** A row of the matches' table; its roles stay a table's when a phone's styles lay the cells out as a card. */
function matchRow(match) {
  const row = element("tr");
  row.setAttribute("role", "row");
  row.dataset.matchId = match.id;
  row.dataset.sport = match.sport;

  const when = element("td", "kick-off");
  const time = element("time", "", kickOff(match.startsAt));
  time.dateTime = match.startsAt;
  when.append(time);

  const teams = element("td", "teams");
  teams.append(element("span", "team", match.home), element("span", "versus", " v "), element("span", "team", match.away));
  teams.append(element("span", "competition", `${sportName(match.sport)} · ${match.competition}`));

  const score = element("td", "score");
  const status = element("td", "status-cell");
  status.append(element("span", "status"));
  for (const cell of [when, teams, score, status]) cell.setAttribute("role", "cell");
  row.append(when, teams, score, status);
  updateRow(row, match);
  return row;
}

/** The row's score and status from the match as the service sent it last. */
function updateRow(row, match) {
  row.querySelector(".score").textContent =
    match.status === "scheduled" ? "–" : `${match.score.home} – ${match.score.away}`;
  const status = row.querySelector(".status");
  status.dataset.status = match.status;
  status.textContent = statusWords(match.status);
}

$("sport-filter").addEventListener("change", () => {
  showMatches();
  showEventsOfSport();
});
$("next-page").addEventListener("click", () => {
  today.page += 1;
  showPage();
});
$("previous-page").addEventListener("click", () => {
  today.page = Math.max(0, today.page - 1);
  showPage();
});

// --- Live events: one subscription to every sport; the page shows those of the chosen one ----------

const live = { handle: null, followWhenOpen: false, retryTimer: null };

/** What the event says happened, in words. */
function eventWords(kind, match) {
  if (kind === "status" && match.status === "live") return "Kick-off";
  if (kind === "status" && match.status === "finished") return "Full time";
  if (kind === "status") return statusWords(match.status);
  return "Score";
}

function showEvent({ kind, match }) {
  const listed = today.matches.findIndex((known) => known.id === match.id);
  if (listed >= 0) today.matches[listed] = match; // a later page shows the latest score too
  const row = document.querySelector(`#matches-rows tr[data-match-id="${CSS.escape(match.id)}"]`);
  if (row) {
    updateRow(row, match);
    row.classList.remove("changed");
    void row.offsetWidth; // restart the highlight
    row.classList.add("changed");
  }
  const entry = element("li", "event");
  entry.dataset.sport = match.sport;
  entry.dataset.kind = kind;
  const time = element("time", "event-time", timeOfDay.format(new Date()));
  time.dateTime = new Date().toISOString();
  const head = element("span", "event-head");
  head.append(element("span", "event-kind", eventWords(kind, match)), element("span", "event-sport", sportName(match.sport)));
  const line = element("span", "event-line", `${match.home} ${match.score.home} – ${match.score.away} ${match.away}`);
  entry.append(time, head, line);
  entry.hidden = !shownSport(match.sport);
  $("event-list").prepend(entry);
  while ($("event-list").children.length > EVENTS_SHOWN * 6) $("event-list").lastElementChild.remove();
  showEventsOfSport();
}

const shownSport = (sport) => !$("sport-filter").value || $("sport-filter").value === sport;

/** The latest EVENTS_SHOWN events of the chosen sport. */
function showEventsOfSport() {
  let shown = 0;
  for (const entry of $("event-list").children) {
    entry.hidden = !shownSport(entry.dataset.sport) || shown >= EVENTS_SHOWN;
    if (!entry.hidden) shown += 1;
  }
  $("events-note").hidden = shown > 0;
}

/** Subscribes; a refusal is asked again when the socket is next open, or after a while if it stays open. */
async function follow() {
  live.followWhenOpen = false;
  clearTimeout(live.retryTimer);
  try {
    live.handle = await client.subscribe({}, showEvent);
    $("events-note").textContent = "The latest goals, points and results appear here as they happen.";
  } catch (error) {
    if (error instanceof RpcError && error.code === ERROR.RATE_LIMITED && error.data?.limit === "subscriptions") {
      $("events-note").textContent = "Too many live subscriptions for this account; retrying…";
    }
    if (client.state === STATE.UNAUTHORIZED || client.state === STATE.CLOSED) return;
    if (client.state === STATE.OPEN) live.retryTimer = setTimeout(follow, SUBSCRIBE_AGAIN_MS);
    else live.followWhenOpen = true;
  }
}

// --- Start ------------------------------------------------------------------------------------------

showConnection();
showMatches();
follow();
