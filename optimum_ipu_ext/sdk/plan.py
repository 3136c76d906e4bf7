"""The options plan: the ordered `poptorch.Options` calls a configuration implies, as plain data.

A plan can be printed as the equivalent Python, written as the lines of a poptorch option file
(`to_options_lines()`), turned into data (`to_dict()`) or JSON (`to_json_string()`), compared and tested on any
machine. `OptionsPlan.apply()` is the only code in the package that touches the Poplar SDK.
"""

import functools
import importlib
import json
import math
import operator
import os
import sys
import types
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, NamedTuple, Sequence, Tuple

from ..errors import PoplarSDKNotFoundError
from .enums import enum_value

IPU_MK2_HARDWARE_VERSIONS = (2, 21)
SDK_MODULES = ("poptorch", "popart", "popdist")


@dataclass(frozen=True)
class Ref:
    """A name from the SDK, looked up when the plan is applied: `poptorch.OutputMode.All`."""

    path: str
    as_int: bool = False

    def render(self, in_file: bool = False) -> str:
        if not in_file:
            return f"int({self.path})" if self.as_int else self.path
        # an option file has only `poptorch` in scope: an enum member as its value, torch as poptorch's own import
        root = self.path.split(".")[0]
        if self.as_int:
            return str(enum_value(self.path))
        if root == "torch":
            return f"poptorch.{self.path}"
        if root != "poptorch":
            raise ValueError(f"`{self.path}` cannot be written in a poptorch option file: only `poptorch` is in scope")
        return self.path

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

    def render(self, in_file: bool = False) -> str:
        if in_file and not self.path.startswith("poptorch."):
            raise ValueError(f"`{self.path}` cannot be written in a poptorch option file: only `poptorch` is in scope")
        arguments = [render(a, in_file) for a in self.args] + [f"{k}={render(v, in_file)}" for k, v in self.kwargs]
        text = f"{self.path}({', '.join(arguments)})"
        for method, args in self.chain:
            text += f".{method}({', '.join(render(a, in_file) for a in args)})"
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

    def render(self, in_file: bool = False) -> str:
        # an option file imports what it needs itself: only `poptorch` is in its scope
        return '__import__("tempfile").NamedTemporaryFile().name' if in_file else "tempfile.NamedTemporaryFile().name"

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

    def render(self, in_file: bool = False) -> str:
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

    def render(self, variable: str = "opts", in_file: bool = False) -> str:
        """The call as Python, on `variable`; `in_file`: as a line of a poptorch option file, which names no
        variable and has only `poptorch` in scope."""
        call = f"{self.method}({', '.join(render(a, in_file) for a in self.args)})"
        return call if in_file else f"{variable}.{call}"

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

    def to_options_lines(self) -> List[str]:
        """The calls as the lines of a poptorch option file, which `poptorch.Options().loadFromFile(path)` runs:
        each without the `opts.` prefix, with only `poptorch` in scope (a PopART enum member written as its value,
        the member named in a comment at the end of the line; a dtype as `poptorch.torch.float16`).

        Raises:
            ValueError: the plan makes other options than a plain `poptorch.Options` (PopDist's, under poprun).
        """
        if self.options != Construct("poptorch.Options"):
            raise ValueError(
                f"a poptorch option file is loaded into a plain poptorch.Options; this plan makes "
                f"{self.options.render()}: plan the build with popdist=False"
            )
        lines = []
        for call in self.calls:
            line = call.render(in_file=True)
            named = [value.path for value in _sdk_values(call.args) if isinstance(value, Ref) and value.as_int]
            named += ["a fresh temporary file" for value in _sdk_values(call.args) if isinstance(value, TempFile)]
            lines.append(f"{line}  # {', '.join(named)}" if named else line)
        return lines

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


def render(value: Any, in_file: bool) -> str:
    """`value` as Python source; `in_file`: as a poptorch option file writes it, with only `poptorch` in scope."""
    if isinstance(value, _SDK_VALUES):
        return value.render(in_file)
    if isinstance(value, list):
        return "[" + ", ".join(render(v, in_file) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{render(k, in_file)}: {render(v, in_file)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        # JSON's escapes are Python's, but for a character beyond U+FFFF, which JSON writes as two surrogates
        return json.dumps(value) if all(ord(character) <= 0xFFFF for character in value) else ascii(value)
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
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


def _sdk_values(value: Any) -> Iterator[Any]:
    """Each `Ref`, `Construct` and `TempFile` in `value`, those in a `Construct`'s arguments and chained calls too."""
    if isinstance(value, (Ref, TempFile)):
        yield value
    elif isinstance(value, Construct):
        yield value
        chained = (argument for _, arguments in value.chain for argument in arguments)
        yield from _sdk_values([*value.args, *(v for _, v in value.kwargs), *chained])
    elif isinstance(value, (list, tuple)):
        for inner in value:
            yield from _sdk_values(inner)
    elif isinstance(value, dict):
        for inner in value.values():
            yield from _sdk_values(inner)


def _names(plan: OptionsPlan) -> Iterator[str]:
    """The dotted names a plan refers to (for its imports)."""
    for value in _sdk_values([plan.options, *(call.args for call in plan.calls)]):
        yield "tempfile.NamedTemporaryFile" if isinstance(value, TempFile) else value.path


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

