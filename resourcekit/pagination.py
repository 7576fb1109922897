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
import os
from bisect import bisect_right
from collections.abc import Iterator
from typing import Generic, TypeVar, cast

from .errors import InvalidParams

__all__ = ["SeqIndex", "decode_cursor", "encode_cursor", "set_cursor_key"]

T = TypeVar("T")


class SeqIndex(Generic[T]):
    """Items in insertion order, removable, pageable by sequence number.

    Writers (serialised by the caller) may run while ``page`` runs in other threads.
    Sequence numbers and items live in two parallel lists (16 bytes an item, where a
    pair would cost a 64-byte tuple: 100,000 resources are 5 MiB less), held together
    in one tuple that compaction replaces whole.  A writer appends the item before
    its number and otherwise only blanks one item slot, so a reader that took the
    tuple and reads ``len(seqs)`` first sees every pair it can see whole.
    """

    __slots__ = ("_dead", "_lists")

    def __init__(self) -> None:
        self._lists: tuple[list[int], list[T | None]] = ([], [])
        self._dead = 0

    @classmethod
    def of(cls, seqs: list[int], items: list[T]) -> SeqIndex[T]:
        """An index of ``items`` numbered ``seqs`` (increasing), taken as they are."""
        index: SeqIndex[T] = cls()
        index._lists = (seqs, cast("list[T | None]", items))
        return index

    def append(self, seq: int, item: T) -> None:
        seqs, items = self._lists
        if seqs and seq <= seqs[-1]:
            raise ValueError("sequence numbers must increase")
        items.append(item)
        seqs.append(seq)

    def remove(self, seq: int) -> None:
        seqs, items = self._lists
        i = bisect_right(seqs, seq) - 1
        if i >= 0 and seqs[i] == seq and items[i] is not None:
            items[i] = None
            self._dead += 1
            if self._dead > 64 and self._dead * 2 > len(seqs):
                live = [(s, x) for s, x in zip(seqs, items, strict=True) if x is not None]
                self._dead = 0  # first: a len() taken between the two never comes out negative
                self._lists = ([s for s, _ in live], [x for _, x in live])

    def __len__(self) -> int:
        return len(self._lists[0]) - self._dead

    def __iter__(self) -> Iterator[T]:
        seqs, items = self._lists
        return (x for x in items[: len(seqs)] if x is not None)

    def page(self, after: int, limit: int) -> tuple[list[tuple[int, T]], bool]:
        """Up to ``limit`` live (seq, item) pairs with seq > ``after``, and whether more follow."""
        seqs, items = self._lists
        n = len(seqs)
        i = bisect_right(seqs, after, 0, n)
        out: list[tuple[int, T]] = []
        while i < n:
            item = items[i]
            if item is not None:
                if len(out) == limit:
                    return out, True
                out.append((seqs[i], item))
            i += 1
        return out, False

    def slice(self, after: int, limit: int) -> tuple[list[T | None], int, bool]:
        """Up to ``limit`` items with seq > ``after``, the seq of the last one (``after``
        if none), and whether more follow: one slice when nothing was removed.

        An item removed while the slice is taken may show as None (skip it).
        """
        if self._dead:
            page, more = self.page(after, limit)
            return [item for _, item in page], page[-1][0] if page else after, more
        seqs, items = self._lists
        n = len(seqs)
        i = bisect_right(seqs, after, 0, n)
        j = min(i + limit, n)
        return items[i:j], seqs[j - 1] if j > i else after, j < n


_KEY = os.urandom(32)
_TAG = 8  # bytes of HMAC-SHA256 kept: forging one is a 2**64 guess


def set_cursor_key(key: bytes) -> None:
    """Sign cursors with ``key``: workers that share it accept each other's cursors."""
    global _KEY
    _KEY = key


def _tag(raw: bytes) -> bytes:
    import hmac  # on the first cursor, not at start-up (a server that never pages never loads it)

    return hmac.digest(_KEY, raw, "sha256")[:_TAG]


def _same(a: bytes, b: bytes) -> bool:
    import hmac

    return hmac.compare_digest(a, b)


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
        if len(signed) <= _TAG or not _same(tag, _tag(raw)):
            raise ValueError("not ours")
        kind, *rest = raw.decode("ascii").split(":")
        numbers = [int(n) for n in rest]
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidParams("Invalid cursor", {"cursor": cursor}) from None
    if kind not in kinds or not numbers or any(n < 0 for n in numbers):
        raise InvalidParams("Invalid cursor", {"cursor": cursor})
    return kind, numbers
