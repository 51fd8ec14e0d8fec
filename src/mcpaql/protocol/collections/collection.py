"""The author switch: :class:`Collection` turns an operation into a collection (or item)
operation that gets field selection, querying, pagination and aggregation for free.

:func:`apply_collection` takes any :class:`OperationSpec` (from any backend) and returns a new
one whose parameters include the standard controls (so validation and introspection see
them with full type information), whose description states the pagination style, filter keys
and sort fields (Part F #5: the closed OperationDetails schema has no other home for them), and
whose handler is wrapped: controls are parsed and validated *before* the author's handler
runs; the handler returns an iterable of records (dicts, pydantic models, dataclasses) or a
:class:`QueryBackend` that takes the whole normalized :class:`CollectionQuery` (pushdown, e.g.
SQL); the shaping happens after it. Nothing here touches I/O or global state.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..context import Context
from ..errors import internal_error
from ..operations import OperationSpec, ParamSpec, TypeRef, TypeSpec
from ..registry import SchemaError
from ..schema import parameter_info, pascal
from ..session import Session
from ..warnings import deprecation, param_ignored
from ..workers import in_worker
from .aggregate import AggregateExpr, AggregationSupport, Aggregator, parse_aggregate
from .computed import Computed, ComputedValues, normalize
from .fields import (
    COMPUTED_PREFIX,
    MISSING,
    FieldSelector,
    Projection,
    as_record,
    fields_schema,
    get_path,
    plain,
)
from .pagination import (
    HARD_MAX_PAGE_SIZE,
    PageRequest,
    codec_for,
    invalid_cursor,
    offset_info,
    page_info,
    parse_page,
)
from .query import (
    OPERATORS,
    Condition,
    SortKey,
    TextQuery,
    compile_predicate,
    compile_text,
    order_key,
    parse_filter,
    parse_sort,
    parse_text,
)
from .streaming import Desc, directional, natural_page, sorted_page

CTX_KEY = "_mcpaql_ctx"
MODES = ("list", "search", "item")


@dataclass(frozen=True)
class Collection:
    """Per-operation declaration of what clients may do with the records it returns.

    ``fields``: known field paths (derived from the item model when omitted; ``None`` and no
    model → names are not validated). ``presets``: ``minimal``/``standard``/custom name →
    paths (``full`` is always everything). ``mode``: ``list`` | ``search`` | ``item``
    (inferred: ``search_*`` → search); it sets the default preset (item → full, list →
    standard, search → minimal; FS §3.2). ``key``: a unique field used as the ordering
    tie-breaker. ``filterable``: field names (all operators) or ``{field: [operators]}``.
    ``aggregate``: ``True`` (derived support) or an :class:`AggregationSupport`.
    """

    fields: Sequence[str] | None = None
    presets: Mapping[str, Sequence[str]] = field(default_factory=dict)
    default_fields: str | None = None
    mode: str | None = None
    key: str | None = None
    searchable: Sequence[str] = ()
    filterable: Sequence[str] | Mapping[str, Sequence[str]] = ()
    sortable: Sequence[str] = ()
    default_sort: Sequence[Mapping[str, str] | str] = ()
    page_size: int = 20
    max_page_size: int = 100
    clamp: bool = True
    offset: bool = True
    total_count: bool = True
    aggregate: bool | AggregationSupport = False
    computed: Mapping[str, Computed | Callable[[dict[str, Any]], Any]] = field(default_factory=dict)
    preset_alias: bool = False
    require_query: bool = False


def Item(**options: Any) -> Collection:
    """Field selection (and computed fields) for an operation returning one record."""
    return Collection(mode="item", **options)


# ---- pushdown ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CollectionQuery:
    """Everything a request asked of a collection, validated and normalized.

    ``sort`` is the client's (or default) sort; ``tiebreak`` names the unique key field (or
    ``None``: position). ``page.after``/``page.before`` are decoded cursor keysets:
    ``[*sort values, tiebreak value]``. ``page`` is ``None`` in summary-only aggregation.
    """

    operation: str
    text: TextQuery | None
    filter: tuple[Condition, ...]
    sort: tuple[SortKey, ...]
    tiebreak: str | None
    page: PageRequest | None
    projection: Projection
    aggregate: tuple[AggregateExpr, ...]
    include_items: bool
    want_total: bool


@dataclass(slots=True)
class QueryResult:
    """What a pushdown backend returns: the page of records plus what it knows about the rest."""

    items: Sequence[Any] = ()
    has_next: bool = False
    has_previous: bool = False
    total_count: int | None = None
    aggregations: dict[str, Any] | None = None
    keys: Sequence[list[Any]] | None = None
    """Optional cursor keyset per item (JSON values, as many as the query's cursors carry):
    for a backend whose default order is not a client sort, e.g. SQL ``ORDER BY`` expressions
    plus ``rowid``, so that its cursors are keyset positions too. Without it, cursors carry
    the sort values and the key field read from the items (or the item's offset)."""


@runtime_checkable
class QueryBackend(Protocol):
    """Return one of these from a collection handler to take the whole query (filter, sort,
    page window, projection hints, aggregates) instead of handing over every record.

    ``execute_query`` returns a :class:`QueryResult` (or an awaitable of one); a backend that
    cannot express a particular query (an operand its query language cannot compare exactly)
    returns an iterable of records instead, and the shared layer answers it in Python with
    the same semantics, streaming."""

    def execute_query(self, query: CollectionQuery) -> Any:  # QueryResult | Awaitable[QueryResult]
        ...


# ---- registration --------------------------------------------------------------------------


def item_schema_for(tp: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON schema and name of the record type behind a return annotation (``Task``,
    ``list[Task]``, ``Iterable[Task]``, ``Iterator[Task]`` …), or ``(None, None)``."""
    import typing

    from pydantic import BaseModel, TypeAdapter

    if tp is None or tp is inspect.Signature.empty:
        return None, None
    inner = tp
    args = typing.get_args(tp)
    if typing.get_origin(tp) is not None and args:
        inner = args[0]
    if inner is type(None) or inner is Any:
        return None, None
    name = inner.__name__ if isinstance(inner, type) and issubclass(inner, BaseModel) else None
    try:
        schema = TypeAdapter(inner).json_schema()
    except Exception:
        return None, None
    if schema.get("type") != "object" and "properties" not in schema:
        return None, None
    return schema, name


def _numeric_fields(item_schema: Mapping[str, Any] | None) -> list[str]:
    out = []
    for name, s in ((item_schema or {}).get("properties") or {}).items():
        types = {s.get("type")} | {v.get("type") for v in s.get("anyOf") or () if isinstance(v, dict)}
        if types & {"integer", "number"}:
            out.append(name)
    return out


def _schema_fields(item_schema: Mapping[str, Any] | None) -> list[str] | None:
    props = (item_schema or {}).get("properties")
    return list(props) if isinstance(props, dict) and props else None


def _bad(op: str, message: str) -> SchemaError:
    return SchemaError("SCHEMA_INVALID_TYPE", f"operation '{op}': {message}")


class CollectionRuntime:
    """The compiled form of a :class:`Collection` for one operation."""

    def __init__(self, spec: OperationSpec, coll: Collection, item_schema: Mapping[str, Any] | None = None) -> None:
        op = spec.name
        self.operation = op
        self.coll = coll
        mode = coll.mode or ("search" if op.startswith("search_") else "list")
        if mode not in MODES:
            raise _bad(op, f"collection mode must be one of {', '.join(MODES)}")
        self.mode = mode
        try:
            self.computed = normalize(coll.computed)
        except ValueError as e:
            raise _bad(op, str(e)) from None
        known = list(coll.fields) if coll.fields is not None else _schema_fields(item_schema)
        self.known = known
        key = coll.key
        if key is None and known:
            key = "id" if "id" in known else next((f for f in known if f.endswith("_id")), None)
        self.key = key
        default = coll.default_fields or {"item": "full", "list": "standard", "search": "minimal"}[mode]
        try:
            self.selector = FieldSelector(known, coll.presets, default, self.computed, key)
        except ValueError as e:
            raise _bad(op, str(e)) from None
        self.ctx_param = spec.context_param
        self.original = spec.handler
        self.original_async = spec.is_async
        if mode == "item":
            self.filterable: dict[str, tuple[str, ...]] = {}
            self.sortable: list[str] = []
            self.searchable: list[str] = []
            self.support: AggregationSupport | None = None
            return
        self.searchable = list(coll.searchable)
        if isinstance(coll.filterable, Mapping):
            filterable = {k: tuple(v) for k, v in coll.filterable.items()}
        else:
            filterable = {k: OPERATORS for k in coll.filterable}
        for name, c in self.computed.items():
            if c.filterable:
                filterable.setdefault(COMPUTED_PREFIX + name, OPERATORS)
        for ops in filterable.values():
            bad_ops = [o for o in ops if o not in OPERATORS]
            if bad_ops:
                raise _bad(op, f"filter operators {bad_ops} are not supported (use {', '.join(OPERATORS)})")
        self.filterable = filterable
        sortable = list(coll.sortable)
        sortable += [COMPUTED_PREFIX + n for n, c in self.computed.items() if c.sortable and COMPUTED_PREFIX + n not in sortable]
        self.sortable = sortable
        checks = (
            ("filterable", list(filterable)),
            ("sortable", sortable),
            ("searchable", self.searchable),
            ("key", [key] if key else []),
        )
        for what, names in checks:
            unknown = [n for n in names if not self.selector.is_known(n)]
            if unknown:
                raise _bad(op, f"{what} field(s) {unknown} are not among the known fields")
        if coll.page_size < 1 or coll.max_page_size < coll.page_size or coll.max_page_size > HARD_MAX_PAGE_SIZE:
            raise _bad(op, f"need 1 <= page_size <= max_page_size <= {HARD_MAX_PAGE_SIZE}")
        self.default_sort = tuple(
            parse_sort(
                {"field": s.lstrip("-"), "order": "desc" if s.startswith("-") else "asc"} if isinstance(s, str) else dict(s),
                None,
                [*sortable, *(known or ()), *([key] if key else [])],
            )[0]
            for s in coll.default_sort
        )
        agg = coll.aggregate
        if agg is True:
            numeric = [f for f in _numeric_fields(item_schema) if not known or f in known]
            agg = AggregationSupport(
                groupable_fields=tuple(k for k in filterable if not k.startswith(COMPUTED_PREFIX)),
                numeric_fields=tuple(numeric),
                comparable_fields=tuple(s for s in sortable if s not in numeric and not s.startswith(COMPUTED_PREFIX)),
            )
        self.support = agg or None

    # ---- what the operation advertises -----------------------------------------------------

    def params(self) -> list[ParamSpec]:
        sel = self.selector
        custom = [n for n in sel.presets if n not in ("minimal", "standard", "full")]
        desc = (
            f"Preset ({'|'.join(sel.presets)}) or field paths (dot notation for nested fields"
            + (f"; computed: {', '.join(COMPUTED_PREFIX + c for c in self.computed)}" if self.computed else "")
            + ")"
        )
        shown = {n: sel.presets[n] for n in ("minimal", "standard", *custom) if sel.presets.get(n) is not None}
        if shown:
            desc += ". Presets: " + "; ".join(f"{n} = {', '.join(p or ())}" for n, p in shown.items())
        if sel.known is not None:
            desc += f". Field names: type {self.field_type_name}"
        out = [ParamSpec("fields", {**fields_schema(sel), "default": sel.default}, description=desc)]
        if self.coll.preset_alias:
            out.append(
                ParamSpec(
                    "preset",
                    {"type": "string", "enum": sel.preset_names},
                    description="Deprecated alias for 'fields: <preset>'; a 'fields' list extends it",
                )
            )
        if self.mode == "item":
            return out
        c = self.coll
        if self.coll.require_query and not self.searchable:
            raise _bad(self.operation, "require_query needs searchable fields")
        if self.searchable:
            out.append(
                ParamSpec(
                    "query",
                    {"type": "string", "maxLength": 1000},
                    required=self.coll.require_query,
                    description=f"Free-text search over {', '.join(self.searchable)}: words match with OR semantics, "
                    '"quoted phrases" match exactly, case-insensitive',
                )
            )
        if self.filterable:
            out.append(
                ParamSpec(
                    "filter",
                    {"type": "object", "additionalProperties": True},
                    description=f"Structured filters (keys: {', '.join(self.filterable)}). A value means equality "
                    f"(membership for array fields) or an operator object ({', '.join(OPERATORS)}); keys combine with AND",
                )
            )
        if self.sortable:
            sort_obj = {
                "type": "object",
                "properties": {
                    "field": {"type": "string", "enum": list(self.sortable)},
                    "order": {"type": "string", "enum": ["asc", "desc"], "default": "asc"},
                },
                "required": ["field"],
                "additionalProperties": False,
                "x-mcpaql-type": self.sort_type_name,
            }
            out.append(
                ParamSpec(
                    "sort",
                    {"anyOf": [sort_obj, {"type": "array", "items": sort_obj, "minItems": 1, "maxItems": 5}, {"type": "string"}]},
                    description=f"Sort object {{field, order}} or an array of them (multi-key, stable); fields: "
                    f"{', '.join(self.sortable)}. Compatibility: a field name plus 'order'",
                )
            )
            out.append(
                ParamSpec(
                    "order",
                    {"type": "string", "enum": ["asc", "desc"]},
                    description='Compatibility: order for the shortcut form sort: "<field>"',
                )
            )
        size: dict[str, Any] = {"type": "integer", "minimum": 0}
        if not c.clamp:
            size["maximum"] = c.max_page_size
        over = "larger values are clamped with a warning" if c.clamp else "larger values are rejected"
        out += [
            ParamSpec(
                "first",
                {**size, "default": c.page_size},
                description=f"Page size, forward (default {c.page_size}, max {c.max_page_size}; {over})",
            ),
            ParamSpec(
                "after",
                {"type": "string", "maxLength": 4096},
                description="Opaque cursor (pageInfo.endCursor) to continue after; requires 'first'",
            ),
            ParamSpec("last", size, description=f"Page size counting back from the end or from 'before' (max {c.max_page_size})"),
            ParamSpec(
                "before",
                {"type": "string", "maxLength": 4096},
                description="Opaque cursor (pageInfo.startCursor) to page back before; requires 'last'",
            ),
        ]
        if c.offset:
            out += [
                ParamSpec(
                    "limit", size, description="Compatibility offset pagination: page size (not with first/after/last/before)"
                ),
                ParamSpec(
                    "offset", {"type": "integer", "minimum": 0}, description="Compatibility offset pagination: items to skip"
                ),
            ]
        if self.support is not None:
            s = self.support
            out += [
                ParamSpec(
                    "aggregate",
                    {"type": "object", "additionalProperties": {"type": "object"}, "maxProperties": 20},
                    description="Named aggregations {label: {count: true, group_by: <field>, sum|avg|min|max: <field>}}; "
                    f"group_by fields: {', '.join(s.groupable_fields) or '(none)'}; "
                    f"numeric fields: {', '.join(s.numeric_fields) or '(none)'}. Applied after query and filter",
                ),
                ParamSpec(
                    "include_items",
                    {"type": "boolean", "default": False},
                    description="With 'aggregate': also return the (paginated) items",
                ),
            ]
        return out

    @property
    def sort_type_name(self) -> str:
        return pascal(self.operation, "sort")

    @property
    def field_type_name(self) -> str:
        return pascal(self.operation, "field")

    def types(self) -> list[TypeSpec]:
        out: list[TypeSpec] = []
        if self.selector.known is not None:
            # FS §5.3: the selectable fields, discoverable through ``introspect types``.
            out.append(
                TypeSpec(
                    self.field_type_name,
                    "enum",
                    f"Field paths accepted by {self.operation}'s 'fields' (nested paths below them are accepted too)",
                    tuple(self.selector.valid_fields()),
                )
            )
        if not self.sortable or self.mode == "item":
            return out
        return [
            *out,
            TypeSpec(
                self.sort_type_name,
                "object",
                f"Sort key for {self.operation}",
                fields=(
                    parameter_info("field", {"type": "string", "enum": list(self.sortable)}, True),
                    parameter_info("order", {"type": "string", "enum": ["asc", "desc"], "default": "asc"}, False),
                ),
            ),
        ]

    def description(self, base: str) -> str:
        if self.mode == "item":
            return f"{base} Field selection: fields (presets {', '.join(self.selector.presets)} or paths; default full)."
        c = self.coll
        parts = [
            f"Cursor pagination (first/after, last/before; default {c.page_size}, max {c.max_page_size})"
            + ("; offset compatibility (limit/offset)" if c.offset else "")
            + "; response items + pageInfo",
        ]
        if self.searchable:
            parts.append(f"text query over {', '.join(self.searchable)} (OR semantics, quoted phrases)")
        parts.append(f"filter keys: {', '.join(self.filterable)}" if self.filterable else "no filters")
        parts.append(f"sort fields: {', '.join(self.sortable)}" if self.sortable else "no sorting")
        parts.append(f"fields presets: {', '.join(self.selector.presets)} (default {self.selector.default})")
        if self.support is not None:
            parts.append("aggregate: count/group_by/sum/avg/min/max (summary only unless include_items)")
        sep = "" if base.endswith((".", "!", "?")) else "."
        return f"{base}{sep} " + "; ".join(parts) + "."

    def example(self) -> dict[str, Any] | None:
        if self.mode == "item":
            return None
        params: dict[str, Any] = {"fields": "minimal" if "minimal" in self.selector.presets else self.selector.default}
        if self.sortable:
            params["sort"] = {"field": self.sortable[0], "order": "desc"}
        params["first"] = min(10, self.coll.max_page_size)
        return {
            "description": "Combined controls: field preset, sort and a page size",
            "request": {"operation": self.operation, "params": params},
        }

    def aggregation_info(self) -> dict[str, Any] | None:
        if self.mode == "item":
            return None
        return self.support.info() if self.support else {"supported": False}

    def computed_info(self) -> list[dict[str, Any]] | None:
        return [c.info(n) for n, c in self.computed.items()] or None

    # ---- per request ----------------------------------------------------------------------

    def value_of(self) -> Callable[[dict[str, Any], str], Any]:
        return ComputedValues(self.computed).value_of if self.computed else get_path

    def sort_signature(self, sort: Sequence[SortKey]) -> str:
        return ",".join(f"{k.field}:{k.order}" for k in sort) + f"|{self.key or '#'}"

    def normalize(self, values: dict[str, Any], ctx: Context) -> CollectionQuery:
        preset = values.get("preset")
        if preset is not None:
            ctx.warnings.append(deprecation("parameter", "preset", replacement="fields"))
        projection = self.selector.resolve(values.get("fields"), preset)
        if self.mode == "item":
            return CollectionQuery(self.operation, None, (), (), self.key, None, projection, (), False, False)
        text = parse_text(values["query"]) if values.get("query") else None
        conditions = parse_filter(values.get("filter"), self.filterable) if values.get("filter") is not None else []
        sort = parse_sort(values.get("sort"), values.get("order"), self.sortable) or list(self.default_sort)
        aggregate = parse_aggregate(values.get("aggregate"), self.support) if self.support and values.get("aggregate") else []
        include_items = bool(values.get("include_items"))
        signature = self.sort_signature(sort)
        n_keys = len(sort) + 1 if sort else 2  # sort values + tie-breaker | key + position
        codec = codec_for(ctx)

        def decode(cursor: str, param: str) -> list[Any]:
            payload = codec.decode(cursor, param)
            k = payload.get("k")
            if payload.get("o") != self.operation or payload.get("s") != signature:
                raise invalid_cursor(param, "issued for a different operation or sort order")
            if not isinstance(k, list) or len(k) != n_keys:
                raise invalid_cursor(param, "malformed")
            return k

        page: PageRequest | None = None
        if aggregate and not include_items:
            ignored = [
                p for p in ("sort", "order", "first", "after", "last", "before", "limit", "offset") if values.get(p) is not None
            ]
            if ignored:
                ctx.warnings.append(
                    param_ignored(
                        ignored,
                        "summary_only",
                        f"Ignored {', '.join(ignored)}: aggregation returns summaries only (set include_items: true for items)",
                    )
                )
            sort = []
        else:
            page = parse_page(
                values,
                default_size=self.coll.page_size,
                max_size=self.coll.max_page_size,
                clamp=self.coll.clamp,
                allow_offset=self.coll.offset,
                decode=decode,
            )
            ctx.warnings.extend(page.warnings)
        if include_items and not aggregate:
            ctx.warnings.append(param_ignored(["include_items"], "no_aggregate", "Ignored include_items: no aggregate given"))
        return CollectionQuery(
            self.operation,
            text,
            tuple(conditions),
            tuple(sort),
            self.key,
            page,
            projection,
            tuple(aggregate),
            include_items,
            self.coll.total_count,
        )

    async def shape(self, result: Any, q: CollectionQuery, ctx: Context) -> Any:
        if self.mode == "item":
            if result is None:
                return None
            rec = as_record(result)
            return self._projector(q)(rec)
        if isinstance(result, QueryBackend):
            return await self._pushdown(result, q, ctx)
        return self._in_memory(result, q, ctx)

    def _in_memory(self, result: Any, q: CollectionQuery, ctx: Context) -> dict[str, Any]:
        """Query, page and aggregate the records in one streaming pass: memory is O(page)
        for pages (:mod:`.streaming`) and O(groups) for aggregations, whatever the count."""
        if result is None:
            result = ()
        if isinstance(result, Mapping) or not isinstance(result, Iterable):
            raise internal_error("a collection operation must return an iterable of records")
        value_of = self.value_of()
        stream: Iterable[dict[str, Any]] = map(as_record, result)
        if q.text is not None:
            match = compile_text(q.text, self.searchable, value_of)
            if match is not None:
                stream = filter(match, stream)
        pred = compile_predicate(q.filter, value_of)
        if pred is not None:
            stream = filter(pred, stream)
        if q.aggregate and not q.include_items:
            return {"aggregations": Aggregator(q.aggregate, value_of).feed(stream).result()}
        aggregator = Aggregator(q.aggregate, value_of) if q.aggregate else None
        if aggregator is not None:
            stream = _tap(stream, aggregator.add)
        assert q.page is not None
        page = q.page
        fields = [k.field for k in q.sort]
        key = self.key
        if q.sort:
            win = sorted_page(stream, page, *self._sort_keys(q.sort, value_of))

            def wire(i: int, rec: dict[str, Any]) -> list[Any]:
                tie = value_of(rec, key) if key is not None else i
                return [*(_plain(value_of(rec, f)) for f in fields), _plain(tie)]
        else:
            anchor = page.after if not page.backward else page.before
            if anchor is not None:
                pos = anchor[1]
                if not isinstance(pos, int) or isinstance(pos, bool):
                    raise invalid_cursor("before" if page.backward else "after", "malformed")
            ident_of = (lambda rec: _plain(value_of(rec, key))) if key is not None else None
            win = natural_page(stream, page, ident_of, (anchor[0], anchor[1]) if anchor is not None else None)

            def wire(i: int, rec: dict[str, Any]) -> list[Any]:
                return [_plain(value_of(rec, key)) if key is not None else None, i]

        data: dict[str, Any] = {}
        if aggregator is not None:
            data["aggregations"] = aggregator.result()
        project = self._projector(q, value_of)
        items = [project(rec) for _, rec in win.chosen]
        total = win.total if q.want_total else None
        if page.style == "offset":
            data["items"] = items
            data["pagination"] = offset_info(page, len(items), win.has_next, total)
            return data
        codec = codec_for(ctx)
        signature = self.sort_signature(q.sort)

        def cursor(i: int, rec: dict[str, Any]) -> str:
            return codec.encode({"o": self.operation, "s": signature, "k": wire(i, rec)})

        start = cursor(*win.chosen[0]) if win.chosen else None
        end = cursor(*win.chosen[-1]) if win.chosen else None
        data["items"] = items
        data["pageInfo"] = page_info(win.has_next, win.has_previous, start, end, total)
        return data

    def _sort_keys(
        self, sort: Sequence[SortKey], value_of: Callable[[dict[str, Any], str], Any]
    ) -> tuple[Callable[[int, dict[str, Any]], tuple[Any, ...]], Callable[[list[Any], bool], tuple[Any, ...]]]:
        """Stable multi-key order. Every record's key is its sort values, its tie-breaker (the
        key field, else its position) and finally its position; a cursor carries the sort
        values and the tie-breaker and stands just after (``after``) or just before
        (``before``) the record it was issued for."""
        fields = [k.field for k in sort]
        key = self.key
        wrap = directional([k.descending for k in sort])
        simple = all("." not in f and not f.startswith("_") for f in (*fields, key or ""))

        if simple and len(fields) == 1 and key is not None:  # the common case, kept lean
            f0 = fields[0]
            if not sort[0].descending:

                def key_of(i: int, rec: dict[str, Any]) -> tuple[Any, ...]:
                    # order_key inlined for plain strings and numbers (a million calls saved per million rows)
                    v = rec.get(f0, MISSING)
                    c = v.__class__
                    k = (1, v) if c is str else (0, v) if c is int or c is float else order_key(v)
                    t = rec.get(key, MISSING)
                    c = t.__class__
                    return (k, (1, t) if c is str else (0, t) if c is int or c is float else order_key(t), (0, i))
            else:

                def key_of(i: int, rec: dict[str, Any]) -> tuple[Any, ...]:
                    return (Desc(order_key(rec.get(f0, MISSING))), order_key(rec.get(key, MISSING)), (0, i))
        else:

            def key_of(i: int, rec: dict[str, Any]) -> tuple[Any, ...]:
                vals = [order_key(value_of(rec, f)) for f in fields]
                tie = order_key(value_of(rec, key)) if key is not None else (0, i)
                return wrap((*vals, tie, (0, i)))

        def bound_of(wire: list[Any], after: bool) -> tuple[Any, ...]:
            return wrap((*map(order_key, wire), (0, float("inf") if after else float("-inf"))))

        return key_of, bound_of

    def _projector(
        self, q: CollectionQuery, value_of: Callable[[dict[str, Any], str], Any] | None = None
    ) -> Callable[[dict[str, Any]], dict[str, Any]]:
        apply = q.projection.compile()
        if not q.projection.computed:
            return lambda rec: apply(rec, None)
        values = ComputedValues(self.computed)
        return lambda rec: apply(rec, lambda name: values.get(rec, name))

    async def _pushdown(self, backend: Any, q: CollectionQuery, ctx: Context) -> dict[str, Any]:
        r = backend.execute_query(q)
        if inspect.isawaitable(r):
            r = await r
        if not isinstance(r, QueryResult):
            if isinstance(r, Mapping) or not isinstance(r, Iterable):
                raise internal_error("a query backend returned an unsupported value")
            return self._in_memory(r, q, ctx)  # the backend declined: records, answered here
        data: dict[str, Any] = {}
        if q.aggregate:
            if r.aggregations is None:
                raise internal_error("the query backend did not compute the requested aggregations")
            data["aggregations"] = r.aggregations
            if not q.include_items:
                return data
        assert q.page is not None
        value_of = self.value_of()
        records = [as_record(x) for x in r.items]
        project = self._projector(q, value_of)
        items = [project(rec) for rec in records]
        if q.page.style == "offset":
            data["items"] = items
            data["pagination"] = offset_info(q.page, len(items), r.has_next, r.total_count)
            return data
        signature = self.sort_signature(q.sort)
        fields = [k.field for k in q.sort]
        base = q.page.offset
        codec = codec_for(ctx)

        keys = r.keys
        if keys is not None and (len(keys) != len(records) or any(len(k) != (len(fields) + 1 if fields else 2) for k in keys)):
            raise internal_error("the query backend returned cursor keys that do not fit its items")

        def cursor(i: int, rec: dict[str, Any]) -> str:
            if keys is not None:
                return codec.encode({"o": self.operation, "s": signature, "k": list(keys[i])})
            raw = [value_of(rec, f) for f in fields] + [value_of(rec, self.key) if self.key else base + i]
            return codec.encode({"o": self.operation, "s": signature, "k": [_plain(v) for v in raw]})

        start = cursor(0, records[0]) if records else None
        end = cursor(len(records) - 1, records[-1]) if records else None
        data["items"] = items
        data["pageInfo"] = page_info(r.has_next, r.has_previous, start, end, r.total_count)
        return data


def _plain(v: Any) -> Any:
    return None if v is MISSING else plain(v)


def _tap(stream: Iterable[dict[str, Any]], see: Callable[[dict[str, Any]], None]) -> Iterable[dict[str, Any]]:
    """Pass records through, showing each to ``see`` (aggregation alongside the page)."""
    for rec in stream:
        see(rec)
        yield rec


# ---- wrapping an operation -----------------------------------------------------------------


def apply_collection(
    spec: OperationSpec, coll: Collection, item_schema: Mapping[str, Any] | None = None, item_name: str | None = None
) -> OperationSpec:
    """A new spec whose handler shapes the records ``spec``'s handler returns (see module doc)."""
    if spec.handler is None:
        raise _bad(spec.name, "a collection operation needs a handler")
    rt = CollectionRuntime(spec, coll, item_schema)
    added = rt.params()
    clash = [p.name for p in added if any(q.name == p.name for q in spec.params)]
    if clash:
        raise _bad(spec.name, f"parameter(s) {clash} are provided by the collection switch; remove them from the handler")
    names = tuple(p.name for p in added)
    original = spec.handler
    original_async = spec.is_async
    ctx_param = spec.context_param

    async def collection_handler(**kwargs: Any) -> Any:
        ctx = kwargs.pop(CTX_KEY, None) or Context(Session())
        values = {n: kwargs.pop(n) for n in names if n in kwargs}
        q = rt.normalize(values, ctx)
        if ctx_param:
            kwargs[ctx_param] = ctx
        if not original_async:  # a sync handler may block: a worker thread, not the loop
            result = await in_worker(ctx, original, **kwargs)
        else:
            result = original(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return await rt.shape(result, q, ctx)

    collection_handler.__name__ = getattr(original, "__name__", spec.name)
    collection_handler.__doc__ = getattr(original, "__doc__", None)
    collection_handler.__wrapped__ = original  # type: ignore[attr-defined]
    examples = spec.examples
    ex = rt.example()
    if ex is not None:
        # Required parameters (the handler's, and `query` with require_query) come from the
        # author's first example that has them all; without one the combined example is left out.
        needed = [p.name for p in (*spec.params, *added) if p.required]
        given = [(e.get("request") or {}).get("params") or {} for e in spec.examples]
        base = next((g for g in given if all(n in g for n in needed)), None if needed else {})
        if base is not None:
            ex["request"]["params"] = {**{n: base[n] for n in needed}, **ex["request"]["params"]}
            examples = (*examples, ex)
    returns = spec.returns
    if rt.mode == "item" and item_name and returns.name != item_name:
        returns = TypeRef(item_name, "object", returns.description)  # e.g. ``Widget | None``
    elif rt.mode != "item":
        item_name = item_name or (returns.name[:-2] if returns.name.endswith("[]") else pascal(spec.name, "item"))
        returns = TypeRef(
            f"{item_name}Connection",
            "object",
            "{items, pageInfo} (or {items, pagination} with limit/offset; {aggregations} with aggregate)",
        )
    computed_info = rt.computed_info()
    return dataclasses.replace(
        spec,
        handler=collection_handler,
        params=(*spec.params, *added),
        description=rt.description(spec.description),
        examples=examples,
        returns=returns,
        types=(*spec.types, *rt.types()),
        computed_fields=spec.computed_fields or (tuple(computed_info) if computed_info else None),
        aggregation_support=spec.aggregation_support or rt.aggregation_info(),
        context_param=CTX_KEY,
        is_async=True,
        extensions={**spec.extensions, "collection": rt},
    )


def collection_capabilities(specs: Iterable[OperationSpec]) -> dict[str, bool]:
    """``_protocol.capabilities`` flags implied by the operations' switches (C.9)."""
    caps: dict[str, bool] = {}
    for s in specs:
        rt = s.extensions.get("collection")
        if isinstance(rt, CollectionRuntime):
            caps["field_selection"] = True
            if rt.mode != "item":
                caps["pagination"] = True
            if rt.support is not None:
                caps["aggregations"] = True
            if rt.computed:
                caps["computed_fields"] = True
        elif s.extensions.get("field_selection"):  # e.g. wrapped READ operations (adapters/upstream/fields.py)
            caps["field_selection"] = True
        if (s.relationship_capabilities or {}).get("supported"):
            caps["relationship_queries"] = True
        if s.computed_fields:
            caps["computed_fields"] = True
        if (s.aggregation_support or {}).get("supported"):
            caps["aggregations"] = True
    return caps
