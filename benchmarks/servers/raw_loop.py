"""The limit over stdio: what one Python process can do with orjson and nothing else.

Blocking reads of stdin in 64 KiB blocks, lines split by hand, ``orjson.loads``, an
if-chain dispatch and the reply dict built by hand (``_raw_reply``), and every batch of
replies (all the complete lines of one block) written with one ``os.write`` (``os.writev``
when big: no copy).  No asyncio, no task per request, no hashing: a framework cannot do less
and still answer.
Run: python benchmarks/servers/raw_loop.py   (BENCH_WORKLOAD selects the resources)
"""

import os

import orjson
from _raw_reply import reply


def write_all(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def write_batch(out):
    """One system call for the replies of a block: joined when small, gathered when big (no copy)."""
    if len(out) == 1:
        write_all(out[0])
    elif len(out) > 64 or sum(map(len, out)) < 65536:
        write_all(b"".join(out))
    else:
        done = os.writev(1, out)
        if done < sum(map(len, out)):  # a blocking pipe takes all unless a signal came: the rest
            write_all(b"".join(out)[done:])


def answer(rest, block, dumps=orjson.dumps, loads=orjson.loads, newline=orjson.OPT_APPEND_NEWLINE):
    """Answer the complete lines of ``rest + block`` with one write; what is left of a line."""
    lines = (rest + block).split(b"\n") if rest else block.split(b"\n")
    rest = lines.pop()
    out = []
    for line in lines:
        if line:
            msg = loads(line)
            if "id" in msg and "method" in msg:
                out.append(dumps(reply(msg), option=newline))
    if out:
        write_batch(out)
    return rest


def main():
    rest = b""
    while block := os.read(0, 65536):
        rest = answer(rest, block)


if __name__ == "__main__":
    main()
