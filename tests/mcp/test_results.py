"""``structuredContent`` and the optional ``outputSchema`` (issue 15).

Every result's ``structuredContent`` is the envelope its text block carries (the text is
unchanged), and it always matches the advertised ``outputSchema``: checked with hypothesis over
every operation of the demo with arbitrary parameters, and with the official client (which
re-validates each structured result against the tool's ``outputSchema`` itself).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from mcp.client.client import Client

from aql_support import Harness
from mcpaql import Config
from mcpaql.demo import make_adapter
from mcpaql.mcp import build_server
from mcpaql.mcp.listing import listing
from mcpaql.mcp.results import ENVELOPE_OUTPUT_SCHEMA, envelope_result, structured_of, tool_result

VALIDATOR = Draft202012Validator(ENVELOPE_OUTPUT_SCHEMA)
Draft202012Validator.check_schema(ENVELOPE_OUTPUT_SCHEMA)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return make_adapter(Path(tmp_path_factory.mktemp("demo")) / "demo.db")


@pytest.fixture(scope="module")
def schema_on(demo: Any) -> Any:
    return demo.engine(Config(output_schema=True))


def test_the_schema_is_off_by_default_and_on_when_configured(demo: Any) -> None:
    assert all(t.output_schema is None for t in listing(demo.engine(Config())).tools)
    assert all(t.output_schema == ENVELOPE_OUTPUT_SCHEMA for t in listing(demo.engine(Config(output_schema=True))).tools)
    assert Config.load(env={"MCPAQL_OUTPUT_SCHEMA": "1"}).output_schema is True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_structured_result_matches_the_output_schema(schema_on: Any, data: st.DataObject) -> None:
    engine = schema_on
    op = data.draw(st.sampled_from(sorted(o.name for o in engine.operations)))
    spec = engine.compiled(op).spec
    examples = [e["request"].get("params", {}) for e in spec.examples if isinstance(e.get("request"), dict)]
    params = data.draw(
        st.one_of(
            st.sampled_from([*examples, {}]),  # mostly valid requests: successes, with their data shapes
            st.dictionaries(st.text(max_size=10), JSON, max_size=4),  # and anything at all
        )
    )
    right = engine.tool_for_family[spec.family]
    tool = data.draw(st.sampled_from([right, right, right, *(t.name for t in engine.tools)]))
    envelope = Harness(engine).call(tool, {"operation": op, "params": params})
    text, is_error = engine.render(envelope)
    result = tool_result(text, is_error)
    assert result.content[0].text == text  # type: ignore[union-attr]  # the text block as before
    assert result.structured_content == json.loads(text)
    direct = envelope_result(engine, envelope)  # what the server sends: no parse of its own text
    assert direct.content[0].text == text and direct.structured_content == json.loads(text)  # type: ignore[union-attr]
    errors = sorted(VALIDATOR.iter_errors(result.structured_content), key=str)
    assert not errors, (op, errors[0].message)
    event("success" if envelope["success"] else "failure")


@given(st.text(max_size=40) | JSON.map(json.dumps))
def test_structured_content_is_an_object_or_absent(text: str) -> None:
    value = structured_of(text)
    assert value is None or (isinstance(value, dict) and value == json.loads(text))


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_official_client_accepts_every_structured_result(demo: Any, mode: str) -> None:
    engine = demo.engine(Config(output_schema=True))
    calls = [
        ("introspect", {"query": "operations"}),
        ("list_projects", {}),
        ("get_task", {"task_id": "no-such-task"}),
        ("no_such_operation", {}),
    ]
    async with Client(build_server(engine), mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert all(t.output_schema == ENVELOPE_OUTPUT_SCHEMA for t in tools.values())
        read = next(n for n in tools if n.endswith("_read"))
        for op, params in calls:
            result = await client.call_tool(read, {"operation": op, "params": params})  # validates structuredContent
            assert result.structured_content is not None
            assert result.structured_content == json.loads(result.content[0].text)  # type: ignore[union-attr]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_structured_envelope_says_what_the_text_says_even_when_rendering_replaced_it() -> None:
    """Odd Python values, a non-JSON float and a response over the size limit: the object sent
    as ``structuredContent`` is always the envelope the text says, taken without re-parsing."""
    from mcpaql import Adapter
    from mcpaql.config import Limits

    app = Adapter("odd")

    @app.read
    def odd() -> dict[str, Any]:
        """Odd values."""
        return {"t": (1, 2), "n": None, "u": "é\u2028"}

    @app.read
    def nan() -> float:
        """Not JSON."""
        return float("nan")

    @app.read
    def big() -> str:
        """Over the limit."""
        return "x" * 1_100_000

    engine = app.engine(Config(limits=Limits(max_response_size=1_048_576)))
    for op in ("odd", "nan", "big"):
        envelope = Harness(engine).call(engine.tool_for_family["read"], {"operation": op})
        result = envelope_result(engine, envelope)
        text = result.content[0].text  # type: ignore[union-attr]
        assert result.structured_content == json.loads(text), op
        dumped = json.loads(result.model_dump_json(by_alias=True))
        assert dumped["structuredContent"] == json.loads(text), op
    assert (
        json.loads(envelope_result(engine, Harness(engine).call("odd_mcpaql_read", {"operation": "big"})).content[0].text)[  # type: ignore[union-attr]
            "error"
        ]["code"]
        == "VALIDATION_PAYLOAD_TOO_LARGE"
    )
