"""The event fan-out of one process: one channel-layer membership per group, sockets in memory.

Events are published to a group per environment and sport (`sandbox-matches-test-football`),
with the match serialized once by the publisher. Each process joins a group once, with a channel
of its own, while any of its sockets wants that sport. The layer so carries one message per
process per event rather than one per socket, and the process hands the event to its sockets
in memory. Nobody receives a sport it would filter away.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any, Protocol

from channels.layers import BaseChannelLayer, get_channel_layer

from sportsproxy.service import MATCH_EVENT

logger = logging.getLogger(__name__)

RETRY_AFTER_LAYER_ERROR_SECONDS = 1.0
YIELD_EVERY = 50  # sockets handed an event between two turns of the event loop


def group_name(env: str, sport: str) -> str:
    return f"sandbox-matches-{env}-{sport}"


def event_message(env: str, kind: str, match_json: str, sport: str) -> dict[str, Any]:
    """What the publisher sends to the group: the match already serialized, once."""
    return {"type": "match.event", "group": group_name(env, sport), "kind": kind, "sport": sport, "match": match_json}


def frame_tail(kind: str, match_json: str) -> str:
    """The part of an event's frame every subscription shares: built once per event."""
    return f',"kind":"{kind}","match":{match_json}}}}}'


def event_frame(subscription_id: str, tail: str) -> str:
    """One subscription's `matches.event` frame (ids are `sub_<hex>`: nothing to escape)."""
    return f'{{"jsonrpc":"2.0","method":"{MATCH_EVENT}","params":{{"subscriptionId":"{subscription_id}"{tail}'


class Listener(Protocol):
    def deliver(self, sport: str, tail: str) -> None:
        """Queue the event for the socket's subscriptions that take `sport`; must not block."""


class Hub:
    """The groups this process is in, and which of its sockets listen to each."""

    def __init__(self, layer: BaseChannelLayer) -> None:
        self._layer = layer
        self._listeners: defaultdict[str, set[Listener]] = defaultdict(set)
        self._channel: str | None = None
        self._reader: asyncio.Task[None] | None = None
        self.loop = asyncio.get_running_loop()

    async def join(self, group: str, listener: Listener) -> None:
        first = not self._listeners[group]
        self._listeners[group].add(listener)
        if first:
            await self._layer.group_add(group, await self._own_channel())

    async def leave(self, group: str, listener: Listener) -> None:
        listeners = self._listeners.get(group)
        if listeners is None or listener not in listeners:
            return
        listeners.discard(listener)
        if not listeners:
            del self._listeners[group]
            if self._channel is not None:
                await self._layer.group_discard(group, self._channel)

    def memberships(self) -> dict[str, int]:
        """Listeners per group (for tests and the benchmark)."""
        return {group: len(listeners) for group, listeners in self._listeners.items()}

    async def _own_channel(self) -> str:
        if self._channel is None:
            self._channel = await self._layer.new_channel()
            self._reader = self.loop.create_task(self._read(self._channel))
        return self._channel

    async def _read(self, channel: str) -> None:
        while True:
            try:
                message = await self._layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("The channel layer failed a receive; trying again")
                await asyncio.sleep(RETRY_AFTER_LAYER_ERROR_SECONDS)
                continue
            tail = frame_tail(message["kind"], message["match"])
            for index, listener in enumerate(list(self._listeners.get(message.get("group", ""), ()))):
                listener.deliver(message["sport"], tail)
                if index % YIELD_EVERY == YIELD_EVERY - 1:
                    await asyncio.sleep(0)  # let the first sockets' writers send while the rest queue


_hub: Hub | None = None


def memberships() -> dict[str, int]:
    """Listeners per group in this process's hub (for tests and the benchmark)."""
    return {} if _hub is None else _hub.memberships()


def hub() -> Hub:
    """This process's hub (one per event loop: tests run several loops one after another)."""
    global _hub
    if _hub is None or _hub.loop is not asyncio.get_running_loop():
        layer = get_channel_layer()
        if layer is None:
            raise RuntimeError("No channel layer: set CHANNEL_LAYERS (config/settings.py does).")
        _hub = Hub(layer)
    return _hub
