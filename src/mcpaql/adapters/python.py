"""The Python adapter API: operations are plain typed functions.

The parameter schema, descriptions (from the docstring and ``Annotated`` metadata),
defaults, types list and returns type are derived from the signature with pydantic, so the
common case is a decorator and a docstring::

    app = Adapter("tasks", display_name="Task Tracker")

    @app.read
    def get_task(task_id: str) -> Task:
        \"\"\"Get one task by id.\"\"\"

Every :class:`~mcpaql.protocol.OperationSpec` field stays reachable through the decorator's
keyword arguments (``name``, ``endpoint``, ``examples``, ``lifecycle``, ``danger_level`` …).
"""

from __future__ import annotations

import enum
import inspect
import re
import threading
import types as pytypes
import typing
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Annotated, Any, TypeVar, get_args, get_origin

from pydantic import BaseModel, TypeAdapter
from pydantic.fields import FieldInfo

from ..config import Config
from ..protocol.categories import CRUDE_FAMILIES, Category, EndpointFamily
from ..protocol.collections import apply_collection, item_schema_for
from ..protocol.context import Context
from ..protocol.dispatch import Engine
from ..protocol.extension import Extension, Lifespan
from ..protocol.operations import NO_DEFAULT, OperationSpec, ParamSpec, TypeRef, TypeSpec, type_specs
from ..protocol.registry import Registry, SchemaError
from ..protocol.schema import pascal, resolve, strip_null
from ..protocol.update import update_semantics

F = TypeVar("F", bound=Callable[..., Any])

_SIMPLE = (str, int, float, bool, type(None), Any)


def _is_simple(tp: Any) -> bool:
    """JSON-native annotations need no conversion after validation (keeps the hot path lean)."""
    if tp in _SIMPLE or tp is dict or tp is list:
        return True
    origin = get_origin(tp)
    if origin is Annotated:
        return _is_simple(get_args(tp)[0])
    if origin in (typing.Union, pytypes.UnionType):
        return all(_is_simple(a) for a in get_args(tp))
    if origin in (list, dict, typing.Literal):
        return origin is typing.Literal or all(_is_simple(a) for a in get_args(tp))
    return False


# Building a pydantic TypeAdapter and its JSON Schema costs about a millisecond per annotation;
# operations repeat the same few annotations (``str``, ``int = 10``, one model …), so each is
# built once and shared by every operation (and engine) that uses it. Bounded (LRU), so a
# process defining adapters over and over — tests, reloads — does not keep every class alive.
_SHAPES_MAX = 2048
_shapes: OrderedDict[Any, tuple[TypeAdapter[Any], dict[str, Any]]] = OrderedDict()
_shapes_lock = threading.Lock()


def shape_of(tp: Any) -> tuple[TypeAdapter[Any], dict[str, Any]]:
    """The shared ``(TypeAdapter(tp), its JSON Schema)`` for an annotation. The schema is shared
    too: treat it as read-only (``resolve`` copies what it changes).

    Keyed by the annotation and its repr: typing objects compare structurally
    (``list[str] == list[str]``) but unions ignore member order, which the schema keeps.
    ``Annotated`` metadata (``Field(ge=1)``, docs, markers) is keyed by its type and repr: a
    module with postponed annotations evaluates a new ``FieldInfo`` for every function, and
    FieldInfo compares by identity."""
    try:
        key = _annotation_key(tp)
        with _shapes_lock:
            hit = _shapes.get(key)
            if hit is not None:
                _shapes.move_to_end(key)
                return hit
    except TypeError:  # an unhashable annotation (metadata without __hash__): built each time
        adapter = TypeAdapter(tp)
        return adapter, adapter.json_schema()
    adapter = TypeAdapter(tp)
    made = (adapter, adapter.json_schema())
    with _shapes_lock:
        _shapes[key] = made
        while len(_shapes) > _SHAPES_MAX:
            _shapes.popitem(last=False)
    return made


def _annotation_key(tp: Any) -> Any:
    if get_origin(tp) is Annotated:
        base, *meta = get_args(tp)
        return ("Annotated", _annotation_key(base), tuple((type(m), repr(m)) for m in meta))
    return (tp, repr(tp))


