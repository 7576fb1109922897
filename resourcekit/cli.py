"""``resourcekit run|dev|list|read|install FILE[:ATTR]``, ``resourcekit skills DIRECTORY``, ``resourcekit notify``."""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NoReturn

import orjson

from . import __version__
from ._loader import CLIError, apply_limits, find_app, load_app, split_target, use_resource_tools
from .app import App
from .errors import DefinitionError, LifespanFailed, MCPError
from .explorer import DEFAULT_PORT
from .transports import http
from .transports.stdio import run_stdio

if TYPE_CHECKING:
    import argparse

    from ._cliparser import Parser

__all__ = ["find_app", "load_app", "main"]

# (flag, type, help); the flag names a Limits field. HTTP-only ones are in HTTP_ONLY.
LIMIT_FLAGS: list[tuple[str, type[int] | type[float], str]] = [
    ("--max-message-size", int, "bytes of one incoming message"),
    ("--max-uri-length", int, "characters of a URI in any request"),
    ("--max-inflight", int, "requests one connection, or one caller of 2026-07-28 requests, may have in flight"),
    ("--max-subscriptions", int, "URIs one session may subscribe to"),
    ("--max-pending-notifications", int, "notifications queued for one subscriber"),
    ("--max-sessions", int, "HTTP: concurrent sessions (the least recently used idle one is evicted)"),
    ("--session-idle-timeout", float, "HTTP: seconds an idle session lives"),
    ("--max-replay-bytes", int, "HTTP: bytes of SSE events one session keeps for Last-Event-ID"),
    ("--max-stream-lifetime", float, "HTTP: seconds one GET stream stays open"),
    ("--max-header-bytes", int, "HTTP: bytes of a request's header section"),
    ("--header-timeout", float, "HTTP: seconds to send a complete header section"),
    ("--body-timeout", float, "HTTP: seconds to send a whole request body (after its header section)"),
]
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
INSTALL_HOSTS = ("claude-code", "claude-desktop", "cursor", "vscode")  # install.HOSTS (a test keeps them equal)
AUTH_FLAGS = ("--auth-issuer", "--auth-audience", "--auth-jwks", "--auth-introspection", "--auth-scope")
HTTP_ONLY = ("--host", "--port", "--reload", "--redis", "--redis-prefix", "--redis-wait", "--workers", "--metrics",
             "--max-sessions", "--session-idle-timeout", "--max-replay-bytes", "--max-stream-lifetime",
             "--max-header-bytes", "--header-timeout", "--body-timeout", *AUTH_FLAGS)


def _add_run(run: argparse.ArgumentParser) -> None:
    run.add_argument("target", metavar="FILE[:ATTR]", help="a file (app.py, app.py:app) or a module (pkg.module:app)")
    run.add_argument("--log-level", type=str.upper, choices=LOG_LEVELS,
                     help="log to stderr from this level (INFO: one line per request; default $RESOURCEKIT_LOG_LEVEL "
                          "or WARNING)")
    run.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    run.add_argument("--host", help="HTTP: the address to bind (default 127.0.0.1)")
    run.add_argument("--port", type=int, help="HTTP: the port (default 8000)")
    run.add_argument("--reload", action="store_true",
                     help="restart when the app's directory changes (HTTP only, needs the http extra)")
    run.add_argument("--redis", metavar="URL",
                     help="HTTP: share sessions and notifications with other workers through this Redis "
                          "(default $RESOURCEKIT_REDIS_URL; needs the redis extra)")
    run.add_argument("--redis-prefix", metavar="PREFIX", help="HTTP: prefix of the Redis keys (default resourcekit:)")
    run.add_argument("--redis-wait", type=float, metavar="SECONDS",
                     help="HTTP: wait this long at start-up for Redis (default 0: unreachable is an error at once)")
    run.add_argument("--workers", type=int, metavar="N", help="HTTP: worker processes (N > 1 needs --redis)")
    run.add_argument("--resource-tools", action="store_true",
                     help="also serve the resources as read-only tools (list_resources, read_resource, one per "
                          "template), for hosts that only call tools")
    auth = run.add_argument_group("authorization", "HTTP: accept only OAuth 2.1 access tokens (the auth extra; "
                                  "docs/authorization.md)")
    auth.add_argument("--auth-issuer", metavar="URL", help="the authorization server that issues the tokens")
    auth.add_argument("--auth-audience", metavar="URL", help="this server's canonical URL, e.g. https://host/mcp")
    auth.add_argument("--auth-jwks", metavar="URL", help="the issuer's JWKS (default: from its metadata)")
    auth.add_argument("--auth-introspection", metavar="URL", help="RFC 7662 endpoint for tokens that are not JWTs")
    auth.add_argument("--auth-scope", action="append", metavar="SCOPE", help="a scope every request needs (repeat)")
    run.add_argument("--metrics", action="store_true",
                     help="HTTP: serve Prometheus text at GET /metrics (one process; needs the otel extra)")
    limits = run.add_argument_group("limits", "override the app's Limits (see README, \"Limits\")")
    for flag, kind, about in LIMIT_FLAGS:
        limits.add_argument(flag, type=kind, metavar="N", help=about)


