"""Pure pagination: an append-ordered index with keyset cursors.

Items get increasing sequence numbers; a page is "the next ``limit`` live items
after sequence ``s``", found by bisection, so each page costs O(log n + page)
and a cursor stays valid when items are added or removed between pages.
Cursors are opaque to clients but are plain ``kind:number[:number]`` inside,
base64url-wrapped.
"""

from __future__ import annotations

import base64
import binascii
from bisect import bisect_right
from collections.abc import Iterator
from typing import Generic, TypeVar

from .errors import InvalidParams

__all__ = ["SeqIndex", "decode_cursor", "encode_cursor"]

T = TypeVar("T")


class SeqIndex(Generic[T]):
    """Items in insertion order, removable, pageable by sequence number."""

    __slots__ = ("_dead", "_items", "_seqs")

    def __init__(self) -> None:
        self._seqs: list[int] = []
        self._items: list[T | None] = []
        self._dead = 0

    def append(self, seq: int, item: T) -> None:
        if self._seqs and seq <= self._seqs[-1]:
            raise ValueError("sequence numbers must increase")
        self._seqs.append(seq)
        self._items.append(item)

    def remove(self, seq: int) -> None:
        i = bisect_right(self._seqs, seq) - 1
        if i >= 0 and self._seqs[i] == seq and self._items[i] is not None:
            self._items[i] = None
            self._dead += 1
            if self._dead > 64 and self._dead * 2 > len(self._seqs):
                self._compact()

    def _compact(self) -> None:
        live = [(s, x) for s, x in zip(self._seqs, self._items, strict=True) if x is not None]
        self._seqs = [s for s, _ in live]
        self._items = [x for _, x in live]
        self._dead = 0

    def __len__(self) -> int:
        return len(self._seqs) - self._dead

    def __iter__(self) -> Iterator[T]:
        return (x for x in self._items if x is not None)

    def page(self, after: int, limit: int) -> tuple[list[tuple[int, T]], bool]:
        """Up to ``limit`` live (seq, item) pairs with seq > ``after``, and whether more follow."""
        i = bisect_right(self._seqs, after)
        out: list[tuple[int, T]] = []
        seqs, items, n = self._seqs, self._items, len(self._seqs)
        while i < n:
            item = items[i]
            if item is not None:
                if len(out) == limit:
                    return out, True
                out.append((seqs[i], item))
            i += 1
        return out, False


def encode_cursor(kind: str, *numbers: int) -> str:
    raw = ":".join([kind, *map(str, numbers)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: object, kinds: tuple[str, ...]) -> tuple[str, list[int]]:
    """Parse a cursor from a client; InvalidParams (-32602) for anything not ours."""
    if not isinstance(cursor, str) or len(cursor) > 200:
        raise InvalidParams("Invalid cursor", {"cursor": cursor})
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        kind, *rest = raw.split(":")
        numbers = [int(n) for n in rest]
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidParams("Invalid cursor", {"cursor": cursor}) from None
    if kind not in kinds or not numbers or any(n < 0 for n in numbers):
        raise InvalidParams("Invalid cursor", {"cursor": cursor})
    return kind, numbers
