"""W5 alone (Streamable HTTP, 16 clients): kept for its old command line; run.py does the work.

W5 is a workload of ``run.py`` (``--workloads w5``): the servers over HTTP on loopback (asgi included),
the same client and report as there. This prints its table and writes nothing.

    .venv-bench/bin/python benchmarks/http_bench.py [--seconds 3] [--runs 3] [--servers resourcekit,mcp,fastmcp,raw]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--servers", default=",".join(run.SERVER_NAMES))
    args = parser.parse_args()
    return run.main(["--workloads", "w5", "--no-write", "--seconds", str(args.seconds), "--runs", str(args.runs),
                     "--servers", args.servers])


if __name__ == "__main__":
    sys.exit(main())