def _add_list(show: argparse.ArgumentParser) -> None:
    show.add_argument("target", metavar="FILE[:ATTR]")
    show.add_argument("--json", action="store_true", help="print JSON for scripts")


def _add_read(read: argparse.ArgumentParser) -> None:
    read.add_argument("target", metavar="FILE[:ATTR]")
    read.add_argument("uri")
    read.add_argument("--json", action="store_true", help="print the whole result as JSON")
    read.add_argument("--stream", action="store_true",
                      help="resources/stream (SEP-2532, experimental) from a running server: FILE[:ATTR] is then "
                           "its URL (http://127.0.0.1:8000/mcp); the bytes go to -o")
    read.add_argument("-o", "--output", metavar="OUT", help="with --stream: the file the bytes are written to")


def _add_skills(skills: argparse.ArgumentParser) -> None:
    skills.add_argument("directory", metavar="DIRECTORY")
    skills.add_argument("--prefix", default="", help="path before every skill's own (e.g. acme/billing)")
    skills.add_argument("--poll", type=float, default=2.0, metavar="SECONDS",
                        help="look for changed files this often (0: never; default 2)")
    skills.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    skills.add_argument("--host", help="HTTP: the address to bind (default 127.0.0.1)")
    skills.add_argument("--port", type=int, help="HTTP: the port (default 8000)")


def _add_dev(dev: argparse.ArgumentParser) -> None:
    dev.add_argument("target", metavar="FILE[:ATTR]")
    dev.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"the port on 127.0.0.1 (default {DEFAULT_PORT})")
    dev.add_argument("--no-open", action="store_true", help="do not open a browser")
    dev.add_argument("--reload", action="store_true", help="restart when the app's directory changes")
    dev.add_argument("--resource-tools", action="store_true", help="also serve the resources as read-only tools")
    dev.add_argument("--log-level", type=str.upper, choices=LOG_LEVELS, help="log to stderr from this level")


def _add_install(install: argparse.ArgumentParser) -> None:
    install.add_argument("host", choices=INSTALL_HOSTS)
    install.add_argument("target", metavar="FILE[:ATTR]")
    install.add_argument("--name", help="the server's name in the host (default: the App's name)")
    install.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                         help="an environment variable for the server (repeatable)")
    install.add_argument("--config", metavar="PATH",
                         help="the configuration file to edit (default: the host's own, for this user)")
    install.add_argument("--print", dest="show_only", action="store_true", help="show the change, write nothing")
    install.add_argument("--resource-tools", action="store_true", help="serve the resources as tools too")


def _add_notify(notify: argparse.ArgumentParser) -> None:
    notify.add_argument("uris", nargs="+", metavar="URI")
    notify.add_argument("--redis", metavar="URL", help="the workers' Redis (default $RESOURCEKIT_REDIS_URL)")
    notify.add_argument("--redis-prefix", metavar="PREFIX", default="resourcekit:", help="as the workers were given")


# command -> (its help, what adds its arguments); the order is --help's
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "run": ("serve an app over stdio (default) or HTTP", _add_run),
    "list": ("list an app's resources and templates", _add_list),
    "read": ("read one resource and print it", _add_read),
    "skills": ("serve a folder of Agent Skills (SEP-2640), no Python file needed", _add_skills),
    "dev": ("serve an app over HTTP with a resource explorer in the browser", _add_dev),
    "install": ("add this server to Claude Desktop, Claude Code, Cursor or VS Code", _add_install),
    "notify": ("tell every worker sharing a Redis that resources may have changed", _add_notify),
}


