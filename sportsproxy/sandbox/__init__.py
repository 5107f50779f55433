"""An embedded stand-in for the Sports Data Service (a Django app, not part of the SDK).

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

The map. The app's own modules hold what every part shares: `conf` (settings and the service's
fixed facts), `clock` (the swappable "now"), `errors` (the service's error codes), `models` (accounts
and keys) and `checks`; `apps`, `admin`, `urls`, `routing`, `management/` and `__main__` plug the
parts into Django. The parts, each a sub-package:

    accounts/     who is calling and what they may spend: keys, tokens, credentials, caller,
                  the requests-per-minute quota and the socket slots (counters in the cache)
    matches/      the data: the book of matches and the simulation that changes it
    rpc/          the JSON-RPC side: envelope, params, the method table, the one dispatcher,
                  the HTTP view and the in-process httpx2 transport
    realtime/     the socket side: the consumer, one socket's session, and the per-process
                  tasks (moments, fan-out, event publisher, slot heartbeat, revocation)
    standalone/   the sandbox served alone, with its control endpoints

The arrows point one way: rpc uses accounts and matches; realtime uses rpc, accounts and
matches; accounts and matches use only the app's shared modules (tests/test_architecture.py).

To extend it, write a method in `rpc/methods.py` and register it in `METHODS`; the HTTP
view, the WebSocket consumer and the in-process SDK transport all reach it through
`rpc/dispatch.py`, the one place that turns a request into a response envelope.
"""
