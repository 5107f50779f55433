"""Gunicorn's settings for the site's HTTP (`make serve` passes this file; docs/deploy.md says why).

Everything comes from the environment: `HOST` (127.0.0.1:8000), `WEB_CONCURRENCY` (one worker
process per core), `WEB_THREADS` (threads per worker), `WEB_DRAIN_SECONDS` (the drain on SIGTERM, 5 s:
config/drain.py), `FORWARDED_ALLOW_IPS` (the proxies in front: config/serve.py sets it from
SPORTS_TRUSTED_PROXIES, the list the site's limits believe).
With metrics on, config/serve.py sets PROMETHEUS_MULTIPROC_DIR, and `child_exit` folds a dead
worker's files into the folder's archives (prometheus_client's multiprocess mode).
"""

import math
import os
from pathlib import Path

from config.drain import close_while_draining, drain_on_sigterm, drain_seconds

wsgi_app = "config.wsgi:application"
bind = [os.environ.get("HOST") or "127.0.0.1:8000"]
workers = int(os.environ.get("WEB_CONCURRENCY") or os.cpu_count() or 1)
worker_class = "gthread"
# A mint waits on the service for up to SPORTS_TIMEOUT seconds, holding its thread but no CPU.
# Threads are cheap while they wait: enough of them that a slow service, with every waiting
# request landing on one worker, still leaves threads for /healthz and the pages (docs/deploy.md).
threads = int(os.environ.get("WEB_THREADS") or 100)
# Bounded waits: a worker silent for 30 s is restarted; a stop drains (config/drain.py), then gives
# requests 10 s to finish.
timeout = 30
drain = drain_seconds(os.environ)
graceful_timeout = math.ceil(drain) + 10  # gunicorn takes whole seconds
# Longer than the proxy's upstream keep-alive (docs/deploy.md's nginx: 4 s): the proxy closes an idle
# connection first, so it never sends a request on one that gunicorn is closing.
keepalive = 5
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS") or "127.0.0.1"
# The site writes one access line per request, with its id, in the site's log format (the logger
# mintroute.access, docs/operations.md): gunicorn's own access log would be a second line without them.
accesslog = None
errorlog = "-"
# Gunicorn 27's control socket lives at one fixed path per user: two sites on one machine (or the
# benchmark's side-by-side servers) would fight over it, and nothing here uses it.
control_socket_disable = True


def post_worker_init(worker: object) -> None:
    """Import the URLconf, and with it every view, before the worker takes its first request: a
    cold import holds Python's import lock, and every request of the worker would wait on it. Then
    make its SIGTERM a drain."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - the property imports the URLconf
    drain_on_sigterm(worker, drain)


def pre_request(worker: object, request: object) -> None:
    """While the worker drains, each answer closes its connection (config/drain.py)."""
    close_while_draining(request)


def child_exit(server: object, worker: object) -> None:
    """A worker exited (stopped, restarted or killed): its counts are added into the metrics folder's
    archives and its files go (mintroute/metrics_folder.py), so the folder holds only the live workers'
    files however often they restart. A failure is logged, never raised: it would stop the master."""
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if folder:
        from mintroute.metrics_folder import fold_dead_worker

        try:
            fold_dead_worker(worker.pid, Path(folder))  # type: ignore[attr-defined]
        except Exception:
            server.log.exception("Could not fold the dead worker %s's metrics files", worker.pid)  # type: ignore[attr-defined]