def _docstring_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and Google/Sphinx-style per-argument text."""
    doc = inspect.getdoc(fn) or ""
    args: dict[str, str] = {}
    desc_lines: list[str] = []
    section = None
    current = None
    for line in doc.splitlines():
        stripped = line.strip()
        if re.match(r"^(Args|Arguments|Parameters|Params):\s*$", stripped):
            section = "args"
            continue
        if re.match(r"^(Returns|Raises|Yields|Examples?|Notes?):\s*$", stripped):
            section = "other"
            continue
        m = re.match(r"^:param\s+(\w+):\s*(.*)$", stripped)
        if m:
            args[m.group(1)] = m.group(2)
            continue
        if section == "args":
            m = re.match(r"^(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", stripped)
            if m and not line.startswith(" " * 8):
                current = m.group(1)
                args[current] = m.group(2)
            elif current and stripped:
                args[current] += " " + stripped
            continue
        if section is None:
            desc_lines.append(line)
    # Re-flow wrapped lines: a paragraph is one line in the description the model reads.
    paragraphs = re.split(r"\n\s*\n", "\n".join(desc_lines).strip())
    description = "\n\n".join(" ".join(x.strip() for x in para.splitlines()) for para in paragraphs if para.strip())
    return description, args


def _returns(fn_name: str, tp: Any) -> tuple[TypeRef, list[TypeSpec]]:
    if tp is inspect.Signature.empty or tp is None or tp is type(None):
        return TypeRef("Null", "scalar", "No data"), []
    origin = get_origin(tp)
    inner = get_args(tp)[0] if origin in (list, tuple) and get_args(tp) else None
    if isinstance(tp, type) and issubclass(tp, BaseModel | enum.Enum):
        schema = resolve(shape_of(tp)[1], tp.__name__)
        kind = "enum" if issubclass(tp, enum.Enum) else "object"
        return TypeRef(tp.__name__, kind, _own_doc(tp)), type_specs(schema)
    if inner is not None and isinstance(inner, type) and issubclass(inner, BaseModel):
        schema = resolve(shape_of(inner)[1], inner.__name__)
        return TypeRef(f"{inner.__name__}[]", "object", f"Array of {inner.__name__}"), type_specs(schema)
    try:
        schema = resolve(shape_of(tp)[1], pascal(fn_name, "result"))
    except Exception:
        return TypeRef("Object", "object"), []
    label = schema.get("type", "object")
    kind = "object" if label in ("object", "array") else "scalar"
    return TypeRef(str(label).title(), kind), type_specs(schema)


def _param(fn_name: str, pname: str, param: inspect.Parameter, tp: Any, doc: str | None) -> tuple[ParamSpec, list[TypeSpec]]:
    description = doc
    sensitive = False
    base = tp
    if get_origin(tp) is Annotated:
        base, *meta = get_args(tp)
        for m in meta:
            if isinstance(m, str):
                description = description or m
            elif isinstance(m, FieldInfo) and m.description:
                description = description or m.description
            elif m is Sensitive:
                sensitive = True
    adapter, raw = shape_of(tp)
    schema = resolve(raw, pascal(fn_name, pname) if not _named(base) else base.__name__)
    schema = strip_null(schema) if param.default is None else schema
    if description is None:
        description = schema.get("description")
    required = param.default is inspect.Parameter.empty
    default = NO_DEFAULT if required else param.default
    if default is not NO_DEFAULT:
        try:
            default = adapter.dump_python(default, mode="json")
        except Exception:
            default = NO_DEFAULT
        if default is None:
            default = NO_DEFAULT  # "absent" and "null" mean the same for an optional param
    convert = None if _is_simple(tp) else adapter.validate_python
    spec = ParamSpec(
        name=pname,
        schema=schema,
        required=required,
        description=description,
        default=default,
        sensitive=sensitive,
        convert=convert,
        nullable=not required and (param.default is None or _admits_none(tp)),
    )
    if default is NO_DEFAULT and not required:
        # Pass the Python default through untouched: the handler's own default applies.
        pass
    return spec, type_specs(schema)


def _is_context(tp: Any) -> bool:
    """``Context``, ``Context | None`` and ``Optional[Context]`` all ask for the context."""
    if tp is Context:
        return True
    if get_origin(tp) in (typing.Union, pytypes.UnionType):
        return any(a is Context for a in get_args(tp))
    return False


def _own_doc(tp: type) -> str | None:
    """The class's own docstring (not one inherited from BaseModel or Enum)."""
    doc = tp.__dict__.get("__doc__")
    return inspect.cleandoc(doc).split("\n\n")[0] if isinstance(doc, str) and doc.strip() else None


def _admits_none(tp: Any) -> bool:
    if get_origin(tp) is Annotated:
        return _admits_none(get_args(tp)[0])
    return get_origin(tp) in (typing.Union, pytypes.UnionType) and type(None) in get_args(tp)


def _named(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel | enum.Enum)


class Sensitive:
    """Marker for ``Annotated[str, Sensitive]``: introspection flags the parameter sensitive."""


