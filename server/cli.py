"""The ``mnemo`` command: ``serve``, ``export`` and ``import``; ``tail`` and ``actors``
(server/watch_cli.py); ``reembed`` (server/cli_reembed.py); ``mcp`` (server/cli_mcp.py);
``cluster map`` (server/cli_cluster.py)."""

from __future__ import annotations

import argparse
import gc
import logging
import math
import os
import resource
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import version
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette

from schemas.settings import Settings
from server import cli_cluster, cli_mcp, cli_reembed, watch_cli
from server.cli_transfer import add_commands, export_command, import_command
from server.config import ConfigError, is_loopback, load_settings
from server.datadir import DataDirLock, DataDirLocked, is_uri, local_dir
from server.logs import configure_logging
from server.protocols import RefusingWebSockets, timed_http

__all__ = ["describe_start", "main"]

_VERSION = version("mnemo")
_log = logging.getLogger("mnemo")
#: The settings ``mnemo serve --help`` shows the values of.
_SHOWN = (
    "data_dir",
    "host",
    "port",
    "llm_api",
    "llm_url",
    "chat_model",
    "extract_model",
    "embedder",
    "api_keys",
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mnemo", description="Realtime memory server for AI chat")
    parser.add_argument("--version", action="version", version=f"mnemo {_VERSION}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="run the server",
        description="Run the server. Every setting is a MNEMO_* environment variable or a key"
        " of the TOML file MNEMO_CONFIG names; these options win over both"
        " (docs/configuration.md lists them all).",
        epilog=_serve_defaults(os.environ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--host", help="address to bind (MNEMO_HOST)")
    serve.add_argument("--port", type=int, help="port, 0 for any free one (MNEMO_PORT)")
    serve.add_argument("--data-dir", dest="data_dir", help="data directory (MNEMO_DATA_DIR)")
    watch_cli.add_commands(commands)
    add_commands(commands)
    cli_reembed.add_commands(commands)
    cli_mcp.add_commands(commands)
    cli_cluster.add_commands(commands)
    return parser


def _serve_defaults(environ: Mapping[str, str]) -> str:
    """What ``mnemo serve`` would use here without options (a relative directory also as
    the absolute path it is from here), as its settings stand."""
    try:
        settings, problem = load_settings(environ), ""
    except ConfigError as exc:
        settings, problem = Settings(), f"\n(the defaults: the settings are refused: {exc})"
    lines = []
    for field in _SHOWN:
        value = str(getattr(settings, field))
        if field == "api_keys":
            count = len(settings.api_keys)
            value = f"{count} key{'s' * (count != 1)}" if count else "none: one user"
        elif field.endswith("_dir") and not is_uri(value) and not Path(value).is_absolute():
            value = f"{value} ({Path(value).resolve()})"
        lines.append(f"  MNEMO_{field.upper():<14} {value}")
    return "what it uses without options:\n" + "\n".join(lines) + problem


def serve(args: argparse.Namespace) -> int:
    try:
        settings = load_settings(os.environ, host=args.host, port=args.port, data_dir=args.data_dir)
    except ConfigError as exc:
        print(f"mnemo: {exc}", file=sys.stderr)
        return 2
    if not settings.api_keys and not is_loopback(settings.host):
        print(
            f"mnemo: refusing to bind {settings.host} without MNEMO_API_KEYS: with no keys "
            "every caller is the same user. Set MNEMO_API_KEYS=key:user,... or bind 127.0.0.1.",
            file=sys.stderr,
        )
        return 2
    from server.main import build_app

    lock = DataDirLock(local_dir(settings.data_dir, settings.local_dir))
    try:
        lock.acquire()
    except DataDirLocked as exc:
        print(f"mnemo: {exc}", file=sys.stderr)
        return 2
    try:
        return _run(settings, build_app)
    except KeyboardInterrupt:
        # Ctrl-C: uvicorn shut down cleanly, then raised the signal again for its caller.
        return 0
    finally:
        lock.release()


def describe_start(settings: Settings) -> tuple[int, str]:
    """The line ``mnemo serve`` starts with, and its log level: where data lives, the
    embedder, the models and whether their endpoint answers (asked once, for 2 s)."""
    data = settings.data_dir
    if is_uri(data):
        where = (
            f"mnemo {_VERSION}: data in {data} (journal in {Path(settings.local_dir).resolve()})"
        )
    else:
        where = f"mnemo {_VERSION}: data in {Path(data).resolve()}"
    models = f"chat model {settings.chat_model}, extraction model {settings.extract_model}"
    head = f"{where}; embedder {settings.embedder}; {models} at {settings.llm_url}"
    base = settings.llm_url.rstrip("/")
    try:
        if settings.llm_api == "openai":
            answer = httpx.get(f"{base.removesuffix('/v1')}/v1/models", timeout=2.0)
            answer.raise_for_status()
            found = f"an OpenAI-compatible server with {len(answer.json()['data'])} models"
        else:
            answer = httpx.get(f"{base}/api/version", timeout=2.0)
            answer.raise_for_status()
            found = f"Ollama {answer.json().get('version', '?')}"
    except (httpx.HTTPError, ValueError, AttributeError, KeyError, TypeError) as exc:
        reason = str(exc) or type(exc).__name__
        degraded = "chats answer llm_unavailable and facts come from the rule-based reader"
        return logging.WARNING, f"{head}: not answering ({reason}); {degraded} until it does"
    return logging.INFO, f"{head}: answering ({found})"


def _run(settings: Settings, build_app: Callable[[Settings], Starlette]) -> int:
    configure_logging()
    _log.log(*describe_start(settings))
    raise_open_files()
    app = build_app(settings)
    tune_gc(settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        http=timed_http(settings.handshake_timeout),
        # Longer than clients keep an idle connection (httpx: 5 s, uvicorn's default too):
        # equal timeouts race, and a request sent as the server closes fails (MCP sessions).
        timeout_keep_alive=max(math.ceil(settings.handshake_timeout), 6),
        ws=RefusingWebSockets,
        ws_max_size=max(4 * settings.max_frame_bytes, 1 << 20),
        # Frames are small JSON: compressing each costs more CPU than the bytes it saves.
        ws_per_message_deflate=False,
        lifespan="on",
        log_level="info",
        log_config=None,  # uvicorn's records go through configure_logging's handler
    )
    uvicorn.Server(config).run()
    return 0


def tune_gc(settings: Settings) -> None:
    """Collect less often (``gc_young``, ``gc_middle``), and never scan again what is loaded
    now (modules, the app): it lives as long as the process."""
    gc.set_threshold(settings.gc_young, settings.gc_middle, gc.get_threshold()[2])
    gc.collect()
    gc.freeze()


def raise_open_files() -> int:
    """Raise the soft limit of open files to the hard one; returns the limit now. Each
    connection is one, and so is each large user held in memory (their saved index
    stays open): the usual soft limit of 1,024 would refuse the 1,025th."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:  # (a soft limit is never above the hard one)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as exc:  # e.g. an infinite hard limit some systems refuse
            _log.warning("open files stay limited to %d: %s", soft, exc)
            return soft
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _command(args)
    except KeyboardInterrupt:
        return 130  # Ctrl-C before the command was done (the shell's 128 + SIGINT)
    except BrokenPipeError:
        # The reader left (``mnemo export | head``): not an error. Python would report
        # the pipe again when it flushes stdout at exit, so stdout goes nowhere now.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _command(args: argparse.Namespace) -> int:
    if args.command == "serve":
        return serve(args)
    if args.command == "tail":
        return watch_cli.tail(args)
    if args.command == "actors":
        return watch_cli.actors(args)
    if args.command == "export":
        return export_command(args)
    if args.command == "import":
        return import_command(args)
    if args.command == "reembed":
        return cli_reembed.reembed_command(args)
    if args.command == "mcp":
        return cli_mcp.mcp_command(args)
    if args.command == "cluster":
        return cli_cluster.cluster_command(args)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
