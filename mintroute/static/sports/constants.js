/**
 * The words the client and the service share, named once: WebSocket close codes, error codes,
 * notification methods, token reasons, and the states of the client, its subscriptions and its
 * token refresh.
 */

/** WebSocket close codes: the standard ones the client meets, and the service's 44xx. */
export const CLOSE = Object.freeze({
  NORMAL: 1000,
  POLICY_VIOLATION: 1008,
  UNAUTHORIZED: 4401,
  FORBIDDEN: 4403,
  RATE_LIMITED: 4429,
});

/** RpcError codes: the service's own, then those the client makes itself. */
export const ERROR = Object.freeze({
  UNAUTHORIZED: "unauthorized",
  FORBIDDEN: "forbidden",
  INVALID_PARAMS: "invalid_params",
  RATE_LIMITED: "rate_limited",
  INTERNAL_ERROR: "internal_error",
  // The client's: no answer could be had, or none that makes sense.
  UNAVAILABLE: "unavailable",
  TIMEOUT: "timeout",
  BAD_RESPONSE: "bad_response",
  CLOSED: "closed",
});

/** Notifications the service sends on a socket (frames with a method and no id). */
export const NOTIFICATION = Object.freeze({
  MATCH_EVENT: "matches.event",
  AUTH_EXPIRED: "auth.expired",
  AUTH_REVOKED: "auth.revoked",
});

/** Why a token is fetched; the mint route receives it as {"reason": ...}. */
export const REASON = Object.freeze({
  INITIAL: "initial",
  REFRESH: "refresh",
  RECONNECT: "reconnect",
  UNAUTHORIZED: "unauthorized",
});

/** The client's `state`, as its "state" event reports it. */
export const STATE = Object.freeze({
  IDLE: "idle",
  CONNECTING: "connecting",
  OPEN: "open",
  RECONNECTING: "reconnecting",
  /** The service refused the socket for the account's limits (close code 4429): retrying on the backoff. */
  LIMITED: "limited",
  UNAUTHORIZED: "unauthorized",
  CLOSED: "closed",
});

/** A subscription handle's `state`. */
export const SUBSCRIPTION = Object.freeze({
  ACTIVE: "active",
  RESTORING: "restoring",
  FAILED: "failed",
  CLOSED: "closed",
});

/** Where the token keeper's refresh stands (its own affair; the page never sees it). */
export const REFRESH = Object.freeze({
  /** The next refresh waits for its timer (or for the first call, before any token). */
  ON_SCHEDULE: "on-schedule",
  /** A refresh failed while the held token is still valid: a backoff timer tries again. */
  RETRYING: "retrying",
  /** The socket gave up: nothing mints by timer until the page asks for something. */
  PAUSED: "paused",
  /** The client was closed or its user signed out: for good. */
  STOPPED: "stopped",
});