class Adapter:
    """Collects operations defined as Python functions and builds registries and engines."""

    def __init__(
        self,
        name: str,
        *,
        display_name: str | None = None,
        version: str = "0.1.0",
        description: str | None = None,
        families: Iterable[EndpointFamily] | dict[str, str] | None = None,
        introspect_family: str | None = None,
        open_world: bool = False,
        concurrency: str = "read-concurrent",
        supports_etag: bool = False,
        extensions: Iterable[Extension] = (),
        lifespan: Lifespan | None = None,
    ) -> None:
        self.name = name
        self.display_name = display_name
        self.version = version
        self.description = description
        if families is None:
            self.families = dict(CRUDE_FAMILIES)
        elif isinstance(families, dict):
            self.families = {k: EndpointFamily(k, v) for k, v in families.items()}
        else:
            self.families = {f.name: f for f in families}
        self.introspect_family = introspect_family
        self.open_world = open_world
        self.concurrency = concurrency
        self.supports_etag = supports_etag
        self._specs: list[OperationSpec] = []
        self._types: list[TypeSpec] = []
        # Extra ``_protocol.capabilities`` every engine built from this adapter advertises.
        self.capabilities: dict[str, Any] = {}
        # Layers every engine built from this adapter carries (safety, background jobs, …):
        # see mcpaql.protocol.extension. Added with use(); applied when an engine is built.
        self._extensions: list[Extension] = list(extensions)
        # Opens and closes the backend's resources with the server (an async context manager
        # factory, as Starlette's and the MCP SDK's lifespan): entered when serving starts.
        self.lifespan = lifespan
        # Fail at definition time, not at serve time: the registry validates every name. The
        # probe is kept and grows with each add (None: rebuild it on the next add), so defining
        # n operations validates each once, not the whole list again each time (O(n), not O(n²)).
        self._probe: Registry | None = self.registry()

    # ---- decorators ---------------------------------------------------------------------

    def operation(self, fn: F | None = None, /, *, category: Category | str, **options: Any) -> Any:
        """Register ``fn`` as an operation of ``category`` (all OperationSpec fields via options)."""
        cat = Category(category.upper()) if isinstance(category, str) else category

        def register(f: F) -> F:
            self.add(self.spec_from_function(f, cat, **options))
            return f

        return register(fn) if fn is not None else register

    def create(self, fn: F | None = None, /, **options: Any) -> Any:
        return self.operation(fn, category=Category.CREATE, **options)

    def read(self, fn: F | None = None, /, **options: Any) -> Any:
        return self.operation(fn, category=Category.READ, **options)

    def update(self, fn: F | None = None, /, **options: Any) -> Any:
        return self.operation(fn, category=Category.UPDATE, **options)

    def delete(self, fn: F | None = None, /, **options: Any) -> Any:
        return self.operation(fn, category=Category.DELETE, **options)

    def execute(self, fn: F | None = None, /, **options: Any) -> Any:
        return self.operation(fn, category=Category.EXECUTE, **options)

    def type(self, tp: type) -> type:
        """Add a model or enum to ``introspect types`` even if no operation mentions it."""
        schema = resolve(shape_of(tp)[1], tp.__name__)
        self._types.extend(type_specs(schema))
        self._probe = None  # types go in before operations: the next add rebuilds the probe
        return tp

    # ---- building -----------------------------------------------------------------------

    def spec_from_function(self, fn: Callable[..., Any], category: Category, **options: Any) -> OperationSpec:
        name = options.pop("name", fn.__name__)
        description, arg_docs = _docstring_parts(fn)
        description = options.pop("description", None) or description or name.replace("_", " ").capitalize()
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except NameError as e:
            raise SchemaError(
                "SCHEMA_UNRESOLVED_REF",
                f"operation '{name}': cannot resolve a type hint ({e}); define models at module level",
            ) from None
        params: list[ParamSpec] = []
        types: list[TypeSpec] = []
        context_param = None
        overrides: dict[str, dict[str, Any]] = options.pop("param_options", {})
        collection = options.pop("collection", None)  # protocol.collections.Collection / Item
        identifiers = options.pop("identifiers", None)  # UPDATE: params that identify the resource
        if options.pop("background", False):  # run by mcpaql.safety.jobs (install_jobs) as a background execution
            options["extensions"] = {**options.get("extensions", {}), "background": True}
        # A sync handler runs in a worker thread (protocol/workers.py) unless its author says it
        # never blocks (a pure computation of microseconds): then the thread hop would cost more
        # than the call. Litestar's ``sync_to_thread`` is the same switch.
        if not options.pop("sync_to_thread", True) and not inspect.iscoroutinefunction(fn):
            options["extensions"] = {**options.get("extensions", {}), "inline": True}
        for pname, p in inspect.signature(fn).parameters.items():
            tp = hints.get(pname, Any)
            if _is_context(tp) or (pname == "ctx" and tp is Any):
                context_param = pname
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise SchemaError("SCHEMA_INVALID_TYPE", f"operation '{name}': *args/**kwargs are not supported")
            spec, found = _param(name, pname, p, tp, arg_docs.get(pname))
            if pname in overrides:
                from dataclasses import replace

                spec = replace(spec, **overrides[pname])
            params.append(spec)
            types.extend(found)
        returns, rtypes = _returns(name, hints.get("return", inspect.Signature.empty))
        types.extend(rtypes)
        examples = tuple(
            e if "request" in e else {"request": {"operation": name, "params": e}} for e in options.pop("examples", ())
        )
        op = OperationSpec(
            name=name,
            category=category,
            description=description,
            handler=fn,
            params=tuple(params),
            returns=options.pop("returns", returns),
            examples=examples,
            types=tuple(types),
            context_param=context_param,
            is_async=inspect.iscoroutinefunction(fn),
            **options,
        )
        if category is Category.UPDATE:
            op = update_semantics(op, identifiers)
        if collection is not None:
            op = apply_collection(op, collection, *item_schema_for(hints.get("return")))
        return op

    def add(self, spec: OperationSpec) -> OperationSpec:
        """Validate ``spec`` against what is already there (extensions included) and keep it."""
        probe = self._probe if self._probe is not None else self.registry()
        try:
            for ext in self._extensions:
                if ext.rewrite is not None:
                    ext.rewrite(spec)  # an extension refusing this spec refuses it now, not at serve time
            probe.add(spec, reserved_ok=bool(spec.extensions.get("reserved")))
        except BaseException:
            self._probe = None  # a refused spec may have left some of its types behind
            raise
        self._probe = probe
        self._specs.append(spec)
        return spec

    def use(self, extension: Extension) -> Extension:
        """Add ``extension`` to every engine built from now on (before ``engine()``/serving).

        It is checked now: its rewrite must accept every operation defined so far and its
        operations must not collide with them.
        """
        trial = [*self._extensions, extension]
        self._probe = self._registry_with(trial)
        self._extensions = trial
        return extension

    @property
    def extensions(self) -> tuple[Extension, ...]:
        return tuple(self._extensions)

    def registry(self) -> Registry:
        """A fresh, unfrozen registry holding this adapter's operations and types, with its
        extensions' rewrites and operations applied (what its engines serve, minus introspect)."""
        return self._registry_with(self._extensions)

    def _registry_with(self, extensions: Iterable[Extension]) -> Registry:
        reg = self._own_registry()
        for ext in extensions:
            if ext.rewrite is not None:
                reg.rewrite(ext.rewrite)
            for spec in ext.operations:
                reg.add(spec, reserved_ok=True)
        return reg

    def _own_registry(self) -> Registry:
        """The adapter's own operations and types, before its extensions."""
        reg = Registry(
            self.name,
            display_name=self.display_name,
            version=self.version,
            families=dict(self.families),
            introspect_family=self.introspect_family,
            open_world=self.open_world,
            concurrency=self.concurrency,
            supports_etag=self.supports_etag,
            description=self.description,
        )
        for t in self._types:
            reg.add_type(t)
        for s in self._specs:
            reg.add(s, reserved_ok=bool(s.extensions.get("reserved")))
        return reg

    def engine(
        self,
        config: Config | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        guards: Iterable[Any] = (),
        extensions: Iterable[Extension] = (),
    ) -> Engine:
        """A built engine: this adapter's operations, its extensions and then ``extensions``;
        ``guards``/``capabilities`` run and win after every extension's. ``config`` None reads
        the environment and config file (:meth:`Config.load`)."""
        extra = Extension("engine", guards=tuple(guards), capabilities=capabilities or {})
        return Engine(
            self._own_registry(),
            config if config is not None else Config.load(),
            capabilities=self.capabilities,
            extensions=[*self._extensions, *extensions, extra],
            lifespan=self.lifespan,
        )

    def run(
        self,
        transport: str = "stdio",
        *,
        config: Config | None = None,
        host: str = "127.0.0.1",
        port: int = 8000,
        stateless: bool = False,
    ) -> None:
        """Serve this adapter (blocking) over ``stdio`` or streamable ``http``; the adapter's and
        its extensions' lifespans open and close with the server."""
        from ..mcp.transports import run_stdio, serve_http

        engine = self.engine(config)
        if transport == "stdio":
            run_stdio(engine)
        elif transport == "http":
            serve_http(engine, host=host, port=port, stateless=stateless)
        else:
            raise ValueError("transport must be stdio or http")
