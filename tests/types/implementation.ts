// The browser client's JavaScript, held to its declarations: tsconfig.checkjs.json type-checks
// every module under `checkJs` (their JSDoc types name sports-client.d.ts's), and this file makes
// the compiler prove that what the modules export is what the .d.ts declares.
//
// `SportsClient` is checked where it is defined: sports-client.js declares that its class
// `@implements` the declared one, and its constructor takes the declared options.

import type * as Declared from "../../mintroute/static/sports/sports-client.js";
import { AuthEndpointError, RpcError, UnauthorizedError } from "../../mintroute/static/sports/errors.js";
import { backoff } from "../../mintroute/static/sports/timing.js";

export const implementations: {
  RpcError: typeof Declared.RpcError;
  UnauthorizedError: typeof Declared.UnauthorizedError;
  AuthEndpointError: typeof Declared.AuthEndpointError;
  backoff: typeof Declared.backoff;
} = { RpcError, UnauthorizedError, AuthEndpointError, backoff };
