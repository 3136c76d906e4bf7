"""The options plan: the ordered `poptorch.Options` calls a configuration implies, as plain data.

A plan can be printed as the equivalent Python, turned into data (`to_dict()`) or JSON
(`to_json_string()`), compared and tested on any machine. `OptionsPlan.apply()` is the only code in
the package that touches the Poplar SDK.
"""

import functools
import importlib
import json
import operator
import os
import sys
import types
from dataclasses import dataclass
from typing import Any, Dict, NamedTuple, Sequence, Tuple

from .errors import PoplarSDKNotFoundError


IPU_MK2_HARDWARE_VERSIONS = (2, 21)
SDK_MODULES = ("poptorch", "popart", "popdist")


@dataclass(frozen=True)
class Ref:
    """A name from the SDK, looked up when the plan is applied: `poptorch.OutputMode.All`."""

    path: str
    as_int: bool = False

    def render(self) -> str:
        return f"int({self.path})" if self.as_int else self.path

    def resolve(self, sdk: Dict[str, Any]) -> Any:
        value = _lookup(self.path, sdk)
        return int(value) if self.as_int else value

    def to_dict(self) -> Dict[str, Any]:
        return {"sdk": self.path, "int": True} if self.as_int else {"sdk": self.path}


@dataclass(frozen=True)
class Construct:
    """An SDK object made for an argument, then configured by chained calls.

    `Construct("poptorch.TensorLocationSettings", chain=(("useOnChipStorage", (True,)),))` stands for
    `poptorch.TensorLocationSettings().useOnChipStorage(True)`.
    """

    path: str
    args: Tuple[Any, ...] = ()
    kwargs: Tuple[Tuple[str, Any], ...] = ()
    chain: Tuple[Tuple[str, Tuple[Any, ...]], ...] = ()

    def render(self) -> str:
        arguments = [render(a) for a in self.args] + [f"{k}={render(v)}" for k, v in self.kwargs]
        text = f"{self.path}({', '.join(arguments)})"
        for method, args in self.chain:
            text += f".{method}({', '.join(render(a) for a in args)})"
        return text

    def resolve(self, sdk: Dict[str, Any]) -> Any:
        keywords = {k: resolve(v, sdk) for k, v in self.kwargs} if self.kwargs else {}
        made = _lookup(self.path, sdk)(*resolve_arguments(self.args, sdk), **keywords)
        for method, args in self.chain:
            made = getattr(made, method)(*resolve_arguments(args, sdk))
        return made

    def to_dict(self) -> Dict[str, Any]:
        return {
            "new": self.path,
            "args": [to_dict(a) for a in self.args],
            "kwargs": {k: to_dict(v) for k, v in self.kwargs},
            "chain": [[method, [to_dict(a) for a in args]] for method, args in self.chain],
        }


@dataclass(frozen=True)
class TempFile:
    """The name of a fresh temporary file, drawn when the plan is applied."""

    def render(self) -> str:
        return "tempfile.NamedTemporaryFile().name"

    def resolve(self, sdk: Dict[str, Any]) -> str:
        # A name is all PopART takes: optimum-graphcore's `NamedTemporaryFile().name` creates the file and deletes
        # it at once, leaving an unused name. 128 random bits make one no file has, with no round trip to the disk.
        # (Imported here: planning, what the CLI does, never draws one.)
        import tempfile

        return os.path.join(tempfile.gettempdir(), tempfile.gettempprefix() + os.urandom(16).hex())

    def to_dict(self) -> Dict[str, Any]:
        return {"temp_file": True}

    @staticmethod
    def drew(name: str) -> bool:
        """Whether `name` is one such a file could have: `tmp...` in the temporary folder."""
        import tempfile

        folder, base = os.path.split(name)
        return folder == tempfile.gettempdir() and base.startswith(tempfile.gettempprefix())


@dataclass(frozen=True)
class NoneArgument:
    """`None` as a call's argument (`enableExecutableCaching(None)`): a plain `None` in a plan means "no call"."""

    def render(self) -> str:
        return "None"

    def resolve(self, sdk: Dict[str, Any]) -> None:
        return None

    def to_dict(self) -> None:
        return None


NONE = NoneArgument()


class OptionCall(NamedTuple):
    """One call on the options object: `opts.<method>(*args)`, `method` dotted as `Training.gradientAccumulation`.

    A named tuple rather than a frozen dataclass: a plan makes a few dozen of them on every `to_options()`, and
    a tuple is made several times faster.
    """

    method: str
    args: Tuple[Any, ...] = ()

    def render(self, variable: str = "opts") -> str:
        return f"{variable}.{self.method}({', '.join(render(a) for a in self.args)})"

    def to_dict(self) -> Dict[str, Any]:
        return {"method": self.method, "args": [to_dict(a) for a in self.args]}


