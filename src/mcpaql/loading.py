"""Resolve a serve TARGET into an Engine: ``package.module:attr``, a ``.py`` file, or an
adapter-schema file (``.json``/``.yaml``). No target means the embedded demo adapter."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .adapters.python import Adapter
from .config import Config
from .protocol.dispatch import Engine
from .protocol.extension import Extension
from .protocol.registry import Registry


class TargetError(ValueError):
    """The serve target cannot be loaded; the message says why in user terms."""


# Called with the loaded Adapter/Registry/Engine; returns the extension (e.g. safety) its engine
# is built with, or None.
Prepare = Callable[[Any], Extension | None]


def _from_object(obj: Any, config: Config, where: str, prepare: Prepare | None = None) -> Engine:
    if callable(obj) and not isinstance(obj, Adapter | Engine | Registry | type):
        obj = obj()
    ext = prepare(obj) if prepare is not None and isinstance(obj, Adapter | Registry | Engine) else None
    extensions = [ext] if ext is not None else []
    if isinstance(obj, Engine):  # built: only guards, capabilities and queries can join
        return obj.extend(*(dataclasses.replace(e, rewrite=None) for e in extensions)) if extensions else obj
    if isinstance(obj, Adapter):
        return obj.engine(config, extensions=extensions)
    if isinstance(obj, Registry):
        return Engine(obj, config, extensions=extensions)
    raise TargetError(f"'{where}' is not an mcpaql Adapter, Engine or Registry")


def _module_adapter(module: Any, where: str) -> Any:
    for name in ("adapter", "app"):
        if hasattr(module, name):
            return getattr(module, name)
    found = [v for v in vars(module).values() if isinstance(v, Adapter)]
    if len(found) == 1:
        return found[0]
    raise TargetError(f"'{where}' defines no 'adapter' or 'app'; name it with '{where}:attribute'")


def load_engine(target: str | None, config: Config, *, demo_db: str | None = None, prepare: Prepare | None = None) -> Engine:
    """``prepare`` is applied to the Adapter/Registry before its engine is built."""
    if not target:
        from .demo import make_adapter

        return _from_object(make_adapter(demo_db), config, "demo", prepare)
    if target.endswith((".json", ".yaml", ".yml")):
        if not Path(target).exists():
            raise TargetError(f"adapter schema file '{target}' does not exist")
        from .adapters.schema import load_adapter_schema

        return _from_object(load_adapter_schema(Path(target)), config, target)
    head, _, attr = target.partition(":")
    if head.endswith(".py"):
        return _from_object(_load_file(head, attr), config, target, prepare)
    try:
        module = importlib.import_module(head)
    except ImportError as e:
        raise TargetError(f"cannot import '{head}': {e}") from None
    if attr and not hasattr(module, attr):
        raise TargetError(f"'{head}' has no attribute '{attr}'")
    return _from_object(getattr(module, attr) if attr else _module_adapter(module, head), config, target, prepare)


def _load_file(file_part: str, attr: str) -> Any:
    file = Path(file_part)
    if not file.exists():
        raise TargetError(f"file '{file_part}' does not exist")
    spec = importlib.util.spec_from_file_location(file.stem, file)
    if spec is None or spec.loader is None:
        raise TargetError(f"cannot load '{file_part}'")
    module = importlib.util.module_from_spec(spec)
    sys.modules[file.stem] = module
    spec.loader.exec_module(module)
    if attr and not hasattr(module, attr):
        raise TargetError(f"'{file_part}' has no attribute '{attr}'")
    return getattr(module, attr) if attr else _module_adapter(module, file_part)
