"""Offline token counting (o200k_base via ``bpe_openai``, a tiktoken-compatible tokenizer).

What a model "sees" of a tool is its JSON definition: name, title, description,
inputSchema (and outputSchema) plus annotations. Vendor extras that hosts do not forward to
the model (``icons``, ``_meta``, ``execution``) are left out, so numbers are comparable
between a discrete server and its wrapped surface. Nothing here touches the network.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

ENCODING = "o200k_base"

# The fields of a Tool that a host serialises into the model's context.
MODEL_VISIBLE_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


@lru_cache(maxsize=4)
def _encoding(name: str = ENCODING) -> Any:
    import warnings

    import bpe_openai

    with warnings.catch_warnings():  # bpe_openai loads its data with a deprecated importlib API
        warnings.simplefilter("ignore", DeprecationWarning)
        enc = bpe_openai.get_encoding(name)
        enc.encode_ordinary("warm up")  # the data is loaded lazily, on first use
        return enc


def count_text(text: str, encoding: str = ENCODING) -> int:
    """Tokens in a string (special-token text is counted as ordinary text)."""
    if not text:
        return 0
    return len(_encoding(encoding).encode_ordinary(text))


def dumps(obj: Any) -> str:
    """The canonical JSON form counted everywhere: compact separators, UTF-8 kept as-is."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def count_json(obj: Any, encoding: str = ENCODING) -> int:
    """Tokens in the compact JSON serialisation of ``obj``."""
    return count_text(dumps(obj), encoding)


def model_view(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The part of one tools/list entry the model sees (icons, _meta and execution dropped)."""
    return {k: tool[k] for k in MODEL_VISIBLE_FIELDS if k in tool and tool[k] is not None}


def tools_of(tools_list: Any) -> list[dict[str, Any]]:
    """Accept a ``tools/list`` result (``{"tools": [...]}``), a bare list, or ToolDef-like objects."""
    if isinstance(tools_list, Mapping):
        tools_list = tools_list.get("tools", [])
    out: list[dict[str, Any]] = []
    for t in tools_list:
        out.append(t if isinstance(t, Mapping) else tooldef_json(t))  # type: ignore[arg-type]
    return out


def tooldef_json(t: Any) -> dict[str, Any]:
    """A :class:`mcpaql.protocol.surface.ToolDef` as the JSON tools/list would carry it."""
    return {
        "name": t.name,
        "description": t.description,
        "inputSchema": t.input_schema,
        "annotations": t.annotations,
    }


def count_tool(tool: Mapping[str, Any], encoding: str = ENCODING) -> int:
    return count_json(model_view(tool), encoding)


def count_tools(tools_list: Any, encoding: str = ENCODING) -> int:
    """Tokens of a whole tools/list as the model sees it: the JSON array of model views."""
    return count_json([model_view(t) for t in tools_of(tools_list)], encoding)


def per_tool(tools_list: Iterable[Any], encoding: str = ENCODING) -> dict[str, int]:
    return {t["name"]: count_tool(t, encoding) for t in tools_of(tools_list)}
