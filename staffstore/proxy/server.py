"""Serve an ASGI app with uvicorn on 127.0.0.1, in a background thread, for as long as needed.

Tests, benchmarks and the fake upstream all need a real HTTP server they can start and stop
from synchronous code; this is that server, written once. Needs uvicorn (`staffstore[serve]`).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal


@contextmanager
def serve_in_thread(
    app: Any,
    *,
    name: str,
    lifespan: Literal["on", "off", "auto"] = "off",
    interface: Literal["auto", "asgi3"] = "auto",
    start_timeout: float = 10.0,
    shutdown_timeout: int = 2,
) -> Iterator[int]:
    """Run `app` on a free port of 127.0.0.1 in a daemon thread; yield the port."""
    import uvicorn  # the serve extra

    # IPPROTO_TCP named, not left 0: asyncio sets TCP_NODELAY only on sockets that say they
    # are TCP, and without it Nagle and delayed ACKs add 40 ms to every keep-alive request.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            lifespan=lifespan,
            interface=interface,
            log_config=None,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=shutdown_timeout,
        )
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=name, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + start_timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the {name} server did not start")
            time.sleep(0.005)
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=start_timeout)
        sock.close()
