"""Durable safety state behind one async interface (:class:`Store`): SQLite by default,
Redis for several processes. Never imported by :mod:`mcpaql.protocol`."""

from .base import Record, Store, Window, open_store

__all__ = ["Record", "Store", "Window", "open_store"]
