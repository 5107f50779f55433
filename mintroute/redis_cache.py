"""Django's Redis cache, counting in one round trip: the cache the route's rate limits count in.

django-ratelimit counts a request with an `add` (the window's first request) and, when the key was
there, an `incr`; on Django's RedisCache that is three round trips to Redis (SET NX, then EXISTS and
INCRBY), each through a redis-py client object built for that one operation. On the route's hot path
every answer counts per user and, in "login" mode, per client IP: most of what an answer costs.

`RedisCache` here is Django's, its keys and values written as Django writes them, with these changes:

- An `add` of a whole number to one of django-ratelimit's keys (RATELIMIT_CACHE_PREFIX, "rl:") is
  "add, or else count": one script sets the key if it is absent, else adds the number to it, and
  keeps the count for the `incr` (or, for an add of 0, the `get`) that django-ratelimit sends next
  for the same key in the same thread, which then answers without a round trip. Any other operation
  in between forgets the kept count. What Redis holds and what django-ratelimit reads are as with
  Django's cache; a counted request is one round trip.
- `counted_with(counting, reads)` runs a function that counts through django-ratelimit (its
  `get_usage` calls) with all of its counts, and the keys in `reads`, in one round trip: the function
  runs once to learn what it would send (nothing is sent: each `add` answers "added"), the counts and
  reads go to Redis as one script, and the function runs again, answered from what came back. A count
  the second run makes that the first did not (its window turned in between) goes to Redis on its own.
- `incr` (and so `decr`) is one round trip: a script that adds to the key only if it exists
  (ValueError otherwise, as Django's).
- One redis-py client per connection pool, not one per operation.

Failures are Django's: a Redis that refuses or stops answering raises (within OPTIONS' socket
timeouts), and the route answers 503. `CountingInOneRoundTrip` is the mixin, for a subclass of
Django's RedisCache of a site's own (a Sentinel-aware one, say).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.utils.functional import cached_property

Result = TypeVar("Result")

DEFAULT_RATELIMIT_PREFIX = "rl:"  # django-ratelimit's RATELIMIT_CACHE_PREFIX default

# KEYS: the counters, then the keys to read; ARGV: the number of counters, then each counter's number
# and seconds. Each counter: set if absent ({1, number}), else added to ({0, count}); each read: its value.
_COUNT_AND_READ = """
local counters = tonumber(ARGV[1])
local answer = {}
for i = 1, counters do
  local number, seconds = ARGV[2 * i], ARGV[2 * i + 1]
  if redis.call('SET', KEYS[i], number, 'NX', 'EX', seconds) then
    answer[i] = {1, tonumber(number)}
  else
    answer[i] = {0, redis.call('INCRBY', KEYS[i], number)}
  end
end
for i = counters + 1, #KEYS do
  answer[i] = redis.call('GET', KEYS[i])
