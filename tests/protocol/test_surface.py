"""The MCP tool surface (src/mcpaql/protocol/surface.py) and the configuration that shapes it
(src/mcpaql/config.py): names, titles, annotations, descriptions, input schemas (MCPI §2–3, §6)."""

from __future__ import annotations

import json
import re

import pytest

from aql_support import make_alt_app, make_app
from mcpaql import Adapter, Config, ConfigError
from mcpaql.protocol.listing import expand_names
from mcpaql.protocol.surface import hint

BASE_SCHEMA = {
    "type": "object",
    "properties": {
        "operation": {"type": "string"},
        "params": {"type": "object"},
    },
    "required": ["operation"],
}
ANNOTATIONS = {
    "create": (False, False),
    "read": (True, False),
    "update": (False, True),
    "delete": (False, True),
    "execute": (False, True),
}


def tools(config: Config | None = None, app: Adapter | None = None):
    return {t.name: t for t in (app or make_app()).engine(config or Config()).tools}


# ---- names ----------------------------------------------------------------------------------


def test_default_mode_is_semantic_crude_REQ_MODE_001_REQ_MODE_015_REQ_MCP_002():
    ts = tools()
    assert list(ts) == [f"tasks_mcpaql_{f}" for f in ("create", "read", "update", "delete", "execute")]
    assert [t.family for t in ts.values()] == ["create", "read", "update", "delete", "execute"]


def test_single_mode_one_tool_REQ_MODE_001_REQ_MODE_002():
    ts = tools(Config(mode="single"))
    assert list(ts) == ["tasks_mcpaql"]
    assert set(ts["tasks_mcpaql"].operations) >= {"list_tasks", "create_task", "delete_task", "introspect"}


def test_standard_tool_names_with_bare_names_REQ_MCP_006():
    ts = tools(Config.load(env={"MCPAQL_BARE_NAMES": "1", "MCP_AQL_ENDPOINT_MODE": "all"}))
    assert set(ts) == {"mcp_aql_create", "mcp_aql_read", "mcp_aql_update", "mcp_aql_delete", "mcp_aql_execute", "mcp_aql"}


def test_default_names_disambiguate_adapters_REQ_MCP_008():
    a = set(tools())
    b = set(tools(app=make_alt_app()))
    assert not a & b
    assert re.fullmatch(r"(.+_)?mcp_?aql(_[a-z0-9_]+)?", "tasks_mcpaql_read")


def test_prefix_REQ_MCP_021_REQ_MCP_022():
    ts = tools(Config(prefix="github_"))
    assert all(n.startswith("github_tasks_mcpaql_") for n in ts)
    ts = tools(Config.load(env={"MCP_AQL_TOOL_PREFIX": "gh_", "MCPAQL_BARE_NAMES": "1"}))
    assert "gh_mcp_aql_read" in ts  # the spec's own example shape: github_mcp_aql_read
    groups = [re.fullmatch(r"^(.+_)?mcp_aql(?:_([a-z0-9_]+))?$", n) for n in ts]
    assert all(g and g.group(1) == "gh_" for g in groups)  # REQ-MCP-025 client grouping regex


@pytest.mark.parametrize("prefix", ["Gh_", "gh", "gh-", "g h_", "gh__x", "_"])
def test_invalid_prefix_rejected_REQ_MCP_022(prefix):
    if re.fullmatch(r"[a-z0-9_]*_", prefix):
        Config(prefix=prefix)  # lowercase/digits/underscores ending in '_' is valid
        return
    with pytest.raises(ConfigError, match="prefix"):
        Config(prefix=prefix)


def test_prefix_priority_env_over_file_over_default_REQ_MCP_021(tmp_path):
    f = tmp_path / "mcpaql.yaml"
    f.write_text("tool_names:\n  prefix: file_\n", encoding="utf-8")
    assert Config.load(env={}).prefix == ""
    assert Config.load(file=f, env={}).prefix == "file_"
    assert Config.load(file=f, env={"MCP_AQL_TOOL_PREFIX": "env_"}).prefix == "env_"
    assert Config.load(file=f, env={"MCP_AQL_TOOL_PREFIX": "env_"}, prefix="arg_").prefix == "arg_"


def test_mode_from_environment_REQ_MODE_014():
    assert Config.load(env={"MCP_AQL_ENDPOINT_MODE": "single"}).mode == "single"
    assert Config.load(env={"MCP_AQL_ENDPOINT_MODE": " ALL "}).mode == "all"
    with pytest.raises(ConfigError, match="mode"):
        Config.load(env={"MCP_AQL_ENDPOINT_MODE": "crude"})


def test_tool_pattern_REQ_MCP_024():
    ts = tools(Config(tool_pattern="{adapter}_{endpoint}", single_pattern="{adapter}_all", mode="all"))
    assert set(ts) == {"tasks_create", "tasks_read", "tasks_update", "tasks_delete", "tasks_execute", "tasks_all"}


