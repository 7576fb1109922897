"""What every benchmark server serves, so that the four servers serve the same bytes.

Imported by the server files in this folder (each runs with this folder on sys.path).
BENCH_WORKLOAD picks the resources:

  small      one text resource bench://small -> "hello world"          (W1, W4)
  small-async  the same, its handler an ``async def`` (resourcekit; the raw servers have none)  (W1a, W5a)
  templates  1,000 templates tpl{i}://item/{id}                          (W3)
  list10k    10,000 static resources bench://r{i}                        (W2)
  list100k   100,000 static resources bench://r{i}                       (W2)
  big        one 1 MiB text resource bench://big                         (W6)
"""

from __future__ import annotations

import os

WORKLOAD = os.environ.get("BENCH_WORKLOAD", "small")
SMALL_URI = "bench://small"
SMALL_TEXT = "hello world"
BIG_URI = "bench://big"
N_TEMPLATES = 1000
LIST_SIZES = {"list10k": 10_000, "list100k": 100_000}


def big_text() -> str:
    """1 MiB of printable ASCII that needs no JSON escaping."""
    line = "The quick brown fox jumps over the lazy dog 0123456789 abcdefghijklmnopqrstuvwxyz.\n"
    # '\n' is escaped in JSON, which is fine: every server escapes the same bytes
    n = 1024 * 1024
    return (line * (n // len(line) + 1))[:n]


_BIG_BYTES = big_text().encode() if WORKLOAD == "big" else b""


def read_big() -> str:
    """``big_text()`` as a new ``str`` on every call, decoded from bytes as a file-backed
    resource's handler makes it: a server cannot tell by identity that it served it before."""
    return _BIG_BYTES.decode()


def list_size() -> int:
    return LIST_SIZES.get(WORKLOAD, 0)


def template_uri(i: int) -> str:
    """RFC 6570 template of template number i."""
    return f"tpl{i}://item/{{id}}"


def static_uri(i: int) -> str:
    return f"bench://r{i}"


def static_text(i: int) -> str:
    return f"resource {i}"


def item_text(i: int, id: str) -> str:
    return f"item {id} of template {i}"
