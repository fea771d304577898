"""Run the proxy from a ServeConfig: in the foreground (`staffstore serve`) or in a thread.

Kept apart from config.py so that the app (app.py), which reads its settings from config.py, and
the code that starts it do not import each other. Imports starlette and uvicorn only when called.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .config import ServeConfig, build_config

if TYPE_CHECKING:
    import httpx


def run_server(config: ServeConfig) -> None:
    """Serve the proxy with uvicorn until interrupted (needs the `staffstore[serve]` extra)."""
    try:
        import uvicorn

        from .app import create_app
    except ImportError as error:
        raise InputError(
            f"staffstore serve needs the serve extra: pip install 'staffstore[serve]' ({error})"
        ) from None
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config),
            host=config.host,
            port=config.port,
            lifespan="on",
            log_level=config.log_level,
            # uvicorn's access line carries the query string, where a client may have put a
            # token: the app writes its own (access_log.py) when config.access_log asks.
            access_log=False,
            timeout_graceful_shutdown=5,
        )
    )
    server.run()


@contextmanager
def serve_in_thread(
    config: ServeConfig,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    start_timeout: float = 10.0,
) -> Iterator[str]:
    """Serve the proxy on 127.0.0.1 (a free port; config.port is ignored) in a thread.

    Yields the base URL an OpenAI client takes (ending in /v1). For tests and benchmarks.
    """
    from .app import create_app
    from .server import serve_in_thread as run_in_thread

    app = create_app(config, transport=transport)
    with run_in_thread(
        app, name="staffstore-proxy", lifespan="on", start_timeout=start_timeout
    ) as port:
        yield f"http://127.0.0.1:{port}/v1"


def serve_command(**options: Any) -> None:
    """`staffstore serve`: build the config from the CLI's options (see build_config), serve."""
    run_server(build_config(**options))
