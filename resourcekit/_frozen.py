"""Start-up's objects kept out of the cyclic GC: ``frozen_after``, for ``python -m resourcekit``
importing the CLI (``__main__``) and for loading the app (``_loader.load_app``).

What start-up makes (asyncio, resourcekit, the CLI, an app of 100,000 resources: thousands to
millions of objects) lives as long as the process; left to the cyclic GC it would be scanned again
and again while it is made (some dozens of collections: about 5 ms of a server's start-up, far
more for a large app).  So the GC is paused while it is made, and what was made is frozen
(``gc.freeze``: never scanned again) before the GC resumes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["frozen_after"]


@contextmanager
def frozen_after() -> Iterator[None]:
    """Run the block with the cyclic GC paused, then freeze what exists; the GC runs again after
    if it ran before (a host that turned it off keeps it off)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()
