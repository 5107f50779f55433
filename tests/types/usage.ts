// A page using the browser client as its README shows. `make typecheck` compiles this against
// sports-client.d.ts with `tsc --noEmit --strict`: a declaration that drifts from the documented
// use fails here. The @ts-expect-error lines must stay errors.

import {
  AuthEndpointError,
  backoff,
  type ConnectionState,
  type MatchEvent,
  type MatchPage,
  type NetworkEvents,
  RpcError,
  SportsClient,
  type SubscriptionState,
  type TokenResponse,
  UnauthorizedError,
} from "../../mintroute/static/sports/sports-client.js";

const csrfToken = (): string => document.cookie.match(/csrftoken=([^;]+)/)?.[1] ?? "";

const client = new SportsClient({
  authEndpoint: "/api/sports-token",
  authHeaders: () => ({ "X-CSRFToken": csrfToken() }),
  refreshLeewaySec: 30,
});

const withFetchToken = new SportsClient({
  fetchToken: async ({ reason, signal }): Promise<TokenResponse> => {
    const response = await fetch("/api/sports-token", { method: "POST", body: JSON.stringify({ reason }), signal });
    return (await response.json()) as TokenResponse;
  },
  baseUrl: "https://sports.example",
  authTimeoutSec: 5,
  requestTimeoutSec: 8,
  BroadcastChannel: null,
  locks: null,
  window: null,
  refreshLeewaySec: null, // the default: refresh at the token's half-life
});

// Every authHeaders form, and every injectable a test passes.
new SportsClient({ authEndpoint: "/api/sports-token", authHeaders: new Headers({ "X-CSRFToken": csrfToken() }) });
new SportsClient({ authEndpoint: "/api/sports-token", authHeaders: async () => new Headers() });
const listeners = new Map<string, () => void>();
const fakeWindow: NetworkEvents = {
  addEventListener: (type, listener) => void listeners.set(type, listener),
  removeEventListener: (type) => void listeners.delete(type),
};
new SportsClient({
  authEndpoint: "/api/sports-token",
  channelName: "my-app-tokens",
  window: fakeWindow,
  document: null,
  now: () => 0,
  random: () => 0.5,
  setTimeout: (callback, delayMs) => setTimeout(callback, delayMs),
  clearTimeout: (handle) => clearTimeout(handle as number),
});
// The browser's own objects fit the shapes the .d.ts declares for them.
new SportsClient({
  authEndpoint: "/api/sports-token",
  fetch,
  WebSocket,
  BroadcastChannel,
  locks: navigator.locks,
  document,
  window,
});
const browserSignal: AbortSignal = new AbortController().signal;
new SportsClient({ fetchToken: async ({ signal }) => ((signal satisfies AbortSignal), { token: "", expiresAt: "" }) });
void browserSignal;
// @ts-expect-error: a timeout is a number of seconds
new SportsClient({ authEndpoint: "/api/sports-token", authTimeoutSec: "10" });

// @ts-expect-error: authEndpoint and fetchToken are exclusive
new SportsClient({ authEndpoint: "/api/sports-token", fetchToken: async () => ({ token: "", expiresAt: "" }) });

async function page(): Promise<void> {
  const listing: MatchPage = await client.matches.list({ sports: ["football"], limit: 10 });
  const next: string | null = listing.pagination.nextCursor;
  if (next !== null) await client.matches.list({ cursor: next });
  const total: number = await client.rpc<number>("matches.count", { sports: ["tennis"] });
  void total;

  await client.connect();
  const subscription = await client.subscribe({ sports: ["football"] }, (event: MatchEvent) => {
    const score: string = `${event.match.score.home}:${event.match.score.away}`;
    void score;
  });
  const state: SubscriptionState = subscription.state;
  if (state === "failed") await client.subscribe({ sports: ["football"] }, () => undefined);
  // @ts-expect-error: the state is the client's to change
  subscription.state = "active";
  await subscription.unsubscribe();

  const stop = client.on("state", (state: ConnectionState) => void state);
  stop();
  // Every state, "limited" (the service refused the socket for the account's limits) among them: a page's words for each.
  const stateWords: Record<ConnectionState, string> = {
    idle: "Connecting",
    connecting: "Connecting",
    open: "Live",
    reconnecting: "Reconnecting",
    limited: "Too many live connections for this account",
    unauthorized: "Signed out",
    closed: "Disconnected",
  };
  void stateWords[client.state];
  // @ts-expect-error: not a state of the client
  const notAState: ConnectionState = "throttled";
  void notAState;
  client.on("token", ({ expiresAt, reason, fingerprint }) => void [expiresAt, reason, fingerprint]);
  client.on("error", (error) => {
    if (error instanceof AuthEndpointError && error.final) location.reload();
    if (error instanceof UnauthorizedError) {
      const reason: string | null = error.reason;
      void [error.code, reason];
    }
    if (error instanceof RpcError) void [error.code, error.data, error.requestId];
  });
  // @ts-expect-error: not an event of the client
  client.on("message", () => undefined);

  const delay: number = backoff(3, { baseMs: 500, capMs: 30_000, random: Math.random });
  void delay;
  client.dropConnection();
  client.close();
  withFetchToken.close();
}

void page;
