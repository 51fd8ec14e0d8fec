"""Upstream error text made safe and short enough for a model to act on.

An upstream's error — an HTTP API's response body, a wrapped MCP tool's ``isError`` text — is
written for its own operators: it may be a whole HTML 502 page, carry a stack trace with server
file paths, or echo the credential it was sent. :func:`summarise` keeps what the model needs (what
went wrong, in the upstream's words) and drops the rest, in this order:

1. configured secrets are redacted (:class:`Redactor`: the value, its token part, and their
   URL/base64/JSON/HTML encodings) — before anything is cut, so no half-secret survives a clip;
2. traces go: Python ``Traceback`` blocks and ``File "…", line N`` lines, JavaScript/Java
   ``at …(file:line)`` frames;
3. HTML is reduced to its text (``<script>``/``<style>`` dropped, the ``<title>`` kept first);
4. JSON bodies lose keys that carry diagnostics (``trace``, ``stack``, ``exception``…) and are
   rendered compactly;
5. file paths are replaced by ``…``: Windows and ``file://`` paths, POSIX paths under a system
   root (``/srv/``, ``/home/``, ``/usr/``…) or naming a source file (``.py``, ``.js``…). A path the
   caller itself passed in the call's arguments is kept: the model already knows it and needs it
   to understand ``no such file``;
6. object reprs (``<WriteUnixTransport closed=True … 0x7f…>``) become ``…``;
7. secrets once more (decoding HTML/JSON or collapsing whitespace can reveal one), then clipped.
"""

from __future__ import annotations

import base64
import html
import json
import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"
PREVIEW = 300
MAX_INPUT = 16_384  # what is looked at: a preview needs no more, and the patterns stay cheap
MIN_SECRET = 4  # shorter values would match everywhere; they are not treated as secrets
_AUTH_SCHEMES = {"bearer", "basic", "token", "digest", "apikey", "api-key", "key", "sso-key"}

_PY_TRACE = re.compile(r"^[ \t]*Traceback \(most recent call last\):[^\n]*(?:\n[ \t]+[^\n]*)*", re.M)
_PY_FRAME = re.compile(r"^([ \t]*)File \"[^\"\n]*\", line \d+[^\n]*(?:\n\1[ \t]+[^\n]*)?", re.M)
_FRAME_END = re.compile(r"(:\d+(:\d+)?\)?|\((Native Method|Unknown Source|native)\))\s*$")
_TRACE_INLINE = re.compile(
    r"(Traceback \(most recent call last\):?|File \\?\"[^\"\n]*?\\?\", line \d+(?:, in \S+)?|"
    r"\bFile (?:/|[A-Za-z]:\\)\S+(?:,? line \d+)?)"
)
_WIN_PATH = re.compile(r"(?<![\w/])(?:[A-Za-z]:\\|\\\\[\w.$-]+\\)[^\s'\"<>|,;:]*")
_FILE_URI = re.compile(r"\bfile://[^\s'\"<>]*")
_ROOTS = (
    "srv|home|usr|var|opt|tmp|etc|app|apps|root|Users|private|mnt|data|workspace|workspaces|code|src|lib|"
    "lib64|proc|run|nix|snap|sys|bin|sbin|builds|github|Library|Volumes|System"
)
_POSIX_PATH = re.compile(rf"(?<![\w:/.\-~%])(?:~|/(?:{_ROOTS}))(?:/[^\s/'\"<>()\[\]{{}},;:]*)+")
_SOURCE_PATH = re.compile(
    r"(?<![\w:/.\-~%])/[^\s'\"<>()\[\]{},;:]*\.(?:py|pyc|js|mjs|cjs|ts|tsx|jsx|rb|java|go|php|cs|"
    r"rs|pl|so|dll|jar|class|kt|swift|ex|exs|erl|c|cc|cpp|h)\b(?::\d+(?::\d+)?)?"
)
_OBJECT_REPR = re.compile(r"<[A-Za-z_][\w.]*(?: [^<>\n]{0,300}?)?\b(?:at )?0x[0-9a-fA-F]+\s*>")
_HTML = re.compile(r"<\s*(html|!doctype|body|head|div|p|h1|title|pre|center|table)\b", re.I)
_DROP_ELEMENTS = re.compile(r"<(script|style|head)\b[^>]*>.*?</\1\s*>", re.I | re.S)
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.I | re.S)
_TAG = re.compile(r"<[^>]*>")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_DIAGNOSTIC_KEY = re.compile(
    r"^_?(stack_?trace|stack|trace|traceback|back_?trace|exception|exc_info|debug|file(_?name)?|"
    r"line(no|_?number)?|frames)$",
    re.I,
)


