"""A loopback MongoDB wire-protocol server on mongomock, for the real drivers."""

from .server import WireServer

__all__ = ["WireServer"]
