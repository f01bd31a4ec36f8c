"""What typer would import for nothing at start-up: pydantic on every command, Markdown and tracebacks for help.

`evals-repro --help` and a refusal (a missing key, a bad option) should cost little more than importing typer.
Two of typer's imports were most of their CPU without bytecode (a newcomer's venv: uv compiles none and this
environment writes none), and neither is needed for what they do:

- Option values. typer 0.29 converts each parameter of the command it runs through a pydantic `TypeAdapter`,
  built on first use even for an option left at its default: pydantic's import and `run`'s ~50 adapters were
  0.28 s of a refusal's 0.59 s. For what a command line almost always carries the result of typer's conversion
  is known: None (no value), a default already of the option's type, a `str`, ASCII digits for an `int`, a
  plain decimal for a `float` (within the option's range), a path (checked by typer's own path check), one of
  an enum's values (typer's own choice matching), a list of words. `FastOption` converts those; anything else
  (a malformed or signed number, a value out of range, an unknown choice) goes to typer's own converter, so
  every value and every message stays typer's.
- Help. typer's help module imports rich's Markdown renderer (markdown-it) and rich's tracebacks (pygments) at
  the top, for a markup mode and for pretty exceptions this CLI uses neither of. `LeanRichHelp` imports that
  module with stand-ins for those two names, which load the real class if it is ever used; the rendered help
  is typer's own, byte for byte.

tests/test_cli_startup.py holds both against typer itself (every option of every command; every help page).
Against a typer without these hooks nothing is changed.
"""

from __future__ import annotations

import importlib
import importlib.abc
import re
import sys
import types
from enum import Enum
from pathlib import Path
from typing import Any

_DIGITS = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
UNKNOWN = object()  # "not known here": typer converts it


class FastOption:
    """A parameter's converter: the known cases here, typer's own converter (built when first needed) otherwise."""

    def __init__(self, descriptor: Any) -> None:
        self.descriptor = descriptor
        self._typer: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        known = self.convert(value, param, ctx)
        return self.typer().coerce(value, param=param, ctx=ctx) if known is UNKNOWN else known

    def typer(self) -> Any:
        if self._typer is None:
            from typer._coercion import build_runtime_param

            self._typer = build_runtime_param(self.descriptor)
        return self._typer

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        """Typer's result for `value`, or UNKNOWN."""
        many = getattr(param, "multiple", False) or param.nargs == -1
        if value is None:
            return () if many else None
        info = self.descriptor.parameter_info
        if self.descriptor.file_annotation is not None or info.parser is not None:
            return UNKNOWN
        annotation = self.descriptor.annotation
        if many:
            if not isinstance(value, (list, tuple)) or annotation != list[str]:
                return UNKNOWN
            return list(value) if all(type(item) is str for item in value) else UNKNOWN
        if param.nargs != 1:
            return UNKNOWN
        return self._leaf(annotation, info, value, param, ctx)

    def _leaf(self, annotation: Any, info: Any, value: Any, param: Any, ctx: Any) -> Any:
        if annotation is str:
            return value if type(value) is str else UNKNOWN
        if annotation is int or annotation is float:
            if type(value) is annotation:
                number = value
            elif type(value) is str and (_DIGITS if annotation is int else _DECIMAL).fullmatch(value):
                number = annotation(value)
            else:
                return UNKNOWN
            if (
                info.clamp
                or (info.min is not None and number < info.min)
                or (info.max is not None and number > info.max)
            ):
                return UNKNOWN  # typer clamps it or words the refusal
            return number
        if isinstance(annotation, type) and issubclass(annotation, Enum):
            from typer._param_types import coerce_cli_choice

            try:
                return coerce_cli_choice(value, choices=tuple(annotation), case_sensitive=info.case_sensitive, ctx=ctx)
            except ValueError:
                return UNKNOWN  # typer words the refusal
        if annotation is Path and info.path_type is None:
            if type(value) is str and value:
                value = Path(value)
            if not isinstance(value, Path):
                return UNKNOWN
            from typer._param_types import coerce_cli_path

            return coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)  # typer's checks, its messages
        return UNKNOWN


def install(param: Any) -> None:
    """Give one typer parameter the converter above, where typer has the hook (a lazily built runtime param)."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or not hasattr(param, "_runtime_param") or param._runtime_param is not None:
        return
    param._runtime_param = FastOption(descriptor)


# -- help -----------------------------------------------------------------------------------------------------

HELP_MODULE = "typer.rich_utils"
DEFERRED = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}  # module -> the one name typer takes


class _Deferred(type):
    """A stand-in for a rich class: calling it, or reading one of its attributes, loads and uses the real one."""

    def real(cls) -> Any:
        return getattr(importlib.import_module(cls.__module__), cls.__name__)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.real()(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):  # a probe (typing, copy, inspect), not a use
            raise AttributeError(name)
        return getattr(cls.real(), name)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls.real())


class _LeanLoader(importlib.abc.Loader):
    """Runs typer's help module with the stand-ins in place of the modules they stand for, then removes them, so
    any later import of those modules (here or by anyone else) loads the real ones."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        placed: dict[str, types.ModuleType] = {}
        for name, attribute in DEFERRED.items():
            if name not in sys.modules:
                stand_in = types.ModuleType(name)
                setattr(stand_in, attribute, _Deferred(attribute, (), {"__module__": name}))
                sys.modules[name] = placed[name] = stand_in
        try:
            self.inner.exec_module(module)
        finally:
            for name, stand_in in placed.items():
                if sys.modules.get(name) is stand_in:
                    del sys.modules[name]

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... as the real loader answers them
        return getattr(self.inner, name)


class LeanRichHelp(importlib.abc.MetaPathFinder):
    """Finds typer's help module (once, when typer first needs it) and hands it `_LeanLoader`."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != HELP_MODULE:
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _LeanLoader(spec.loader)
        return spec


def lean_help() -> None:
    """Have typer's help module imported lean, unless it already is (or is about to be)."""
    if HELP_MODULE not in sys.modules and not any(isinstance(f, LeanRichHelp) for f in sys.meta_path):
        sys.meta_path.insert(0, LeanRichHelp())
