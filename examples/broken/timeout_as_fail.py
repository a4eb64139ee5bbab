#!/usr/bin/python3
"""A lockpick client program that answers `fail` where the protocol asks for `unknown`, for
lockpick's own tests: examples/python-redis/lock_client.py, run unchanged, but with redis-py's
LockError widened to every RedisError, so that a timed-out command (which the server may still
apply) is answered as a certain refusal:

    lockpick protocol-check -- examples/broken/timeout_as_fail.py   # fails `acquire while stopped`
"""
import os
import runpy

import redis.exceptions

redis.exceptions.LockError = redis.exceptions.RedisError
example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python-redis",
                       "lock_client.py")
runpy.run_path(example, run_name="__main__")
