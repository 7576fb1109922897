"""The floor of any server on asyncio over stdio: raw_loop.py's work, driven by an asyncio loop.

The same 64 KiB reads of stdin, lines split by hand, ``orjson.loads``, the hand-built replies of
``_raw_reply`` and one write per batch of replies as ``raw_loop.py``, but stdin is watched by an
asyncio event loop (``add_reader``), as a server on asyncio watches it.  What this costs beyond
``raw_loop.py`` is asyncio's own: above all importing it, which is most of the start-up (W4).
Measured in W4 and W2 only: a framework on asyncio cannot start faster than this, so the ratio
resourcekit ÷ this floor is the part of the start-up ratio to the raw limit that is resourcekit's.
Run: python benchmarks/servers/raw_asyncio.py   (BENCH_WORKLOAD selects the resources)
"""

import asyncio
import os

from raw_loop import answer


async def main():
    loop = asyncio.get_running_loop()
    closed = loop.create_future()
    rest = b""

    def readable():
        nonlocal rest
        block = os.read(0, 65536)
        if block:
            rest = answer(rest, block)
        else:
            loop.remove_reader(0)
            closed.set_result(None)

    loop.add_reader(0, readable)
    await closed


if __name__ == "__main__":
    asyncio.run(main())
