/**
 * Getting one token: from the integrator's mint route (a POST with the page's cookies) or from the
 * integrator's own fetchToken, checked the same way. A token source is {name, mint({reason,
 * signal})}; the keeper bounds it in time and aborts it through `signal`.
 */

import { AuthEndpointError, describe } from "./errors.js";
import { readJson } from "./rpc.js";

const EXPECTED_BODY = '{"token": "<JWT>", "expiresAt": "<ISO 8601 with offset>"}';
/** An expiry without an offset would be read in the user's time zone, hours off. */
const ENDS_WITH_OFFSET = /(?:Z|[+-]\d{2}:\d{2})$/i;

/** POSTs {reason} to the mint route at `endpoint`. */
export function routeSource({ fetch, endpoint, authHeaders, now }) {
  const name = `The token mint route ${endpoint}`;
  async function mint({ reason, signal }) {
    const headers = await headersFrom(authHeaders);
    let response;
    try {
      response = await fetch(endpoint, {
        method: "POST",
        headers,
        body: JSON.stringify({ reason }),
        credentials: "same-origin",
        signal,
      });
    } catch (cause) {
      throw new AuthEndpointError(`${name} is unreachable (${describe(cause)}).`, { cause });
    }
    const receivedAtMs = now();
    if (typeof response?.status !== "number" || typeof response.headers?.get !== "function") {
      throw new AuthEndpointError(`${name} was answered with something that is not a Response (from fetch).`);
    }
    if (isRedirectToPage(response)) throw redirectError(response, name);
    if (!response.ok) throw await refusalFrom(response, name, receivedAtMs);
    const skewMs = serverSkewMs(response.headers.get("Date"), receivedAtMs);
    return tokenRecordFrom(await readJson(response), { source: name, skewMs, receivedAtMs });
  }
  return { name, mint };
}

/** Calls the integrator's fetchToken; it may throw AuthEndpointError itself to choose the status. */
export function callbackSource({ fetchToken, now }) {
  const name = "fetchToken()";
  async function mint({ reason, signal }) {
    let body;
    try {
      body = await fetchToken({ reason, signal });
    } catch (cause) {
      if (cause instanceof AuthEndpointError) throw cause;
      throw new AuthEndpointError(`${name} failed (${describe(cause)}).`, { cause });
    }
    return tokenRecordFrom(body, { source: name, skewMs: null, receivedAtMs: now() });
  }
  return { name, mint };
}

/** The problem with a TokenResponse, or null when it is one. Also checks what other tabs send. */
export function tokenShapeProblem(body) {
  if (body === null || typeof body !== "object") return "a body that is not a JSON object";
  if (typeof body.token !== "string" || body.token === "") return "no token";
  if (typeof body.expiresAt !== "string" || Number.isNaN(Date.parse(body.expiresAt))) return "no valid expiresAt";
  if (!ENDS_WITH_OFFSET.test(body.expiresAt)) return `an expiresAt without an offset (${body.expiresAt})`;
  return null;
}

/**
 * Checks a TokenResponse and returns the record the keeper holds, or throws AuthEndpointError.
 * `skewMs` (server time minus local time) comes from the route's Date header; without one, the
 * JWT's `iat` is the server's clock at minting. `issuedAtMs` (the `iat`, or null) places the
 * token's half-life, when the keeper refreshes it.
 */
function tokenRecordFrom(body, { source, skewMs, receivedAtMs }) {
  const problem = tokenShapeProblem(body);
  if (problem) throw new AuthEndpointError(`${source} returned ${problem}; it must return ${EXPECTED_BODY}.`);
  const expiresAtMs = Date.parse(body.expiresAt);
  const issuedAtMs = issuedAtMsOf(body.token);
  const skew = skewMs ?? (issuedAtMs === null ? 0 : issuedAtMs - receivedAtMs);
  // Accepting a dead token would schedule its refresh in the past, then again, in a tight loop.
  if (expiresAtMs <= receivedAtMs + skew) {
    throw new AuthEndpointError(`${source} returned a token that had already expired (${body.expiresAt}).`);
  }
  return { token: body.token, expiresAt: body.expiresAt, expiresAtMs, skewMs: skew, issuedAtMs };
}