@dataclass(frozen=True)
class OptionsPlan:
    """How to build a `poptorch.Options`: the object to create, then the calls to make on it, in order.

    `notes` say what the options object sets itself (PopDist's, under poprun); they are shown as comments.
    """

    options: Construct
    calls: Tuple[OptionCall, ...]
    compile_only: bool = False
    notes: Tuple[str, ...] = ()

    def __str__(self) -> str:
        modules = sorted({_module(name) for name in _names(self)})
        lines = [f"import {module}" for module in modules]
        lines += ["", f"opts = {self.options.render()}"]
        lines += [f"# {note}" for note in self.notes]
        lines += [call.render() for call in self.calls]
        return "\n".join(lines)

    def argument(self, method: str) -> Any:
        """The first argument of the plan's first call to `method`: what the build really sets (`None`: the plan
        makes no such call)."""
        return next((call.args[0] for call in self.calls if call.method == method), None)

    def to_json_string(self) -> str:
        """The plan as JSON text."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def to_dict(self) -> Dict[str, Any]:
        """The plan as JSON-serializable data."""
        return {
            "options": self.options.to_dict(),
            "calls": [call.to_dict() for call in self.calls],
            "compile_only": self.compile_only,
            "notes": list(self.notes),
        }

    def apply(self) -> Any:
        """Builds the `poptorch.Options` this plan describes. Needs the Poplar SDK; on a real run, an IPU."""
        if not self.compile_only and _SDK()["poptorch"].ipuHardwareVersion() not in IPU_MK2_HARDWARE_VERSIONS:
            raise RuntimeError("This requires an IPU Mk2 system to run.")
        return self.build()

    def build(self) -> Any:
        """Builds the `poptorch.Options` this plan describes, IPU or not (`apply()` first checks for one): to
        compare option states. Needs the Poplar SDK."""
        sdk = _SDK()
        options = self.options.resolve(sdk)
        for method, args in self.calls:
            _attributes(method)(options)(*resolve_arguments(args, sdk))
        return options


def render(value: Any) -> str:
    if isinstance(value, _SDK_VALUES):
        return value.render()
    if isinstance(value, list):
        return "[" + ", ".join(render(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{render(k)}: {render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def sdk_value(path: str) -> Any:
    """The SDK object named by the dotted `path` (`"popart.RecomputationType.Pipeline"`), its module imported."""
    return _lookup(path, _SDK())


def _lookup(path: str, sdk: Dict[str, Any]) -> Any:
    """The SDK object named by the dotted `path`, from its top-level module in `sdk`."""
    root, _, dotted_members = path.partition(".")
    try:
        return _attributes(dotted_members)(sdk[root])
    except AttributeError:
        pass
    root, *members = path.split(".")
    value = sdk[root]
    for index, member in enumerate(members, start=1):
        try:
            value = getattr(value, member)
        except AttributeError:
            # a package that has not imported its submodule yet (`popdist.poptorch`)
            if not isinstance(value, types.ModuleType):
                raise
            value = importlib.import_module(".".join([root, *members[:index]]))
    return value


_SCALARS = frozenset({bool, int, float, str, type(None)})

# a dotted name -> the getter of what it names from an object (`"Training.gradientAccumulation"`: the bound method
# of an options object); the names plans use are few
_attributes = functools.lru_cache(maxsize=None)(operator.attrgetter)


def resolve_arguments(arguments: Tuple[Any, ...], sdk: Dict[str, Any]) -> Sequence[Any]:
    """A call's `arguments` with every SDK value in them looked up in `sdk` (themselves when they hold none)."""
    if _SCALARS.issuperset(map(type, arguments)):
        return arguments
    return [resolve(argument, sdk) for argument in arguments]


def resolve(value: Any, sdk: Dict[str, Any]) -> Any:
    """`value` with every SDK value in it looked up in `sdk` (lists and dicts are copied)."""
    kind = type(value)
    if kind in _SDK_TYPES:
        return value.resolve(sdk)
    if kind is list:
        return list(value) if _SCALARS.issuperset(map(type, value)) else [resolve(item, sdk) for item in value]
    if kind is dict:
        if _SCALARS.issuperset(map(type, value.values())):
            return dict(value)
        return {key: resolve(item, sdk) for key, item in value.items()}
    return value


def to_dict(value: Any) -> Any:
    """`value` as JSON-serializable data: each `Ref`, `Construct` and `TempFile` in it as its `to_dict()`."""
    return _map_sdk_values(value, lambda sdk_value: sdk_value.to_dict())


_SDK_VALUES = (Ref, Construct, TempFile, NoneArgument)
_SDK_TYPES = frozenset(_SDK_VALUES)


def _map_sdk_values(value: Any, function) -> Any:
    """`value` with every `Ref`, `Construct` and `TempFile` in it replaced by `function` of it."""
    if isinstance(value, _SDK_VALUES):
        return function(value)
    if isinstance(value, list):
        return [_map_sdk_values(v, function) for v in value]
    if isinstance(value, dict):
        return {k: _map_sdk_values(v, function) for k, v in value.items()}
    return value


def _names(plan: OptionsPlan):
    """The dotted names a plan refers to (for its imports)."""

    def walk(value):
        if isinstance(value, Ref):
            yield value.path
        elif isinstance(value, Construct):
            yield value.path
            for inner in list(value.args) + [v for _, v in value.kwargs] + [a for _, args in value.chain for a in args]:
                yield from walk(inner)
        elif isinstance(value, TempFile):
            yield "tempfile.NamedTemporaryFile"
        elif isinstance(value, (list, tuple)):
            for inner in value:
                yield from walk(inner)
        elif isinstance(value, dict):
            for inner in value.values():
                yield from walk(inner)

    yield from walk(plan.options)
    for call in plan.calls:
        yield from walk(call.args)


def _module(name: str) -> str:
    """The module to import for a dotted name in printed code: its leading lowercase parts, as Python
    names modules, the last part excepted (`popdist.poptorch` for `popdist.poptorch.Options`)."""
    root, *attributes = name.split(".")
    parts = [root]
    for part in attributes[:-1]:
        if not part[:1].islower():
            break
        parts.append(part)
    return ".".join(parts)


class _SDK(dict):
    """The top-level modules a plan refers to (`poptorch`, `popart`, `torch`, ...), imported on first use; a missing
    SDK module is a `PoplarSDKNotFoundError`."""

    def __missing__(self, root: str) -> Any:
        try:
            module = self[root] = sys.modules.get(root) or importlib.import_module(root)
        except ImportError as error:
            missing = (error.name or root).split(".")[0]
            if missing in SDK_MODULES:
                raise PoplarSDKNotFoundError(missing) from error
            raise
        return module

