"""Reports which modules a stdio server has not needed before its first read (tests/test_startup.py)."""

import sys

from resourcekit import App

app = App("startup")

# modules a stdio server does not need before it answers: their import would be start-up paid
# for features (hashing, help text, file paths) that come later or never
DEFERRED = ("hashlib", "_hashlib", "shutil", "bz2", "lzma", "pathlib")


@app.resource("test://loaded")
def loaded() -> str:
    """Which of DEFERRED are imported when the first read calls this (before it is hashed)."""
    return ",".join(name for name in DEFERRED if name in sys.modules)
