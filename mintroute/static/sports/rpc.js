/** JSON-RPC 2.0 envelopes, and JSON over HTTP. */

import { ERROR } from "./constants.js";
import { RpcError, UnauthorizedError, describe } from "./errors.js";

/** The RpcError (UnauthorizedError for "unauthorized") for a JSON-RPC `error` object. */
export function rpcErrorFrom(error, requestId) {
  const code = typeof error?.code === "string" ? error.code : ERROR.INTERNAL_ERROR;
  const message = typeof error?.message === "string" ? error.message : "The service answered with an error.";
  const data = error?.data;
  return code === ERROR.UNAUTHORIZED
    ? new UnauthorizedError(message, data, { requestId })
    : new RpcError(code, message, data, { requestId });
}

function isEnvelope(body) {
  if (body === null || typeof body !== "object" || body.jsonrpc !== "2.0") return false;
  return "result" in body || "error" in body;
}

/** The `result` of a JSON-RPC answer to request `requestId`, or the error it carries. */
export function resultOf(envelope, requestId) {
  const badResponse = (message) => new RpcError(ERROR.BAD_RESPONSE, message, undefined, { requestId });
  if (!isEnvelope(envelope)) throw badResponse("The service's answer is not a JSON-RPC 2.0 envelope.");
  // A parse_error cannot echo the id (null); any other mismatch belongs to another request.
  const idMatches = envelope.id === requestId || (envelope.error && envelope.id === null);
  if (!idMatches) {
    throw badResponse(`The answer carries id ${JSON.stringify(envelope.id)}, not ${JSON.stringify(requestId)}.`);
  }
  if (envelope.error) throw rpcErrorFrom(envelope.error, requestId);
  return envelope.result;
}

/** One JSON-RPC call over HTTP. The endpoint reads only the Bearer header, so no cookies go along. */
export async function postRpc({ fetch, url, requestId, method, params, token, signal }) {
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: requestId, method, params }),
      credentials: "omit",
      signal,
    });
  } catch (cause) {
    const message = `The service at ${url} is unreachable (${describe(cause)}).`;
    throw new RpcError(ERROR.UNAVAILABLE, message, undefined, { requestId, cause });
  }
  const envelope = await readJson(response);
  if (!isEnvelope(envelope) && !response.ok) {
    const message = `The service at ${url} answered HTTP ${response.status}.`;
    throw new RpcError(ERROR.UNAVAILABLE, message, { status: response.status }, { requestId });
  }
  return resultOf(envelope, requestId);
}

/** The response's JSON body, or undefined when it has none. */
export async function readJson(response) {
  try {
    return await response.json();
  } catch {
    return undefined;
  }
}