def _parser(only: str | None = None) -> Parser:
    """The CLI's parser; with ``only``, the parser of that command alone: a server that a host starts
    builds one command's arguments, not seven commands' (about 2.5 ms of its start-up).

    argparse (and gettext with it, about 3 ms) loads here, on the first parse: ``run FILE`` alone,
    the line hosts spawn, needs no parser (``main``)."""
    from ._cliparser import Parser

    parser = Parser(
        prog="resourcekit", description="Serve and inspect MCP resources written with resourcekit."
    )
    parser.add_argument("--version", action="version", version=f"resourcekit {__version__}")
    # one command's parser still names them all in its usage line (an error after the command)
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar=None if only is None else "{" + ",".join(_COMMANDS) + "}")
    for name, (about, add_arguments) in _COMMANDS.items():
        if only is None or name == only:
            parser.commands[name] = command = commands.add_parser(name, help=about)
            add_arguments(command)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) == 2 and argv[0] == "run" and argv[1][:1] != "-":  # what hosts spawn: nothing to parse
        args: Any = _bare_run(argv[1])
    else:
        args = _parser(argv[0] if argv and argv[0] in _COMMANDS else None).parse_args(argv)
    if getattr(args, "log_level", None):
        os.environ["RESOURCEKIT_LOG_LEVEL"] = args.log_level  # for this process and any it starts
    try:
        if args.command == "run":
            _run(args)
        elif args.command == "dev":
            from .explorer.serve import run_dev  # uvicorn and the page: not what `run` needs at start-up

            if args.resource_tools:
                use_resource_tools()
            run_dev(args.target, port=args.port, open_browser=not args.no_open, reload=args.reload)
        elif args.command == "notify":
            _notify(args)
        elif args.command == "skills":
            _skills(args)
        elif args.command == "install":
            from .install import install  # its JSON editing: not what `run` needs at start-up

            print(install(args.host, args.target, name=args.name, env=args.env, config=args.config,
                          show_only=args.show_only, run_args=["--resource-tools"] if args.resource_tools else []))
        elif args.command == "list":
            asyncio.run(_list(load_app(args.target), args.json))
        elif args.stream:  # SEP-2532 from a running server (its URL in place of FILE[:ATTR])
            from .testing import DownloadFailed, download

            try:
                print(download(args.target, args.uri, args.output), file=sys.stderr)
            except DownloadFailed as exc:
                raise CLIError(str(exc)) from None
        else:
            asyncio.run(_read(load_app(args.target), args.uri, args.json))
    except (CLIError, LifespanFailed) as exc:
        _fail(str(exc))
    except BrokenPipeError:  # `resourcekit list ... | head`: the reader left, nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        raise SystemExit(1) from None


def _bare_run(target: str) -> Any:
    """What the parser makes of ``run TARGET``: every option at its default."""
    options: dict[str, Any] = {flag[2:].replace("-", "_"): None
                               for flag in (*HTTP_ONLY, *(flag for flag, _, _ in LIMIT_FLAGS))}
    options.update(command="run", target=target, transport="stdio", log_level=None, reload=False, metrics=False,
                   resource_tools=False)
    return SimpleNamespace(**options)


def _fail(message: str) -> NoReturn:
    print(f"resourcekit: error: {message}", file=sys.stderr)
    raise SystemExit(1)


def _given(args: argparse.Namespace, flag: str) -> bool:
    value = getattr(args, flag[2:].replace("-", "_"))
    return value is not None and value is not False


def _run(args: argparse.Namespace) -> None:
    if args.resource_tools:
        use_resource_tools()  # for this process and any it starts (reloader, workers)
    limits = {flag[2:].replace("-", "_"): getattr(args, flag[2:].replace("-", "_")) for flag, _, _ in LIMIT_FLAGS}
    if args.transport == "stdio":
        for flag in HTTP_ONLY:
            if _given(args, flag):
                raise CLIError(f"{flag} only applies to --transport http")
        run_stdio(apply_limits(load_app(args.target), limits), target=args.target)
        return
    host = "127.0.0.1" if args.host is None else args.host
    port = 8000 if args.port is None else args.port
    redis = args.redis or os.environ.get("RESOURCEKIT_REDIS_URL") or None
    prefix = "resourcekit:" if args.redis_prefix is None else args.redis_prefix
    workers = 1 if args.workers is None else args.workers
    if args.redis_wait is not None and redis is None:
        raise CLIError("--redis-wait needs --redis URL (or RESOURCEKIT_REDIS_URL)")
    auth = _auth(args)
    if workers < 1:
        raise CLIError("--workers must be at least 1")
    if args.metrics and workers > 1:
        # each process keeps its own figures and a scrape reaches one of them: the totals would be wrong
        raise CLIError(f"--metrics cannot be combined with --workers {workers}: /metrics would serve the figures "
                       "of whichever worker answers the scrape, and each process keeps its own; export them with "
                       "an OTLP metric reader instead (see docs/observability.md)")
    if args.metrics and args.reload:
        raise CLIError("--metrics cannot be combined with --reload: the app is served by a child process "
                       "restarted on every change, and its figures would restart with it")
    if workers > 1:
        if redis is None:
            raise CLIError(f"--workers {workers} needs --redis URL (or RESOURCEKIT_REDIS_URL): without a shared "
                           "Redis each worker would keep its own sessions and subscribers")
        if args.reload:
            raise CLIError("--workers cannot be combined with --reload")
        load_app(args.target)  # fail here, once, rather than in every worker
        http.run_http(None, host=host, port=port, target=args.target, workers=workers,
                 limits={k: v for k, v in limits.items() if v is not None}, redis=redis, redis_prefix=prefix,
                 redis_wait=args.redis_wait or 0.0,
                 **({"auth": auth} if auth is not None else {}))
        return
    options: dict[str, Any] = {"redis": redis, "redis_prefix": prefix, "redis_wait": args.redis_wait or 0.0} \
        if redis else {}
    if auth is not None:
        options["auth"] = auth
    if args.reload:
        given = [flag for flag, _, _ in LIMIT_FLAGS if _given(args, flag)]
        if given:  # each reloaded process loads the app afresh: set limits in App(limits=...) instead
            raise CLIError(f"{given[0]} cannot be combined with --reload; set it in App(limits=Limits(...))")
        directory = os.path.dirname(os.path.abspath(split_target(args.target)[0]))
        http.run_http(None, host=host, port=port, reload_target=args.target, reload_dir=directory, **options)
    else:
        http.run_http(apply_limits(load_app(args.target), limits), host=host, port=port, metrics=args.metrics,
                      **options)


