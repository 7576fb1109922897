"""Logs: the tail of a growing log file; subscribers hear when it grows.

    log://app                    the last 20 lines
    log://app?lines=200          the last 200 lines (1 to 10,000)

The tail is read backwards from the end, so a read costs the lines asked for,
not the size of the file.  A subscriber to a URI hears about it when the file
grows (it is polled).  The first line names the file and its size, like
``tail -v``: appending lines equal to the ones already shown still changes
what a read returns, and so still notifies.

Run it:
    RESOURCEKIT_LOG=/var/log/app.log resourcekit run cookbook/logs.py   # stdio (default: ./app.log)
    RESOURCEKIT_LOG=app.log resourcekit read cookbook/logs.py 'log://app?lines=5'
    RESOURCEKIT_POLL=0.5 ...                                             # poll interval, seconds
"""

from __future__ import annotations

import os
from pathlib import Path

from resourcekit import App, Context, ResourceNotFound

LOG = Path(os.environ.get("RESOURCEKIT_LOG", "app.log")).expanduser().absolute()
POLL = float(os.environ.get("RESOURCEKIT_POLL", "1"))
MAX_LINES = 10_000
BLOCK = 64 * 1024

app = App("logs", version="1.0.0", instructions=f"The tail of {LOG}.")


def tail(path: Path, lines: int) -> tuple[bytes, int]:
    """The last ``lines`` lines of a file, and its size; reads blocks from the end."""
    try:
        with path.open("rb") as f:
            end = f.seek(0, os.SEEK_END)
            position, data = end, b""
            # one newline more than lines wanted, not counting a final newline
            while position > 0 and data.count(b"\n", 0, len(data) - 1) < lines:
                step = min(BLOCK, position)
                position -= step
                f.seek(position)
                data = f.read(step) + data
    except FileNotFoundError:
        return b"", 0
    body, newline = (data[:-1], b"\n") if data.endswith(b"\n") else (data, b"")
    return b"\n".join(body.split(b"\n")[-lines:]) + newline, end


@app.template("log://app{?lines}", lister=lambda: ["log://app"], poll=POLL,
              mime_type="text/plain")
def log(ctx: Context, lines: int = 20) -> str:
    """The last ``lines`` lines of the log (default 20), after a header naming the file and its size."""
    if not 1 <= lines <= MAX_LINES:
        raise ResourceNotFound(ctx.uri, f"lines must be between 1 and {MAX_LINES}")
    data, size = tail(LOG, lines)
    return f"==> {LOG.name} ({size} bytes) <==\n" + data.decode("utf-8", "replace")
