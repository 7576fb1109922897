"""``python -m resourcekit`` and the ``resourcekit`` command: the CLI, started with the cyclic GC paused.

What starting imports (asyncio, resourcekit, the CLI: thousands of objects) lives as long as the
process; left to the cyclic GC, it would be scanned again and again while it is made, some
dozens of collections costing a server about 5 ms of its start-up.  So the GC is paused while
``cli`` loads, and what it made is frozen (``gc.freeze``: never scanned again) before the GC
resumes; loading the app does the same for what the app makes (``_loader.load_app``).
"""

from __future__ import annotations

import gc


def main() -> None:
    """Import the CLI (everything it serves with) with the GC paused, freeze that, then run it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        from .cli import main as run_cli
    finally:
        gc.freeze()
        if collecting:
            gc.enable()
    run_cli()


if __name__ == "__main__":
    main()