end
return answer
"""
# Add to the key only if it exists (nil otherwise: Django's incr raises ValueError).
_INCR_EXISTING = """
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCRBY', KEYS[1], ARGV[1]) end
return false
"""


class CountingInOneRoundTrip:
    """Mixin for Django's RedisCache (and its subclasses): see the module's docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # This thread's: the count its last add kept; the counts a first run recorded; their answers.
        self._counting = threading.local()

    @cached_property
    def _cache(self) -> Any:
        client = super()._cache  # type: ignore[misc]
        _one_redis_client_per_pool(client)
        return client

    @cached_property
    def _scripts(self) -> tuple[Any, Any]:
        redis = self._cache.get_client(write=True)
        return redis.register_script(_COUNT_AND_READ), redis.register_script(_INCR_EXISTING)

    def counted_with(self, counting: Callable[[], Result], reads: Sequence[str] = ()) -> tuple[Result, dict[str, Any]]:
        """`counting()`'s result, its counts made in one round trip with the reads of the keys in `reads`;
        and what those keys hold (only the keys that hold something)."""
        state = self._counting
        state.recorded = []
        try:
            counting()
        finally:
            recorded: list[tuple[str, int, int]] = state.recorded
            state.recorded = None
        read_keys = [self.make_and_validate_key(key) for key in reads]
        if not recorded and not read_keys:
            return counting(), {}
        answer = self._count_and_read(recorded, read_keys)
        state.answers = {}
        for (made, _, _), (added, count) in zip(recorded, answer, strict=False):
            state.answers.setdefault(made, []).append((added == 1, int(count)))
        try:
            result = counting()
        finally:
            state.answers = None
        serializer = self._cache._serializer
        values = answer[len(recorded) :]
        return result, {key: serializer.loads(raw) for key, raw in zip(reads, values, strict=True) if raw is not None}

    def validate_key(self, key: Any) -> None:
        """Redis takes any key: no warnings about keys memcached would refuse (Django's advice for such a backend)."""

    def make_and_validate_key(self, key: Any, version: int | None = None) -> str:
        self._counting.kept = None  # any operation ends what the last add kept
        made: str = super().make_and_validate_key(key, version=version)  # type: ignore[misc]
        return made

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        seconds = self.get_backend_timeout(timeout)  # type: ignore[attr-defined]
        if type(value) is not int or not seconds or not _counter(key):
            added: bool = super().add(key, value, timeout, version)  # type: ignore[misc]
            return added
        made = self.make_and_validate_key(key, version=version)
        state = self._counting
        if getattr(state, "recorded", None) is not None:  # counted_with's first run: note it, send nothing
            state.recorded.append((made, value, seconds))
            return True
        answers = getattr(state, "answers", None)
        if answers and answers.get(made):
            was_added, count = answers[made].pop(0)
        else:
            [(was_added, count)] = self._count_and_read([(made, value, seconds)], [])
        if was_added:
            return True
        state.kept = (made, value, int(count))
        return False

    def incr(self, key: Any, delta: int = 1, version: int | None = None) -> int:
        kept = self._take_kept()
        made = self.make_and_validate_key(key, version=version)
        if kept is not None and kept[0] == made and kept[1] == delta:
            return kept[2]
        incr_existing = self._scripts[1]
        count = incr_existing(keys=[made], args=[delta], client=self._cache.get_client(made, write=True))
        if count is None:
            raise ValueError(f"Key '{made}' not found.")
        return int(count)

    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        kept = self._take_kept()
        if kept is not None and kept[1] == 0:  # django-ratelimit reads the count it did not add to
            made = self.make_and_validate_key(key, version=version)
            return kept[2] if kept[0] == made else self._cache.get(made, default)
        return super().get(key, default, version)  # type: ignore[misc]

    def clear(self) -> Any:
        self._counting.kept = None
        return super().clear()  # type: ignore[misc]

    def _take_kept(self) -> tuple[str, int, int] | None:
        kept: tuple[str, int, int] | None = getattr(self._counting, "kept", None)
        self._counting.kept = None
        return kept

    def _count_and_read(self, counters: list[tuple[str, int, int]], reads: list[str]) -> list[Any]:
        """One round trip: each counter (key, number, seconds) set or added to, each key of `reads` read."""
        keys = [made for made, _, _ in counters] + reads
        arguments: list[int] = [len(counters)]
        for _, number, seconds in counters:
            arguments += [number, seconds]
        count_and_read = self._scripts[0]
        answer: list[Any] = count_and_read(keys=keys, args=arguments, client=self._cache.get_client(write=True))
        return answer


class RedisCache(CountingInOneRoundTrip, DjangoRedisCache):
    """Django's RedisCache, counting in one round trip (`BACKEND: "mintroute.redis_cache.RedisCache"`)."""


def _counter(key: Any) -> bool:
    """Whether `key` is one of django-ratelimit's counters."""
    prefix = getattr(settings, "RATELIMIT_CACHE_PREFIX", DEFAULT_RATELIMIT_PREFIX)
    return isinstance(key, str) and bool(prefix) and key.startswith(prefix)


def _one_redis_client_per_pool(client: Any) -> None:
    """Make Django's cache client reuse one redis-py client per connection pool (they are thread-safe):
    building one costs more than the command it sends."""
    build = client._client
    built: dict[int, Any] = {}
    lock = threading.Lock()

    def one_per_pool(connection_pool: Any, **options: Any) -> Any:
        if options:
            return build(connection_pool=connection_pool, **options)
        found = built.get(id(connection_pool))
        if found is None or found.connection_pool is not connection_pool:
            with lock:
                found = built[id(connection_pool)] = build(connection_pool=connection_pool)
        return found

    client._client = one_per_pool