def _auth(args: argparse.Namespace) -> Any:
    """The ``OAuthResourceServer`` the ``--auth-*`` flags describe (None without them)."""
    if not any(_given(args, flag) for flag in AUTH_FLAGS):
        return None
    if not args.auth_issuer or not args.auth_audience:
        missing = "--auth-issuer" if not args.auth_issuer else "--auth-audience"
        raise CLIError(f"authorization needs {missing} URL (and --auth-issuer with --auth-audience)")
    try:
        from .auth import OAuthResourceServer
    except ImportError as exc:
        raise CLIError(str(exc)) from None
    # the introspection endpoint's credentials: from the environment, never on a command line
    client = os.environ.get("RESOURCEKIT_AUTH_CLIENT_ID"), os.environ.get("RESOURCEKIT_AUTH_CLIENT_SECRET")
    try:
        return OAuthResourceServer(issuer=args.auth_issuer, audience=args.auth_audience, jwks_uri=args.auth_jwks,
                                   introspection_url=args.auth_introspection, scopes=args.auth_scope or (),
                                   introspection_client=(client[0], client[1]) if client[0] and client[1] else None)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def _skills(args: argparse.Namespace) -> None:
    name = os.path.basename(os.path.abspath(args.directory)) or "skills"
    app = App(name, instructions="Agent Skills (SEP-2640): skills/list, then read skill:// resources.")
    try:
        app.add_skills(args.directory, prefix=args.prefix, poll=args.poll if args.poll > 0 else None)
    except DefinitionError as exc:
        raise CLIError(str(exc)) from None
    if args.transport == "stdio":
        for flag in ("--host", "--port"):
            if _given(args, flag):
                raise CLIError(f"{flag} only applies to --transport http")
        app.run("stdio")
        return
    app.run("http", host="127.0.0.1" if args.host is None else args.host,
            port=8000 if args.port is None else args.port)


def _notify(args: argparse.Namespace) -> None:
    url = args.redis or os.environ.get("RESOURCEKIT_REDIS_URL")
    if not url:
        raise CLIError("notify needs --redis URL (or RESOURCEKIT_REDIS_URL)")
    try:
        from .scaleout import notify
        from .scaleout.broker import safe_url
    except ImportError:
        raise CLIError("notify needs redis-py: pip install 'resourcekit[redis]'") from None
    try:
        heard = notify(url, args.uris, prefix=args.redis_prefix)
    except Exception as exc:  # redis-py's errors, a malformed URL
        raise CLIError(f"cannot publish to Redis at {safe_url(url)}: {exc}") from None
    print(f"resourcekit: announced {len(args.uris)} URI(s); {heard} worker(s) listening", file=sys.stderr)


async def _list(app: App, as_json: bool) -> None:
    from .testing import Client  # the in-memory client: `list` and `read` only

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
    print(f"{app.name}: {_count(len(resources), 'resource')}, {_count(len(templates), 'template')}")
    for uri, mime, about in rows:
        first_line = about.strip().splitlines()[0] if about.strip() else ""
        print(f"  {uri:<{width}}  {mime:<{mime_width}}  {first_line}".rstrip())


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


async def _read(app: App, uri: str, as_json: bool) -> None:
    from .testing import Client

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
