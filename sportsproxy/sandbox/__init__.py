"""An embedded stand-in for the Sports Data Service.

The real service is not reachable from a developer's laptop or from CI, so this app
implements its authentication, token-minting and request-envelope interface in-process.
`manage.py runserver`, every test and every benchmark talk to it instead.

Faithful to the service (docs/service.md describes it):
  * the JSON-RPC 2.0 envelope and every error code, HTTP status 200 for every envelope;
  * API keys (`sk_live_`/`sk_test_`, stored as hashes, active -> revoked, revocation
    effective on the next request) and HS256 JWTs with pinned algorithm and required claims;
  * one requests-per-minute quota per account, shared by its keys and their tokens;
  * `tokens.create`, `auth` and `matches.list` with its filters and cursor pagination.

Simplified: match data is generated deterministically (live and test sets), the
"dashboard" is the Django admin, and quotas live in the Django cache.

To extend it, write a method in `methods.py` and register it in `METHODS`; the HTTP
view, the WebSocket consumer and the in-process SDK transport all reach it through
`dispatch.py`, the one place that turns a request into a response envelope.
"""
