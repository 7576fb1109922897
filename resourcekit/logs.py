"""``Repeats``: a warning a client can cause at will is written once per interval, with a count.

Written every time, 10,000 requests with invalid tokens would write 10,000 lines and hide
everything else in the log. Through ``Repeats`` the first of a kind is written at once; the
same kind within the next ``interval`` seconds is only counted, and when the interval ends one
line says how many there were (the last of them, then "… 9,999 more in the last 60 s"). A kind
is the line's level and text; but a client that chooses the values filled in (a token's ``kid``,
say) must not choose a new kind each time, so the first ``VARIANTS`` (16) texts of one template
are kinds of their own and all later ones one kind together.

The closing line is written by a timer on the running event loop, so a flood that stops is
still counted; called where no loop runs, the count goes with the next line of the kind.
``Limits.log_repeat_interval`` (60 s) sets the interval of resourcekit's own lines::

    repeats = Repeats(logging.getLogger("myapp"), interval=60)
    repeats.warning("refused a token: %s", reason)
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

__all__ = ["VARIANTS", "Repeats"]

VARIANTS = 16  # texts of one template that are kinds of their own


class _Kind:
    __slots__ = ("args", "held", "msg", "since", "timer")

    def __init__(self, since: float, msg: str) -> None:
        self.since = since  # when the current interval began
        self.msg = msg  # its template
        self.held = 0  # lines not written in it
        self.args: tuple[Any, ...] = ()  # the last of them
        self.timer: asyncio.TimerHandle | None = None


class Repeats:
    """Write each kind of line (its level and text, see above) at most once per ``interval`` seconds,
    then how many more there were. For the event loop's thread (as resourcekit's own lines are)."""

    __slots__ = ("_kinds", "_variants", "interval", "logger")

    def __init__(self, logger: logging.Logger, interval: float = 60.0) -> None:
        self.logger = logger
        self.interval = interval
        # (level, text) -> its kind; (level, template) for a template past its VARIANTS texts
        self._kinds: dict[tuple[int, str], _Kind] = {}
        self._variants: dict[tuple[int, str], int] = {}  # (level, template) -> texts with a kind

    def warning(self, msg: str, *args: Any) -> None:
        self.log(logging.WARNING, msg, *args)

    def error(self, msg: str, *args: Any) -> None:
        self.log(logging.ERROR, msg, *args)

    def log(self, level: int, msg: str, *args: Any) -> None:
        if not self.logger.isEnabledFor(level):
            return
        now = time.monotonic()
        try:
            key = (level, msg % args if args else msg)
        except (TypeError, ValueError):  # (logging reports it when the line is written)
            key = (level, msg)
        kind = self._kinds.get(key)
        if kind is None:
            template = (level, msg)
            variants = self._variants.get(template, 0)
            if variants >= VARIANTS:  # a client makes up the values: one kind for the rest
                key = template
                kind = self._kinds.get(key)
            else:
                self._variants[template] = variants + 1
        if kind is not None and now - kind.since < self.interval:
            kind.held += 1
            kind.args = args
            if kind.timer is None:
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:  # no loop: the count goes with the next line of the kind
                    return
                kind.timer = loop.call_later(kind.since + self.interval - now, self._close, key)
            return
        if kind is not None and kind.held:  # (no loop ran a timer): this line carries the count
            self._write(level, msg, args, kind.held, now - kind.since)
        else:
            self.logger.log(level, msg, *args)
        self._kinds[key] = _Kind(now, msg)

    def _close(self, key: tuple[int, str]) -> None:
        """The interval of a kind ended with lines held: one line says how many; the next interval
        begins now, so a flood that goes on is written once per interval."""
        kind = self._kinds[key]
        now = time.monotonic()
        self._write(key[0], kind.msg, kind.args, kind.held, now - kind.since)
        self._kinds[key] = _Kind(now, kind.msg)

    def _write(self, level: int, msg: str, args: tuple[Any, ...], held: int, seconds: float) -> None:
        if not args:  # the template is formatted now: a literal % in it stays one
            msg = msg.replace("%", "%%")
        self.logger.log(level, msg + " (… %s more in the last %s s)", *args, f"{held:,}", f"{round(seconds, 1):g}")
