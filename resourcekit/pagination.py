"""Pure pagination: an append-ordered index with keyset cursors.

Items get increasing sequence numbers; a page is "the next ``limit`` live items
after sequence ``s``", found by bisection, so each page costs O(log n + page)
and a cursor stays valid when items are added or removed between pages.
Cursors are opaque to clients: ``kind:number[:number]`` and an HMAC of it under
a key made when the process starts, base64url-wrapped.  A cursor the server did
not issue (a forged offset, say) is refused with -32602 before it costs anything.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
from bisect import bisect_right
from collections.abc import Iterator
from typing import Generic, TypeVar

from .errors import InvalidParams

__all__ = ["SeqIndex", "decode_cursor", "encode_cursor", "set_cursor_key"]

T = TypeVar("T")


class SeqIndex(Generic[T]):
    """Items in insertion order, removable, pageable by sequence number.

    Writers (serialised by the caller) may run while ``page`` runs in other threads:
    the (seq, item) pairs live in one list that a writer only appends to, updates one
    slot of, or replaces whole, so a reader that took the list sees each pair whole.
    """

    __slots__ = ("_dead", "_entries")

    def __init__(self) -> None:
        self._entries: list[tuple[int, T | None]] = []
        self._dead = 0

    def append(self, seq: int, item: T) -> None:
        entries = self._entries
        if entries and seq <= entries[-1][0]:
            raise ValueError("sequence numbers must increase")
        entries.append((seq, item))

    def remove(self, seq: int) -> None:
        entries = self._entries
        i = bisect_right(entries, seq, key=_seq) - 1
        if i >= 0 and entries[i][0] == seq and entries[i][1] is not None:
            entries[i] = (seq, None)
            self._dead += 1
            if self._dead > 64 and self._dead * 2 > len(entries):
                self._entries = [e for e in entries if e[1] is not None]
                self._dead = 0

    def __len__(self) -> int:
        return len(self._entries) - self._dead

    def __iter__(self) -> Iterator[T]:
        return (x for _, x in self._entries if x is not None)

    def page(self, after: int, limit: int) -> tuple[list[tuple[int, T]], bool]:
        """Up to ``limit`` live (seq, item) pairs with seq > ``after``, and whether more follow."""
        entries = self._entries
        i, n = bisect_right(entries, after, key=_seq), len(entries)
        out: list[tuple[int, T]] = []
        while i < n:
            seq, item = entries[i]
            if item is not None:
                if len(out) == limit:
                    return out, True
                out.append((seq, item))
            i += 1
        return out, False


def _seq(entry: tuple[int, object]) -> int:
    return entry[0]


_KEY = os.urandom(32)
_TAG = 8  # bytes of HMAC-SHA256 kept: forging one is a 2**64 guess


def set_cursor_key(key: bytes) -> None:
    """Sign cursors with ``key``: workers that share it accept each other's cursors."""
    global _KEY
    _KEY = key


def _tag(raw: bytes) -> bytes:
    return hmac.digest(_KEY, raw, "sha256")[:_TAG]


def encode_cursor(kind: str, *numbers: int) -> str:
    raw = ":".join([kind, *map(str, numbers)]).encode()
    return base64.urlsafe_b64encode(raw + _tag(raw)).decode().rstrip("=")


def decode_cursor(cursor: object, kinds: tuple[str, ...]) -> tuple[str, list[int]]:
    """Parse a cursor from a client; InvalidParams (-32602) for anything we did not issue."""
    if not isinstance(cursor, str) or len(cursor) > 200:
        raise InvalidParams("Invalid cursor", {"cursor": cursor})
    try:
        signed = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        raw, tag = signed[:-_TAG], signed[-_TAG:]
        if len(signed) <= _TAG or not hmac.compare_digest(tag, _tag(raw)):
            raise ValueError("not ours")
        kind, *rest = raw.decode("ascii").split(":")
        numbers = [int(n) for n in rest]
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidParams("Invalid cursor", {"cursor": cursor}) from None
    if kind not in kinds or not numbers or any(n < 0 for n in numbers):
        raise InvalidParams("Invalid cursor", {"cursor": cursor})
    return kind, numbers
