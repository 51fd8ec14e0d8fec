"""The wire checks in front of the SDK (mcpaql.mcp.framing): line framing with a bound,
strict UTF-8, and answers addressed to the right request — as properties over arbitrary bytes."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpaql.config import Limits
from mcpaql.mcp.framing import (
    PREFIX_BYTES,
    Line,
    LineFramer,
    Overlong,
    line_limit,
    refuse_frame,
    request_identity,
)
from mcpaql.mcp.stdio_pipes import AnswerLedger

lines_st = st.lists(st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")), max_size=12)


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@settings(max_examples=300, deadline=None)
@given(
    lines=lines_st,
    cuts=st.lists(st.integers(min_value=0), max_size=8),
    limit=st.integers(min_value=1, max_value=80),
    trailing=st.booleans(),
)
def test_framer_splits_like_lines_whatever_the_chunking(lines: list[bytes], cuts: list[int], limit: int, trailing: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if trailing and lines else b"")
    framer = LineFramer(limit)
    frames = [f for chunk in chunked(data, cuts) for f in framer.feed(chunk)] + framer.eof()
    expected = data.split(b"\n")
    if expected and expected[-1] == b"":
        expected.pop()
    assert len(frames) == len(expected)
    for frame, line in zip(frames, expected, strict=True):
        if len(line) > limit:
            assert isinstance(frame, Overlong) and frame.size == len(line)
            assert frame.prefix == line[: min(PREFIX_BYTES, len(frame.prefix))] and len(frame.prefix) <= PREFIX_BYTES
        else:
            assert frame == Line(line.removesuffix(b"\r"))


def test_framer_never_holds_more_than_the_limit_of_a_long_line() -> None:
    framer = LineFramer(1000)
    for _ in range(100):
        assert framer.feed(b"x" * 999) == []
        assert len(framer._buf) <= 1000 + 999
    (frame,) = framer.feed(b"\n")
    assert isinstance(frame, Overlong) and frame.size == 99_900


def test_line_limit_leaves_room_for_the_worst_json_escaping() -> None:
    limits = Limits()
    assert line_limit(limits) == 6 * limits.max_request_size + 64 * 1024


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=300))
def test_request_identity_never_raises_on_garbage(raw: bytes) -> None:
    rid, method = request_identity(raw)
    assert rid is None or isinstance(rid, int | str)
    assert method is None or isinstance(method, str)


@settings(max_examples=200, deadline=None)
@given(
    rid=st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=20)),
    bad=st.sampled_from([b"\xff", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf0\x9f\x98", b"\x80"]),
    method=st.sampled_from(["tools/call", "tools/list", "initialize"]),
)
def test_invalid_utf8_is_refused_and_answered_to_its_id(rid: int | str, bad: bytes, method: str) -> None:
    """REQ-VAL-023: overlong forms, bad continuations, surrogates, truncated sequences."""
    head = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method}).encode()[:-1]
    raw = head + b',"params":{"name":"t","arguments":{"q":"' + bad + b'"}}}'
    refused = refuse_frame(Line(raw), 10_000)
    assert refused is not None
    error, answer = refused
    assert error.code == "VALIDATION_INVALID_ENCODING" and error.message == "Invalid character encoding in request"
    assert error.details["byte_offset"] == raw.index(bad)
    assert answer is not None and answer["id"] == rid
    if method == "tools/call":
        envelope = json.loads(answer["result"]["content"][0]["text"])
        assert answer["result"]["isError"] is True
        assert envelope == {"success": False, "error": error.to_error()}
    else:
        assert answer["error"]["code"] == -32700 and answer["error"]["data"]["code"] == "VALIDATION_INVALID_ENCODING"


def test_an_overlong_line_is_answered_from_its_prefix() -> None:
    raw = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"q":"' + b"a" * 5000
    error, answer = refuse_frame(Overlong(raw[:PREFIX_BYTES], 9_000_000), 1000) or (None, None)
    assert error is not None and error.code == "VALIDATION_PAYLOAD_TOO_LARGE"
    assert error.details == {"limit_type": "request_size", "limit_value": 1000, "actual_value": 9_000_000, "unit": "bytes"}
    assert answer is not None and answer["id"] == 7 and answer["result"]["isError"] is True
    assert refuse_frame(Overlong(b"\xff" * 100, 5000), 1000)[1] is None  # type: ignore[index]  # nobody to answer
    assert refuse_frame(Line(b'{"jsonrpc":"2.0","id":1,"method":"ping"}'), 1000) is None  # well-formed: passed on


class Msg:
    def __init__(self, **kw: object) -> None:
        self.__dict__.update(kw)


class Item:
    def __init__(self, **kw: object) -> None:
        self.message = Msg(**kw)


@pytest.mark.anyio
async def test_answer_ledger_counts_requests_answers_and_cancellations() -> None:
    ledger = AnswerLedger()
    ledger.inbound(Item(method="tools/call", id=1))
    ledger.inbound(Item(method="tools/call", id="1"))  # a string id is another request
    ledger.inbound(Item(method="notifications/initialized"))
    assert ledger.pending == 2
    ledger.outbound(Item(id=1, result={}))
    ledger.outbound(Item(method="notifications/progress"))
    assert ledger.pending == 1
    ledger.inbound(Item(method="notifications/cancelled", params={"requestId": "1"}))
    assert ledger.pending == 0
    await ledger.drained(timeout=1)


def test_a_2026_request_gets_a_result_with_result_type() -> None:
    """2026-07-28 results must carry ``resultType``; the handshake era's do not need it."""
    meta = b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}'
    raw = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{' + meta + b',"name":"t","arguments":{"q":"\xff"}}}'
    _, modern = refuse_frame(Line(raw), 10_000) or (None, None)
    _, legacy = refuse_frame(Line(raw.replace(meta + b",", b"")), 10_000) or (None, None)
    assert modern is not None and modern["result"]["resultType"] == "complete"
    assert legacy is not None and "resultType" not in legacy["result"]