class Redactor:
    """Replaces configured secrets, and the encodings they commonly come back in, with ``[REDACTED]``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for secret in secrets:
            for part in _secret_parts(secret):
                forms.update(_encodings(part))
        self.forms = sorted((f for f in forms if len(f) >= MIN_SECRET), key=len, reverse=True)
        self._re = re.compile("|".join(map(re.escape, self.forms))) if self.forms else None

    def __bool__(self) -> bool:
        return self._re is not None

    def __call__(self, text: str) -> str:
        return self._re.sub(REDACTED, text) if self._re is not None else text


def _secret_parts(value: str) -> list[str]:
    """The value, plus its credential part (``Bearer abc`` → ``abc``; Basic → user:password, password)."""
    value = value.strip()
    parts = [value]
    scheme, _, rest = value.partition(" ")
    if rest and scheme.lower() in _AUTH_SCHEMES:
        rest = rest.strip()
        parts.append(rest)
        if scheme.lower() == "basic":
            try:
                decoded = base64.b64decode(rest, validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                decoded = ""
            if decoded:
                parts += [decoded, decoded.partition(":")[2]]
    return [p for p in parts if len(p) >= MIN_SECRET]


def _encodings(s: str) -> set[str]:
    raw = s.encode("utf-8")
    b64 = base64.b64encode(raw).decode("ascii")
    url64 = base64.urlsafe_b64encode(raw).decode("ascii")
    quoted = urllib.parse.quote(s, safe="")
    return {
        s,
        quoted,
        quoted.lower(),
        urllib.parse.quote_plus(s),
        b64,
        b64.rstrip("="),
        url64,
        url64.rstrip("="),
        json.dumps(s)[1:-1],
        html.escape(s),
        raw.hex(),
    }


def strip_traces(text: str) -> str:
    """Stack-trace lines and inline ``File "…", line N`` references removed."""
    text = _PY_FRAME.sub("", _PY_TRACE.sub("", text))
    lines = [ln for ln in text.split("\n") if not (ln.lstrip().startswith("at ") and _FRAME_END.search(ln))]
    return _TRACE_INLINE.sub("", "\n".join(lines))


def html_text(text: str) -> str:
    """The readable text of an HTML page: its title first, scripts and styles dropped."""
    title = _TITLE.search(text)
    body = _TAG.sub(" ", _DROP_ELEMENTS.sub(" ", _COMMENT.sub(" ", text)))
    out = html.unescape(body)
    if title:
        t = " ".join(html.unescape(_TAG.sub(" ", title.group(1))).split())
        out = t + ": " + out if t and t not in " ".join(out.split())[: len(t) + 40] else out
    return out


def _json_summary(text: str) -> str | None:
    """A JSON body (possibly followed by more text) without its diagnostic keys, compactly."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        value, end = json.JSONDecoder().raw_decode(stripped)
    except ValueError:
        return None
    rest = strip_traces(stripped[end:]).strip()
    out = json.dumps(_without_diagnostics(value), ensure_ascii=False, separators=(",", ":"))
    return f"{out} {rest}" if rest else out


def _without_diagnostics(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_diagnostics(v) for k, v in value.items() if not _DIAGNOSTIC_KEY.search(str(k))}
    if isinstance(value, list):
        return [_without_diagnostics(v) for v in value]
    if isinstance(value, str):
        return strip_traces(value)
    return value


def strip_paths(text: str, keep: Iterable[str] = ()) -> str:
    """File paths replaced by ``…``, except those in ``keep`` (the call's own arguments)."""
    kept = {k for k in keep if k}

    def sub(m: re.Match[str]) -> str:
        path = m.group(0)
        return path if path in kept or path.rstrip(".'\"") in kept else "…"

    for pattern in (_FILE_URI, _WIN_PATH, _SOURCE_PATH, _POSIX_PATH):
        text = pattern.sub(sub, text)
    return text


def summarise(text: str, *, redact: Redactor | None = None, keep: Iterable[str] = (), limit: int = PREVIEW) -> str:
    """``text`` as a short, safe preview (see the module docstring for the steps)."""
    redact = redact or Redactor()
    text = redact(text)[:MAX_INPUT]  # redacted before the cut, so no half-secret is left at the edge
    if _HTML.search(text):
        text = html_text(text)
    text = _json_summary(text) or strip_traces(text)
    text = " ".join(_OBJECT_REPR.sub("…", text).split())[: limit * 4]  # only the start can be shown
    text = redact(" ".join(strip_paths(redact(text), keep).split()))  # collapsing can rejoin a spaced secret
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def argument_strings(arguments: Any) -> list[str]:
    """Every string inside a call's arguments (what :func:`strip_paths` may keep)."""
    out: list[str] = []
    stack = [arguments]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            stack.extend(v)
    return out


__all__ = ["REDACTED", "Redactor", "argument_strings", "html_text", "strip_paths", "strip_traces", "summarise"]
