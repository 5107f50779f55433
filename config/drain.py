"""The drain: what a server of `make serve` does between SIGTERM and its exit, so that a restart behind a
proxy loses no request (docs/deploy.md, "A rolling restart").

On SIGTERM each gunicorn worker (config/gunicorn.conf.py installs `drain_on_sigterm`, with gunicorn's
gthread workers):

1. is not ready from then on: `/readyz` answers 503 with `"stopping": true` (mintroute.readiness), so a
   load balancer that probes it stops sending it requests;
2. keeps serving for WEB_DRAIN_SECONDS, every answer with `Connection: close` (`close_while_draining`),
   so each kept-alive connection a proxy holds to it ends with its next request. nginx closes its idle
   ones itself: its upstream `keepalive_timeout` is shorter than the drain (and than gunicorn's keepalive);
3. then serves the connections already waiting on its listening sockets, closes them, so a new
   connection is refused (a proxy passes such a request to another server: nothing of it was sent), and
   stops as gunicorn stops a worker: the requests it holds finish within the graceful timeout.

gunicorn's master passes its SIGTERM on to every worker at once and waits for them for the drain plus
the graceful timeout (config/gunicorn.conf.py's `graceful_timeout`); config/serve.py stops the sandbox's
socket server once the drain is over. Nothing here loads Django: gunicorn's master imports this file.
"""

from __future__ import annotations

import select
import signal
import threading
from collections.abc import Mapping
from types import FrameType
from typing import Any

DEFAULT_DRAIN_SECONDS = 5.0
MAX_DRAIN_SECONDS = 300.0
DRAIN_REFUSAL = (
    f"WEB_DRAIN_SECONDS must be a number of seconds from 0 to {MAX_DRAIN_SECONDS:.0f}, such as 5: how long a "
    "stopping server keeps serving, /readyz answering 503, before it stops. Unset it for the default of 5 s."
)


def drain_seconds(environment: Mapping[str, str]) -> float:
    """WEB_DRAIN_SECONDS, or its default; ValueError (DRAIN_REFUSAL) when it is not a number in range."""
    written = environment.get("WEB_DRAIN_SECONDS") or ""
    if not written.strip():
        return DEFAULT_DRAIN_SECONDS
    try:
        seconds = float(written)
    except ValueError:
        raise ValueError(DRAIN_REFUSAL) from None
    if not 0 <= seconds <= MAX_DRAIN_SECONDS:  # NaN fails this too
        raise ValueError(DRAIN_REFUSAL)
    return seconds


def drain_on_sigterm(worker: Any, seconds: float) -> None:
    """Make a gthread worker's SIGTERM a drain of `seconds` (the module's docstring), in place of its
    stop at once. A second SIGTERM changes nothing; SIGINT and SIGQUIT still stop it at once."""
    from mintroute import readiness

    begun = threading.Event()

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        if begun.is_set():
            return
        begun.set()
        readiness.begin_stopping()
        worker.log.info("Draining: /readyz answers 503 and requests are served for %s s more, then it stops", seconds)
        # The stop runs on the worker's main loop, which owns the listeners (gunicorn's queue of calls for it).
        stop = threading.Timer(seconds, worker.method_queue.defer, args=(stop_accepting, worker))
        stop.daemon = True
        stop.start()

    signal.signal(signal.SIGTERM, on_sigterm)
    signal.siginterrupt(signal.SIGTERM, False)  # as gunicorn sets it: a request's system calls are not interrupted


def stop_accepting(worker: Any) -> None:
    """The drain's end, on the worker's main loop: the connections waiting on each listening socket are
    served, the sockets closed, and the worker stops as on gunicorn's own SIGTERM."""
    worker.set_accept_enabled(False)
    for listener in worker.sockets:
        try:
            while waiting(listener):  # a connection the kernel took is served, never reset by the close
                worker.accept(listener)
        except OSError as error:  # out of descriptors, say: what is left waiting is reset by the close
            worker.log.warning("Draining: could not take every waiting connection (%s)", error)
        listener.close()
    worker.alive = False


def waiting(listener: Any) -> bool:
    """Whether a connection waits to be accepted on `listener`."""
    poller = select.poll()
    poller.register(listener.fileno(), select.POLLIN)
    return bool(poller.poll(0))


def close_while_draining(request: Any) -> None:
    """gunicorn's `pre_request`: while the worker drains, the answer closes its connection."""
    from mintroute import readiness

    if readiness.stopping():
        request.must_close = True
