"""The embedded demo adapter: a project & task tracker with notes ("Task Tracker", adapter ``tasks``).

``mcpaql serve`` with no target serves it over stdio. Data lives in a SQLite file (WAL mode)
at the path given to :func:`make_adapter`, else ``$MCPAQL_DEMO_DB``, else
``~/.local/share/mcpaql/demo.db`` (parent directories are created).

Operations (all five CRUDE categories):

- CREATE: ``create_project``, ``create_task``, ``create_note``, ``create_link``
- READ: ``get_project``, ``list_projects``, ``get_task``, ``list_tasks``, ``search_notes``,
  ``list_task_events``, ``get_execution``, ``query_relationships`` (task links: blocks,
  relates_to, duplicates; incoming/outgoing/both; depth ≤ 3; cycles reported once)
- UPDATE: ``update_project``, ``update_task`` (identifiers at ``params`` level, changes in
  ``input``, deep merge per CORE §4.5, ``if_match`` against ``_etag``/``_version``)
- DELETE: ``delete_project`` (``cascade``), ``delete_task``, ``delete_note``, ``delete_link``
- EXECUTE: ``execute_archive_completed``, ``execute_bulk_status_change`` (progress reporting)

The list and search reads are collections (:mod:`mcpaql.protocol.collections`): ``fields``
(presets or dot paths), ``query``, ``filter``, ``sort``, cursor paging (``first``/``after``,
``last``/``before``; ``limit``/``offset`` for compatibility) and ``aggregate``; they answer
``{items, pageInfo}`` (``{items, pagination}`` with ``limit``/``offset``, ``{aggregations}``
with ``aggregate``). ``list_tasks`` also offers the computed field ``_computed.priority_rank``
(0 = urgent … 3 = low) and keeps shortcut filters (``status``, ``tag``, ``assignee``…). ``get_*``
reads take ``fields`` too. With ``_protocol.conformance: level-2`` in every endpoint mode.

Sample data: a brand-new database gets one project, "Website launch", with five tasks
(one in progress, one done, one urgent todo, one blocked by the first via a ``blocks`` link,
one low-priority todo) and two notes, so the first ``list_tasks`` shows something. Pass
``seed=False`` to start empty. Nothing is created until :func:`make_adapter` is called or
the module attribute ``adapter`` is first read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .operations import make_adapter

if TYPE_CHECKING:
    from ..adapters.python import Adapter

    adapter: Adapter

__all__ = ["adapter", "make_adapter"]

_default: Any = None


def __getattr__(name: str) -> Any:
    """``adapter`` is built on first access, so importing this package creates no files."""
    global _default
    if name == "adapter":
        if _default is None:
            _default = make_adapter()
        return _default
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