@pytest.mark.parametrize(
    "kw",
    [
        {"tool_pattern": "no_endpoint"},
        {"tool_pattern": "{adapter}_{endpoint}_{bogus}"},
        {"single_pattern": "{adapter}_{nope}"},
        {"mode": "crude"},
        {"allow": frozenset({"READ", "WRITE"})},
    ],
)
def test_invalid_configuration_raises_ConfigError(kw):
    with pytest.raises(ConfigError):
        Config(**kw)


def test_unknown_config_keys_rejected(tmp_path):
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"mode": "single", "colour": "blue"}), encoding="utf-8")
    with pytest.raises(ConfigError, match="colour"):
        Config.load(file=f, env={})


@pytest.mark.parametrize(
    "config",
    [
        Config(prefix="a" * 50 + "_"),  # 51 + len("tasks_mcpaql_execute") > 64
        Config(tool_pattern="Tasks-{endpoint}"),
        Config(tool_pattern="{adapter}.{endpoint}"),
    ],
)
def test_invalid_tool_names_rejected_at_startup(config):
    with pytest.raises(ConfigError, match="tool name"):
        make_app().engine(config)


def test_tool_name_of_exactly_64_chars_accepted():
    prefix = "p" * (64 - len("tasks_mcpaql_execute") - 1) + "_"
    ts = tools(Config(prefix=prefix))
    assert max(len(n) for n in ts) == 64


def test_duplicate_tool_names_rejected_REQ_MCP_008():
    with pytest.raises(ConfigError, match="twice"):
        make_app().engine(Config(mode="all", single_pattern="{adapter}_mcpaql_read"))


# ---- titles, annotations, input schema ---------------------------------------------------------


def test_titles():
    ts = tools(Config(mode="all"))
    assert ts["tasks_mcpaql_read"].title == "Task Tracker — Read"
    assert ts["tasks_mcpaql"].title == "Task Tracker — All operations"


@pytest.mark.parametrize("family", list(ANNOTATIONS))
def test_crude_annotations_REQ_MCP_009(family):
    a = tools()[f"tasks_mcpaql_{family}"].annotations
    assert (a["readOnlyHint"], a["destructiveHint"]) == ANNOTATIONS[family]
    assert a.get("idempotentHint", False) is (family == "read")  # sent only when true (MCP's default is false)
    assert a["openWorldHint"] is False  # sent: MCP's default is true


def test_single_tool_annotations_REQ_MCP_009():
    a = tools(Config(mode="single"))["tasks_mcpaql"].annotations
    assert (a["readOnlyHint"], a["destructiveHint"]) == (False, True)


def test_custom_family_annotations_follow_riskiest_operation_REQ_MCP_009():
    ts = tools(app=make_alt_app())
    assert (
        ts["inventory_mcpaql_query"].annotations["readOnlyHint"],
        ts["inventory_mcpaql_query"].annotations["destructiveHint"],
    ) == (True, False)
    assert ts["inventory_mcpaql_manage"].annotations["readOnlyHint"] is False
    assert ts["inventory_mcpaql_manage"].annotations["destructiveHint"] is True  # it holds a DELETE


def test_open_world_hint_configurable():
    assert all(hint(t.annotations, "openWorldHint") for t in tools(Config(open_world=True)).values())
    assert all(hint(t.annotations, "openWorldHint") for t in make_app(open_world=True).engine(Config()).tools)


def test_hints_equal_to_mcp_defaults_are_not_sent_REQ_MCP_009():
    """MCPI §2.3's two hints always; idempotentHint only when true, openWorldHint only when false."""
    for config in (Config(), Config(mode="all"), Config(open_world=True)):
        for t in tools(config).values():
            a = t.annotations
            assert {"title", "readOnlyHint", "destructiveHint"} <= set(a)
            assert a.get("idempotentHint", True) is True and a.get("openWorldHint", False) is False
    opened = tools(Config(open_world=True))["tasks_mcpaql_read"].annotations
    assert "openWorldHint" not in opened and opened["idempotentHint"] is True


@pytest.mark.parametrize("mode", ["semantic", "single", "all"])
def test_base_input_schema_REQ_MCP_010(mode):
    for t in tools(Config(mode=mode)).values():
        assert t.input_schema == BASE_SCHEMA


def test_operation_enum_per_family_REQ_MCP_012():
    ts = tools(Config(enumerate_operations=True, mode="all"))
    assert ts["tasks_mcpaql_delete"].input_schema["properties"]["operation"]["enum"] == ["delete_task"]
    assert "introspect" in ts["tasks_mcpaql_read"].input_schema["properties"]["operation"]["enum"]
    assert set(ts["tasks_mcpaql"].input_schema["properties"]["operation"]["enum"]) == set(ts["tasks_mcpaql"].operations)


