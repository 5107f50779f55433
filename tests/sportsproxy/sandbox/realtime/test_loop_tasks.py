"""The per-process jobs that run while sockets are open (the event publisher, the slot heartbeat):
one task however many sockets, ended by the last close, restarted by the next open, never stopped
by a failing step."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from config.asgi import application
from sportsproxy.sandbox.realtime import consumers, heartbeat, publisher
from sportsproxy.sandbox.realtime.loop_tasks import SocketJob

WAIT = 5  # seconds any one wait may take before the test fails


class Steps:
    """A job's step that counts its calls and raises on the ones listed in `failing`."""

    def __init__(self, failing: tuple[int, ...] = ()) -> None:
        self.calls = 0
        self.failing = failing

    async def __call__(self) -> None:
        self.calls += 1
        if self.calls in self.failing:
            raise RuntimeError(f"step {self.calls} fails on purpose")

    async def reach(self, calls: int) -> None:
        """Wait (bounded) until the job has stepped `calls` times."""

        async def stepped() -> None:
            while self.calls < calls:
                await asyncio.sleep(0.005)

        await asyncio.wait_for(stepped(), WAIT)


@pytest.fixture(autouse=True)
def quick_ticks(settings: Any) -> None:
    settings.SPORTS_SANDBOX_WS_TICK = 0.01


async def test_one_task_steps_while_any_socket_is_open_and_ends_after_the_last_closes() -> None:
    steps = Steps()
    job = SocketJob("test job", steps)
    assert job.task is None
    for _ in range(100):
        job.socket_opened()
    task = job.task
    assert task is not None
    await steps.reach(3)
    for _ in range(99):
        job.socket_closed()
    await steps.reach(steps.calls + 2)  # one socket left: still stepping
    assert job.task is task
    assert not task.done()
    job.socket_closed()
    await asyncio.wait_for(task, WAIT)
    calls = steps.calls
    job.socket_closed()  # a close too many counts nothing below zero
    assert job.sockets == 0
    job.socket_opened()
    assert job.task is not task  # the next open starts a new task
    await steps.reach(calls + 1)
    job.socket_closed()
    assert job.task is not None
    await asyncio.wait_for(job.task, WAIT)


async def test_a_failing_step_is_logged_and_the_next_tick_steps_again(caplog: pytest.LogCaptureFixture) -> None:
    steps = Steps(failing=(1, 2))
    job = SocketJob("test job", steps)
    with caplog.at_level(logging.ERROR, logger="sportsproxy.sandbox.realtime.loop_tasks"):
        job.socket_opened()
        await steps.reach(3)
        job.socket_closed()
        assert job.task is not None
        await asyncio.wait_for(job.task, WAIT)
    failures = [record for record in caplog.records if "test job failed a step" in record.getMessage()]
    assert len(failures) == 2
    assert all(record.exc_info is not None for record in failures)


async def test_a_disabled_job_counts_sockets_but_starts_no_task() -> None:
    enabled = False
    steps = Steps()
    job = SocketJob("test job", steps, enabled=lambda: enabled)
    job.socket_opened()
    assert job.task is None
    enabled = True  # the count was kept: the next socket starts the job, and it runs for both
    job.socket_opened()
    job.socket_closed()
    await steps.reach(2)
    assert job.task is not None
    assert not job.task.done()
    job.socket_closed()
    await asyncio.wait_for(job.task, WAIT)


def test_each_event_loop_gets_a_task_of_its_own() -> None:
    steps = Steps()
    job = SocketJob("test job", steps)

    async def one_socket_for_two_steps() -> asyncio.Task[None]:
        job.socket_opened()
        await steps.reach(steps.calls + 2)
        job.socket_closed()
        assert job.task is not None
        await asyncio.wait_for(job.task, WAIT)
        return job.task

    first = asyncio.run(one_socket_for_two_steps())
    second = asyncio.run(one_socket_for_two_steps())
    assert first is not second


async def test_the_consumer_counts_its_sockets_into_the_publisher_and_the_heartbeat() -> None:
    assert {publisher.job, heartbeat.job} == set(consumers.JOBS)
    before = [job.sockets for job in consumers.JOBS]  # other tests' sockets may still be counted
    sockets = [WebsocketCommunicator(application, "/sdk/v1/ws") for _ in range(2)]
    for socket in sockets:
        connected, _ = await socket.connect()
        assert connected
    assert [job.sockets for job in consumers.JOBS] == [count + 2 for count in before]
    for job in consumers.JOBS:
        assert job.task is not None
        assert not job.task.done()
        assert job.task.get_loop() is asyncio.get_running_loop()
    for socket in sockets:
        await socket.disconnect()
    assert [job.sockets for job in consumers.JOBS] == before


async def test_with_events_off_the_publisher_starts_no_task(settings: Any) -> None:
    settings.SPORTS_SANDBOX_EVENTS = False  # another process publishes
    before = publisher.job.task
    socket = WebsocketCommunicator(application, "/sdk/v1/ws")
    connected, _ = await socket.connect()
    assert connected
    assert publisher.job.task is before
    assert heartbeat.job.task is not None
    assert heartbeat.job.task.get_loop() is asyncio.get_running_loop()
    await socket.disconnect()