/** Server time minus local time, from a Date header; null when there is none. */
function serverSkewMs(dateHeader, localNowMs) {
  const serverNowMs = Date.parse(dateHeader ?? "");
  return Number.isNaN(serverNowMs) ? null : serverNowMs - localNowMs;
}

/**
 * When the service issued `token`, in server milliseconds, from a JWT's `iat` claim; null when the
 * token is not a JWT or has none.
 * @param {string} token
 * @returns {number | null}
 */
export function issuedAtMsOf(token) {
  const payload = token.split(".")[1];
  if (token.split(".").length !== 3 || !payload) return null;
  try {
    const claims = JSON.parse(atob(payload.replace(/-/g, "+").replace(/_/g, "/")));
    return Number.isFinite(claims?.iat) ? claims.iat * 1000 : null;
  } catch {
    return null;
  }
}

/** authHeaders as given: an object, a Headers, or a function returning either (or a promise of either). */
async function headersFrom(authHeaders) {
  let given;
  try {
    given = typeof authHeaders === "function" ? await authHeaders() : authHeaders;
  } catch (cause) {
    throw new AuthEndpointError(`authHeaders() threw (${describe(cause)}), so no token was requested.`, { cause });
  }
  const extra = headerEntries(given);
  const hasContentType = extra.some(([name]) => name.toLowerCase() === "content-type");
  return Object.fromEntries(hasContentType ? extra : [["Content-Type", "application/json"], ...extra]);
}

function headerEntries(given) {
  if (given == null) return [];
  if (typeof given.forEach === "function" && typeof given.get === "function") {
    const entries = [];
    given.forEach((value, name) => entries.push([name, value]));
    return entries;
  }
  if (Array.isArray(given)) return given.map(([name, value]) => [name, value]);
  if (typeof given === "object") return Object.entries(given);
  throw new AuthEndpointError(
    `authHeaders gave ${typeof given}; it must be an object of header names to values, a Headers, ` +
      "or a function returning either.",
  );
}

/**
 * A redirect answered instead of a token: a session that ended sends the mint route's caller to the
 * login page (followed by fetch, or seen as a 3xx). Retrying cannot help until the user signs in.
 */
function isRedirectToPage(response) {
  if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400)) return true;
  const contentType = response.headers.get("Content-Type") ?? "";
  return response.redirected === true && !contentType.includes("json");
}

function redirectError(response, source) {
  const target = response.headers.get("Location") || response.url || "another page";
  const message =
    `${source} redirected to ${target} instead of answering with a token: the session has ended, ` +
    "so the user has to sign in again. (Mint routes should answer 401, not redirect.)";
  return new AuthEndpointError(message, { status: response.status, final: true });
}

async function refusalFrom(response, source, nowMs) {
  const body = await readJson(response);
  const code = typeof body?.error === "string" ? ` ${body.error}` : "";
  const detail = typeof body?.message === "string" ? `: ${body.message}` : "";
  const sentence = `${source} answered ${response.status}${code}${detail}`;
  // An HTTP-date Retry-After is in the server's time, like its Date header.
  const serverNowMs = Date.parse(response.headers.get("Date")) || nowMs;
  const error = new AuthEndpointError(/[.!?]$/.test(sentence) ? sentence : `${sentence}.`, {
    status: response.status,
    retryAfter: parseRetryAfterHeader(response.headers.get("Retry-After"), serverNowMs),
  });
  if (error.final) {
    error.message += " The user has to sign in (or pass the CSRF header in authHeaders) before a token can be minted.";
  }
  return error;
}

/** A Retry-After header's seconds (it may be a number or an HTTP date); null when absent or unreadable. */
function parseRetryAfterHeader(headerValue, nowMs) {
  if (headerValue == null || headerValue.trim() === "") return null;
  const seconds = Number(headerValue);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const retryAtMs = Date.parse(headerValue);
  return Number.isNaN(retryAtMs) ? null : Math.max(0, (retryAtMs - nowMs) / 1000);
}
