"""The CLI's argparse parser: help sized without shutil, and errors under the command they are about."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["HelpFormatter", "Parser"]


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, sized once per process rather than for every ``add_argument`` (which makes one),
    and without shutil (bz2, lzma): about 4 ms of a server's start-up, for help it never prints."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=columns())


@functools.cache
def columns() -> int:
    """What ``shutil.get_terminal_size().columns - 2`` is, as argparse sizes its help."""
    try:
        return int(os.environ["COLUMNS"]) - 2
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns - 2  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 78


class Parser(argparse.ArgumentParser):
    """An ArgumentParser (and its subcommands' parsers, ``commands``) with ``HelpFormatter``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = {}

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """argparse's, but what a command does not take is said under its usage, not the top-level one."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            import difflib  # only for this error: the option it likely meant

            command = self.commands.get(getattr(parsed, "command", None) or "", self)
            options = [option for action in command._actions for option in action.option_strings]
            meant = difflib.get_close_matches(extra[0].split("=")[0], options, n=1) if extra[0][:2] == "--" else []
            command.error(f"unrecognized arguments: {' '.join(extra)}{''.join(f' (did you mean {o}?)' for o in meant)}")
        return parsed