# ---- descriptions -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["semantic", "single", "all"])
def test_every_description_references_introspect_REQ_MCP_001(mode):
    ts = tools(Config(mode=mode))
    for t in ts.values():
        assert "introspect" in t.description
        if "introspect" not in t.operations:  # the description says which tool carries it
            assert "Parameters: introspect on tasks_mcpaql_read" in t.description


def test_read_description_has_bootstrap_example_REQ_MCP_001():
    """The bootstrap call in full, as the cheapest correct path: one operation's detail."""
    d = tools()["tasks_mcpaql_read"].description
    assert 'Parameters: {"operation":"introspect","params":{"query":"operations","name":"<operation>"}}' in d


def listed(description: str, header: str = "Supported operations") -> list[str]:
    """The names a description's operation line spells, braces expanded."""
    line = next(x for x in description.splitlines() if x.startswith(header))
    return expand_names(line.split(": ", 1)[1])


@pytest.mark.parametrize("family", list(ANNOTATIONS))
def test_crude_description_template_REQ_MCP_003_REQ_MODE_019(family):
    t = tools()[f"tasks_mcpaql_{family}"]
    d = t.description
    assert listed(d) == list(t.operations)
    # This adapter writes no examples, so no example line: placeholders would teach less than the
    # operation's detail (test_examples_feed_the_quick_start shows an authored one).
    assert "Example:" not in d
    assert "Primary semantic categories" not in d  # CRUDE families are single-category


def test_alternate_family_description_template_REQ_MCP_004_REQ_MODE_019():
    ts = tools(app=make_alt_app())
    d = ts["inventory_mcpaql_manage"].description
    assert d.startswith("Change inventory data.")
    assert "Primary semantic categories: CREATE, DELETE" in d
    assert "Supported operations: create_item delete_item" in d
    q = ts["inventory_mcpaql_query"].description
    assert "Primary semantic categories: READ" in q and "introspect" in q


def test_single_description_template_REQ_MCP_005():
    d = tools(Config(mode="single"))["tasks_mcpaql"].description
    assert d.startswith("MCP-AQL Task Tracker adapter. All operations through unified entry point.")
    for line in (
        "- Create: create_task remember",
        "- Read: list_tasks get_task echo whoami introspect",
        "- Update: update_task",
        "- Delete: delete_task",
        "- Execute: run_export start_job",
    ):
        assert line in d
    assert 'Quick start: {"operation":"introspect","params":{"query":"operations","name":"<operation>"}}' in d


def test_examples_feed_the_quick_start():
    app = Adapter("ex")

    @app.create(examples=[{"item_name": "widget"}])
    def create_item(item_name: str) -> str:
        """Create."""
        return item_name

    d = app.engine(Config()).tools[0].description
    assert '{"operation":"create_item","params":{"item_name":"widget"}}' in d


def test_families_without_operations_get_no_tool_REQ_MODE_022():
    app = Adapter("ro")

    @app.read
    def list_things() -> list:
        """List."""
        return []

    assert [t.name for t in app.engine(Config()).tools] == ["ro_mcpaql_read"]


def test_alternate_family_names_discoverable_REQ_MCP_007():
    app = make_alt_app()
    eng = app.engine(Config())
    assert {t.name for t in eng.tools} == {"inventory_mcpaql_query", "inventory_mcpaql_manage"}
    assert eng.introspector.protocol("s")["endpoints"] == {
        "query": "inventory_mcpaql_query",
        "manage": "inventory_mcpaql_manage",
    }


def test_adapter_names_are_snake_cased_in_tool_names():
    app = Adapter("my-shop")

    @app.read
    def list_items() -> list:
        """List."""
        return []

    assert [t.name for t in app.engine(Config()).tools] == ["my_shop_mcpaql_read"]


def test_allowed_categories_from_environment_REQ_MODE_009():
    cfg = Config.load(env={"MCPAQL_ALLOW": "read, create", "MCP_AQL_ENDPOINT_MODE": "single"})
    assert cfg.allow == frozenset({"READ", "CREATE"})
    assert set(tools(cfg)["tasks_mcpaql"].operations) == {
        "list_tasks",
        "get_task",
        "echo",
        "whoami",
        "create_task",
        "remember",
        "introspect",
    }


def test_REQ_MCP_023_long_prefix_is_warned_about_once(caplog):
    with caplog.at_level("WARNING", logger="mcpaql.surface"):
        tools(Config(prefix="a_very_long_domain_prefix_"))
        tools(Config(prefix="a_very_long_domain_prefix_"))
        tools(Config(prefix="gh_"))
    warned = [r for r in caplog.records if "advises a short prefix" in r.getMessage()]
    assert len(warned) == 1 and "a_very_long_domain_prefix_" in warned[0].getMessage()
