"""The sandbox served alone: `python -m sportsproxy.sandbox serve`.

A test double for integrators: the service's HTTP and WebSocket endpoints on one address, with
its own settings, URLs and SQLite database, and nothing of the project that ships it. Installed
by the `sandbox` extra; `sportsproxy.testing` (the pytest plugin) starts it for a test session.

    data.py       where the server keeps its database and signing key (a temporary folder or --data,
                  which must be its user's alone), its files private from their first byte
    settings.py   the Django settings it runs with
    dashboard.py  the dashboard's powers: create a key, revoke it, set a quota, end a token
    control.py    those powers over HTTP, for the test process (only with a control secret)
    urls.py, asgi.py   the routes and the ASGI application
    server.py     start-up: migrate, the first key, uvicorn on a socket bound here, the ready line
"""

SETTINGS_MODULE = "sportsproxy.sandbox.standalone.settings"
# The secret that mounts and guards the control endpoints; the starting process sets it.
CONTROL_SECRET_VARIABLE = "SPORTS_SANDBOX_CONTROL_SECRET"  # noqa: S105 - the name of a variable, not a secret
