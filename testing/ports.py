"""A free TCP port on the loopback interface, for servers a test or a benchmark starts."""

from __future__ import annotations

import socket

__all__ = ["free_port"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
