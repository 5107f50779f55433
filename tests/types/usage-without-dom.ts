// The client where there is no DOM: React Native, or a script with its own WebSocket. `make
// typecheck` compiles this against sports-client.d.ts with "lib": ["es2022"] and "types": []
// (tsconfig.no-dom.json), so a declaration that leans on the DOM library fails here. Lines
// marked ts-expect-error must stay errors.

import {
  type AbortSignalLike,
  type BroadcastChannelLike,
  type ClientAbortSignal,
  type FetchLike,
  type ResponseLike,
  SportsClient,
  type TokenResponse,
  type WebSocketLike,
} from "../../mintroute/static/sports/sports-client.js";

// What such a runtime provides; declared here, as its own typings would.
declare function nativeFetch(
  url: string,
  init: { method: string; body: string; signal: AbortSignalLike },
): Promise<ResponseLike>;
declare function setTimeout(callback: () => void, delayMs: number): number;
declare function clearTimeout(handle: number): void;

/** A WebSocket class of the runtime's own, reduced to what the client uses. */
class NativeWebSocket implements WebSocketLike {
  readonly sent: string[] = [];

  constructor(readonly url: string) {}

  send(data: string): void {
    this.sent.push(data);
  }

  close(code?: number): void {
    void code;
  }

  addEventListener(type: "open", listener: () => void): void;
  addEventListener(type: "message", listener: (event: { readonly data: unknown }) => void): void;
  addEventListener(type: "close", listener: (event: { readonly code: number }) => void): void;
  addEventListener(type: string, listener: (event: never) => void): void {
    void [type, listener];
  }
}

const signalIsNotDom: AbortSignalLike = {} as ClientAbortSignal; // without the DOM, the declared shape

const client = new SportsClient({
  baseUrl: "https://sports.example",
  fetchToken: async ({ reason, signal }): Promise<TokenResponse> => {
    if (signal.aborted) throw signal.reason;
    const response = await nativeFetch("https://app.example/api/sports-token", {
      method: "POST",
      body: JSON.stringify({ reason }),
      signal,
    });
    return (await response.json()) as TokenResponse;
  },
  WebSocket: NativeWebSocket,
  setTimeout: (callback, delayMs) => setTimeout(callback, delayMs),
  clearTimeout: (handle) => clearTimeout(handle as number),
  BroadcastChannel: null,
  locks: null,
  document: null,
  window: null,
});

const fetchViaRoute: FetchLike = async (url, init) => nativeFetch(url, init);
class NoChannel implements BroadcastChannelLike {
  onmessage: ((event: { readonly data: unknown }) => void) | null = null;
  postMessage(message: unknown): void {
    void message;
  }
  close(): void {}
}
new SportsClient({
  authEndpoint: "https://app.example/api/sports-token",
  authHeaders: { Authorization: "Token app-session" },
  baseUrl: "https://sports.example",
  fetch: fetchViaRoute,
  WebSocket: null,
  BroadcastChannel: NoChannel,
  locks: { request: async (_name, callback) => callback(null) },
  document: { visibilityState: "visible", addEventListener: () => undefined, removeEventListener: () => undefined },
});

// @ts-expect-error: a WebSocket that cannot send is not one
new SportsClient({ fetchToken: async () => ({ token: "", expiresAt: "" }), WebSocket: class { close(): void {} } });

async function screen(): Promise<void> {
  const page = await client.matches.list({ sports: ["football"], limit: 10 });
  const first: string | undefined = page.data[0]?.home;
  const subscription = await client.subscribe({ sports: ["tennis"] }, ({ match }) => void match.score.home);
  await subscription.unsubscribe();
  client.close();
  void [first, signalIsNotDom];
}

void screen;
