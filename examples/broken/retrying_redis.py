#!/usr/bin/python3
"""A lockpick client program that breaks the protocol's bounds the way redis-py 6 and later do
by default, for lockpick's own tests: examples/python-redis/lock_client.py, run unchanged, but
with redis-py 6's default retry policy set on Debian's 4.3 (which has none by default): a
timed-out command is retried 3 times, with exponential backoff and full jitter (base 1 s, cap
10 s). A request held by a stopped server then takes four socket timeouts and the backoffs
between them, past its bound, before the program answers `unknown`:

    lockpick protocol-check -- examples/broken/retrying_redis.py   # fails `acquire while stopped`
"""
import os
import runpy

import redis
from redis.backoff import FullJitterBackoff
from redis.retry import Retry


class RetryingRedis(redis.Redis):
    """redis.Redis with redis-py 6's defaults: `Retry(ExponentialWithJitterBackoff(base=1,
    cap=10), 3)` on connection errors and timeouts."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("retry", Retry(FullJitterBackoff(cap=10, base=1), 3))
        kwargs["retry_on_timeout"] = True
        super().__init__(*args, **kwargs)


redis.Redis = RetryingRedis
example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python-redis",
                       "lock_client.py")
runpy.run_path(example, run_name="__main__")
