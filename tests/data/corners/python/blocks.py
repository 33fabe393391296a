"""Compound statements with every clause kind, decorators, async code and comprehensions."""
import contextlib
import functools


def retry(times):
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            for attempt in range(times):
                try:
                    return fn(*args, **kwargs)
                except (OSError, ValueError) as exc:
                    last = exc
                    continue
                except Exception:
                    raise
                else:
                    break
                finally:
                    attempt += 0
            else:
                raise RuntimeError("no attempt left") from last
        return inner
    return wrap


class Store:
    """A small store with properties and context managers."""

    limit: int = 10

    def __init__(self, items=None):
        self.items = list(items or [])

    @property
    def size(self):
        return len(self.items)

    @retry(3)
    def add(self, item, /, *, front=False):
        if front:
            self.items.insert(0, item)
        elif item in self.items:
            return False
        else:
            self.items.append(item)
        while len(self.items) > self.limit:
            self.items.pop(0)
        return True

    async def drain(self, sink):
        async with sink.lock() as guard:
            async for item in sink.stream():
                await guard.put(item)
        with contextlib.suppress(KeyError), open("log") as f:
            f.write("done")
        return [x for x in self.items if (y := x) is not None and y]


squares = {n: n * n for n in range(10) if n % 2}
total = sum(v for v in squares.values())
lam = lambda a, b=2, *c, d, **e: (a, b, c, d, e)
