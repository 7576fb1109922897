"""``python -m resourcekit`` and the ``resourcekit`` command: the CLI, imported with the cyclic GC
paused and what that made frozen (``_frozen``), as loading the app is (``_loader.load_app``)."""

from __future__ import annotations

from ._frozen import frozen_after


def main() -> None:
    """Import the CLI (everything it serves with) with the GC paused, freeze that, then run it."""
    with frozen_after():
        from .cli import main as run_cli
    run_cli()


if __name__ == "__main__":
    main()
