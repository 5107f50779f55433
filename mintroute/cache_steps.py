"""Compare-then-act on the shared cache, as one step: site mode's lock and token (mintroute.sharing).

Django's cache API has no compare-and-set, and a get followed by a delete, a touch or a set lets a
holder that was paused between the two (swapped out, stopped) act on what another holder now owns. On
Django's Redis cache each operation here is one Lua script, so Redis runs it whole. Any other cache
gets the same rules under a lock of this process: atomic within the process, which is all a per-process
cache has (a site in "site" mode shares a Redis: mintroute.E011).

Every key is the cache's own (its KEY_PREFIX and version), and values are written as the cache writes
them, so `cache.get` reads what these write.
"""

from __future__ import annotations

import threading
from typing import Any

from django.core.cache import BaseCache
from django.core.cache.backends.redis import RedisCache

_DELETE_IF = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_EXTEND_IF = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_SET_IF_LATER = """
local held = tonumber(redis.call('GET', KEYS[2]))
if held ~= nil and held >= tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return 1
"""

_local = threading.Lock()  # the same rules for a cache that is not Redis, within this process


def delete_if(cache: BaseCache, key: str, value: Any) -> bool:
    """Delete `key` if it holds `value` (compare-and-delete); True when deleted."""
    if isinstance(cache, RedisCache):
        return bool(_script(cache, _DELETE_IF, [key], [_dumped(cache, value)]))
    with _local:
        if cache.get(key) != value:
            return False
        cache.delete(key)
        return True


def extend_if(cache: BaseCache, key: str, value: Any, seconds: float) -> bool:
    """Give `key` `seconds` more life if it holds `value` (compare-and-extend); True when extended."""
    if isinstance(cache, RedisCache):
        return bool(_script(cache, _EXTEND_IF, [key], [_dumped(cache, value), int(seconds * 1000)]))
    with _local:
        return cache.get(key) == value and cache.touch(key, seconds)


def set_if_later(cache: BaseCache, key: str, value: Any, order: int, seconds: float) -> bool:
    """Set `key` to `value` for `seconds` unless what it holds came with an `order` at least as large
    (kept beside it, under `key`:order); True when set. A value never replaces a later one."""
    order_key = f"{key}:order"
    if isinstance(cache, RedisCache):
        milliseconds = max(1, int(seconds * 1000))
        return bool(_script(cache, _SET_IF_LATER, [key, order_key], [_dumped(cache, value), order, milliseconds]))
    with _local:
        held = cache.get(order_key)
        if isinstance(held, int) and held >= order:
            return False
        cache.set_many({key: value, order_key: order}, seconds)
        return True


def _script(cache: RedisCache, source: str, keys: list[str], arguments: list[Any]) -> Any:
    full_keys = [cache.make_and_validate_key(key) for key in keys]
    # Django's RedisCache keeps its redis-py client behind `_cache` (django/core/cache/backends/redis.py).
    client = cache._cache.get_client(full_keys[0], write=True)  # type: ignore[attr-defined]
    return client.eval(source, len(full_keys), *full_keys, *arguments)


def _dumped(cache: RedisCache, value: Any) -> Any:
    """`value` as Django's Redis cache stores it (an int as itself, anything else pickled)."""
    return cache._cache._serializer.dumps(value)  # type: ignore[attr-defined]
