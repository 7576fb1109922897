"""``resourcekit run|list|read FILE[:ATTR]``."""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

import orjson

from ._loader import CLIError, find_app, load_app, split_target
from .app import App
from .errors import MCPError
from .testing import Client
from .transports.http import run_http

__all__ = ["find_app", "load_app", "main"]

def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="resourcekit", description="Serve and inspect MCP resources written with resourcekit."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="serve an app over stdio (default) or HTTP")
    run.add_argument("target", metavar="FILE[:ATTR]")
    run.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    run.add_argument("--host", default="127.0.0.1")
    run.add_argument("--port", type=int, default=8000)
    run.add_argument("--reload", action="store_true",
                     help="restart when the app's directory changes (HTTP only, needs the http extra)")
    show = commands.add_parser("list", help="list an app's resources and templates")
    show.add_argument("target", metavar="FILE[:ATTR]")
    show.add_argument("--json", action="store_true", help="print JSON for scripts")
    read = commands.add_parser("read", help="read one resource and print it")
    read.add_argument("target", metavar="FILE[:ATTR]")
    read.add_argument("uri")
    read.add_argument("--json", action="store_true", help="print the whole result as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            _run(args)
        elif args.command == "list":
            asyncio.run(_list(load_app(args.target), args.json))
        else:
            asyncio.run(_read(load_app(args.target), args.uri, args.json))
    except CLIError as exc:
        _fail(str(exc))


def _fail(message: str) -> NoReturn:
    print(f"resourcekit: error: {message}", file=sys.stderr)
    raise SystemExit(1)


def _run(args: argparse.Namespace) -> None:
    if args.transport == "stdio":
        load_app(args.target).run("stdio")
        return
    if args.reload:
        directory = os.path.dirname(os.path.abspath(split_target(args.target)[0]))
        run_http(None, host=args.host, port=args.port, reload_target=args.target, reload_dir=directory)
    else:
        run_http(load_app(args.target), host=args.host, port=args.port)


async def _list(app: App, as_json: bool) -> None:

    async with Client(app) as client:
        resources = await client.list_resources()
        templates = await client.list_templates()
    if as_json:

        sys.stdout.write(orjson.dumps({"resources": resources, "resourceTemplates": templates},
                                      option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    rows = [(r["uri"], r.get("mimeType", ""), r.get("title") or r.get("description", "") or "")
            for r in resources]
    rows += [(t["uriTemplate"], t.get("mimeType", ""), t.get("title") or t.get("description", "") or "")
             for t in templates]
    width = max((len(r[0]) for r in rows), default=0)
    mime_width = max((len(r[1]) for r in rows), default=0)
    print(f"{app.name}: {len(resources)} resources, {len(templates)} templates")
    for uri, mime, about in rows:
        first_line = about.strip().splitlines()[0] if about.strip() else ""
        print(f"  {uri:<{width}}  {mime:<{mime_width}}  {first_line}".rstrip())


async def _read(app: App, uri: str, as_json: bool) -> None:

    async with Client(app) as client:
        try:
            contents = await client.read(uri)
        except MCPError as exc:
            raise CLIError(f"{exc.message} (code {exc.code})") from None
    if as_json:

        sys.stdout.write(orjson.dumps({"contents": contents}, option=orjson.OPT_INDENT_2).decode() + "\n")
        return

    for content in contents:
        if "text" in content:
            sys.stdout.write(content["text"])
            if not content["text"].endswith("\n"):
                sys.stdout.write("\n")
        else:
            data = base64.b64decode(content["blob"])
            if sys.stdout.isatty():
                print(f"<{len(data)} bytes of {content.get('mimeType', 'binary')}; use --json or redirect>")
            else:
                sys.stdout.flush()
                sys.stdout.buffer.write(data)


if __name__ == "__main__":
    main()
