"""Offline token counting (o200k_base via ``bpe_openai``, a tiktoken-compatible tokenizer).

What a model "sees" of a tool is its JSON definition: name, title, description,
inputSchema (and outputSchema) plus annotations. Vendor extras that hosts do not forward to
the model (``icons``, ``_meta``, ``execution``) are left out, so numbers are comparable
between a discrete server and its wrapped surface. Nothing here touches the network.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
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


# The tokenizer refuses inputs of a million characters or more ("Input too long to encode
# safely"); a large surface (GitHub's REST description as discrete tools: tens of MB) is counted
# in chunks below that.
CHUNK_CHARS = 200_000  # also under its 200,000-token limit per call: a token is at least one character
# A chunk ends before a space that sits between two ASCII letters: the pre-tokenizer always ends a
# word there and starts the next piece (" word") with that space, so counts add up exactly.
_SAFE_CUT = re.compile(r"(?<=[A-Za-z]) (?=[A-Za-z])")


def count_text(text: str, encoding: str = ENCODING, *, chunk: int = CHUNK_CHARS) -> int:
    """Tokens in a string (special-token text is counted as ordinary text), of any length."""
    if not text:
        return 0
    enc = _encoding(encoding)
    total = 0
    for piece in chunks(text, chunk):
        total += len(enc.encode_ordinary(piece))
    return total


def chunks(text: str, size: int = CHUNK_CHARS) -> Iterator[str]:
    """``text`` in pieces of at most ``size`` characters, each cut at the last place in the piece
    where tokenization is unaffected (see ``_SAFE_CUT``); a piece with no such place (no prose at
    all) is cut at ``size``, and then the count can differ by a token or two at that cut."""
    start, n = 0, len(text)
    while n - start > size:
        end = start + size
        cut = None
        for lo in (end - size // 8, start + 1):  # look near the end first, then anywhere in the piece
            for m in _SAFE_CUT.finditer(text, max(lo, start + 1), end):
                cut = m.start()
            if cut is not None:
                break
        end = cut if cut is not None and cut > start else end
        yield text[start:end]
        start = end
    yield text[start:]


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
