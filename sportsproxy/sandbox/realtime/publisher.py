"""The match events reaching sockets: one job per process publishes the simulation's due events
while any of its sockets is open, each to the group of its environment and sport (see fanout.py)."""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from sportsproxy.sandbox import conf
from sportsproxy.sandbox.matches import simulation
from sportsproxy.sandbox.realtime import fanout
from sportsproxy.sandbox.realtime.loop_tasks import SocketJob


async def publish_due() -> int:
    """Publish every due event to its environment's group; returns how many were sent."""
    due = await sync_to_async(simulation.due_events)()
    layer = get_channel_layer()
    if layer is None:
        raise RuntimeError("No channel layer: set CHANNEL_LAYERS (config/settings.py does).")
    sent = 0
    for env, events in due.items():
        for event in events:
            sport = event.match["sport"]
            message = fanout.event_message(env, event.kind, json.dumps(event.match), sport)
            await layer.group_send(message["group"], message)
            sent += 1
    return sent


# With SPORTS_SANDBOX_EVENTS=0 another process publishes the events.
job = SocketJob("event publisher", publish_due, enabled=conf.publishes_events)
