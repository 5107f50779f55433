/**
 * What the client throws and emits.
 *
 *     Error
 *     ├── RpcError            the service answered with an error, or no usable answer came in time
 *     │   └── UnauthorizedError   the credential was refused, and refused again with a new token
 *     └── AuthEndpointError   the mint route (or fetchToken) gave no usable token
 */

import { ERROR } from "./constants.js";

const FINAL_MINT_STATUSES = new Set([401, 403]);

/**
 * The service answered a call with `error`, or the client gave up on it. Codes the client makes
 * itself: "unavailable" (unreachable, socket lost), "timeout", "bad_response", "closed".
 */
export class RpcError extends Error {
  /** @type {"RpcError" | "UnauthorizedError"} */
  name = "RpcError";

  /**
   * @param {string} code
   * @param {string} message
   * @param {unknown} [data]
   * @param {{ requestId?: string | null, cause?: unknown }} [options]
   */
  constructor(code, message, data = undefined, { requestId = null, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.code = code;
    this.data = data;
    this.requestId = requestId;
  }
}

/** The credential was refused, and refused again with a newly minted token. */
export class UnauthorizedError extends RpcError {
  /** @type {"UnauthorizedError"} */
  name = "UnauthorizedError";
  /** @type {"unauthorized"} */
  code = ERROR.UNAUTHORIZED;

  /**
   * @param {string} message
   * @param {unknown} [data]
   * @param {{ requestId?: string | null, cause?: unknown }} [options]
   */
  constructor(message, data = undefined, options = {}) {
    super(ERROR.UNAUTHORIZED, message, data, options);
    /** The service's `error.data.reason` ("expired_token", "revoked_key", ...), or null. */
    const reason = /** @type {{ reason?: unknown } | undefined} */ (data)?.reason;
    this.reason = typeof reason === "string" ? reason : null;
  }
}

/**
 * The mint route (or `fetchToken`) gave no usable token. `status` is the HTTP status, or 0 when
 * there was none to give: no answer in time, a network failure, a body of the wrong shape.
 * `final` means retrying cannot help (401, 403, a redirect to the login page): the user has to
 * sign in again.
 */
export class AuthEndpointError extends Error {
  /** @type {"AuthEndpointError"} */
  name = "AuthEndpointError";

  /**
   * @param {string} message
   * @param {{ status?: number, retryAfter?: number | null, final?: boolean, cause?: unknown }} [options]
   */
  constructor(message, { status = 0, retryAfter = null, final = FINAL_MINT_STATUSES.has(status), cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.status = status;
    this.retryAfter = retryAfter;
    this.final = final;
  }
}

/**
 * A short description of something thrown, for a message that says what went wrong.
 * @param {any} thrown anything a `throw` may carry
 * @returns {string}
 */
export function describe(thrown) {
  return thrown?.message ?? String(thrown);
}
