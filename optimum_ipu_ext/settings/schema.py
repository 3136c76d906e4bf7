"""Declarative settings: one `Setting` per configuration attribute, checked at assignment.

A `Setting` is a row of a table, as pydantic's `FieldInfo` is: name, type, default, one line of documentation and
what a value may be. The `poptorch.Options` call it drives is a second, small object on the row: its `Call`
(`sdk=Call("Training.gradientAccumulation", ...)`, the method dotted as `OptionCall.method`). Checking a value
against its row is cheap (plain `isinstance` walks over the annotation), which is what keeps constructing a config
fast. Nothing here imports transformers.
"""

import copy
import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union, get_args, get_origin

from ..errors import InvalidSettingError, SettingTypeError, UnknownSettingError, as_json
from ..sdk.plan import Ref, sdk_value

NoneType = type(None)


@dataclass(frozen=True)
class Call:
    """The `poptorch.Options` call a setting drives, both ways: how a value becomes the call, how the options'
    state reads back as a value.

    Args:
        method: dotted from the options object (`"Training.gradientAccumulation"`, `"_Popart.set"`).
        key: the leading argument of `method`, for calls that take a name: the PopART session option of
            `"_Popart.set"` (`"autoRecomputation"`).
        modes: the builds (`"training"`, `"inference"`) that make the call.
        composite: the call takes several settings at once (`setExecutionStrategy`): `options/build.py` makes it
            (and `options/readback.py` reads it back); otherwise the generic loop of `options/build.py` makes
            `method(key, argument)` from the row alone.
        sdk_enum: the SDK enum whose members the setting's choices stand for, e.g. `"popart.RecomputationType"`:
            the row's `choices` map each choice to its member's name.
        encode: turns the stored value into the call's argument, `None` meaning "make no call" and a tuple being
            the call's positional arguments. Default: a choice becomes its enum member (an int for PopART options);
            any other value is passed as it is.
        state: the keys of `poptorch.Options.toDict()` that the call writes; the first holds the value read back
            (default: `key`, the PopART session option).
        decode: the other direction of `encode`: the stored value for what the state holds under the keys of
            `state`, one argument each (`None` where the call was not made). Default: the value of `state[0]`, an
            enum member's value becoming its choice.
        sdk_default: the value poptorch / PopART holds where the call is not made: read back as `null`, so an
            imported config shows only what its builder changed.
    """

    method: str
    key: Optional[str] = None
    modes: Tuple[str, ...] = ("training", "inference")
    composite: bool = False
    sdk_enum: Optional[str] = None
    encode: Optional[Callable[[Any], Any]] = None
    decode: Optional[Callable[..., Any]] = None
    state: Tuple[str, ...] = ()
    sdk_default: Any = None

    def __post_init__(self):
        if self.key and not self.state:
            object.__setattr__(self, "state", (self.key,))

    @property
    def sets_popart_option(self) -> bool:
        """Whether the call sets a PopART session option (those go last in a build, as in optimum-graphcore's)."""
        return self.method.startswith("_Popart.")

    @property
    def signature(self) -> str:
        """The method as the reference tables name it: `_Popart.set("autoRecomputation", ...)`, `deviceIterations`."""
        return f'{self.method}("{self.key}", ...)' if self.key else self.method


@dataclass(frozen=True)
class Setting:
    """One configuration attribute: what it is and what it may hold; `sdk`, the call it drives.

    Args:
        name: the attribute name, as stored in `ipu_config.json`.
        annotation: its type, from `typing` (`int`, `Optional[List[int]]`, ...).
        default: the value used when the attribute is not given.
        doc: one line saying what it does.
        choices: the allowed values of a string setting; where `sdk.sdk_enum` names an enum, a mapping of each to
            its member's name.
        minimum, maximum: bounds of a number, or of every number in a list.
        min_items: the fewest items a list may have.
        constraint: a further check, returning what is allowed when the value breaks it, else `None`.
        null_as: what `null` is stored as, for a count whose call with poptorch's default (`replicationFactor(1)`)
            leaves the state that no call leaves.
        sdk: the `poptorch.Options` call the setting drives; `None` for settings read by the model
            (`layers_per_ipu`) rather than by the options. A setting with a call also takes `null`: no call,
            poptorch's / PopART's default stays (for an `inference_` twin, `null` is "as in training", as in
            optimum-graphcore).

    `choices` and `null_as` belong to this half: they decide what a value may be and what is stored, which `check`,
    `--set` and the documents read without the SDK; a `Call` only reads them (a choice's member, by `sdk_enum`).
    """

    name: str
    annotation: Any
    default: Any
    doc: str
    choices: Union[Tuple[str, ...], Mapping[str, str]] = ()
    minimum: Optional[float] = None
    maximum: Optional[float] = None
    min_items: int = 0
    constraint: Optional[Callable[[Any], Optional[str]]] = None
    null_as: Any = None
    sdk: Optional[Call] = None

    def __post_init__(self):
        if self.sdk and not type_checker(self.annotation)(None):
            object.__setattr__(self, "annotation", Optional[self.annotation])
        object.__setattr__(self, "_conforms", type_checker(self.annotation))
        # each choice's enum member, made once: plans are made on every `to_options()`
        members = {choice: Ref(self.sdk_member(choice), as_int=self.sdk.key is not None) for choice in self.choices} \
            if self.sdk and self.sdk.sdk_enum else {}
        object.__setattr__(self, "_members", members)

    def default_value(self) -> Any:
        """A fresh copy of the default, safe to mutate (defaults are flat lists and dicts)."""
        return copy.copy(self.default)

    def check(self, value: Any, field: Optional[str] = None) -> Any:
        """Returns `value` if it is allowed, else raises an error naming `field` (default: the setting name)."""
        field = field or self.name
        if value is None and self.null_as is not None:
            return self.null_as
        if not self._conforms(value):
            raise SettingTypeError(field, value, describe(self.annotation))
        if isinstance(value, list) and len(value) < self.min_items:
            items = "items" if self.min_items > 1 else "item"
            raise InvalidSettingError(field, value, f"at least {self.min_items} {items} needed")
        for number in _numbers(value):
            self._check_number(field, value, number)
        if self.choices:
            if value is not None and value not in self.choices:
                allowed = ", ".join(map(as_json, self.choices))
                raise InvalidSettingError(field, value, f"allowed values are {allowed}")
        problem = self.constraint(value) if self.constraint and value is not None else None
        if problem:
            raise InvalidSettingError(field, value, problem)
        return value

    def _check_number(self, field: str, value: Any, number: float) -> None:
        if not math.isfinite(number):
            raise InvalidSettingError(field, value, "numbers must be finite")
        below = self.minimum is not None and number < self.minimum
        above = self.maximum is not None and number > self.maximum
        if (below or above) and None not in (self.minimum, self.maximum):
            raise InvalidSettingError(field, value, f"numbers must be from {self.minimum} to {self.maximum}")
        if below:
            raise InvalidSettingError(field, value, f"numbers must be >= {self.minimum}")
        if above:
            raise InvalidSettingError(field, value, f"numbers must be <= {self.maximum}")

    def sdk_member(self, value: str) -> str:
        """The dotted SDK name a choice stands for: `"pipeline"` -> `"popart.RecomputationType.Pipeline"`."""
        return f"{self.sdk.sdk_enum}.{self.choices[value]}"

    def argument(self, value: Any) -> Any:
        """The argument the call takes for the stored `value`, through `sdk.encode`, else a choice's enum member;
        `None`: make no call."""
        if value is None:
            return None
        if self.sdk.encode is not None:
            return self.sdk.encode(value)
        return self._members[value] if self._members else value

    def read(self, state: Mapping[str, Any]) -> Any:
        """The stored value that gives `state` (a `poptorch.Options.toDict()`), read back through `sdk.decode`.
        Needs the SDK for a choice (its enum's values)."""
        call = self.sdk
        if call.decode is not None:
            value = call.decode(*[state.get(key) for key in call.state])
        else:
            value = state.get(call.state[0])
            if call.sdk_enum and value is not None:
                value = self.choice(value)
        return None if call.sdk_default is not None and value == call.sdk_default else value

    def choice(self, member: Any) -> Any:
        """The choice whose enum member is `member` (a member or its value); `member` itself where none is. Needs
        the SDK."""
        members = {int(sdk_value(self.sdk_member(choice))): choice for choice in self.choices}
        return members.get(int(member), member)


def table(*settings: Setting) -> Dict[str, Setting]:
    """An ordered name -> `Setting` mapping."""
    return {setting.name: setting for setting in settings}


def type_checker(annotation: Any) -> Callable[[Any], bool]:
    """A fast instance check for a `typing` annotation, built once per setting. Booleans are not numbers here."""
    if annotation is Any:
        return lambda value: True
    origin = get_origin(annotation)
    if origin is Union:
        members = [type_checker(member) for member in get_args(annotation)]
        return lambda value: any(member(value) for member in members)
    if origin is list:
        item = type_checker(get_args(annotation)[0])
        return lambda value: isinstance(value, list) and all(map(item, value))
    if origin is dict:
        key, item = (type_checker(argument) for argument in get_args(annotation))
        return lambda value: isinstance(value, dict) and all(key(k) and item(v) for k, v in value.items())
    if annotation in (int, float):
        numbers = (int, float) if annotation is float else int
        return lambda value: isinstance(value, numbers) and not isinstance(value, bool)
    return lambda value: isinstance(value, annotation)


_RANK = (bool, int, float, str)


def union_members(annotation: Any) -> Tuple[Any, ...]:
    """The members of a `Union` in one order, whatever order `typing` kept (it keeps the first it met of equal
    unions, which depends on what was imported before): scalars, then the rest, `None` last."""
    def rank(member: Any) -> int:
        return _RANK.index(member) if member in _RANK else len(_RANK) + (member is NoneType)

    return tuple(sorted(get_args(annotation), key=rank))


def describe(annotation: Any) -> str:
    """A readable name for an annotation: `Optional[List[int]]` -> `list of int, or null`."""
    origin = get_origin(annotation)
    if origin is Union:
        members = [describe(member) for member in union_members(annotation) if member is not NoneType]
        optional = NoneType in get_args(annotation)
        return " or ".join(members) + (", or null" if optional else "")
    if origin is list:
        return f"list of {describe(get_args(annotation)[0])}"
    if origin is dict:
        key, item = get_args(annotation)
        return f"object of {describe(key)} to {describe(item)}"
    names: Mapping[Any, str] = {bool: "bool", int: "int", float: "number", str: "string", NoneType: "null", Any: "any"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _numbers(value: Any):
    """The numbers in a value: itself, or the numbers of a list."""
    values = value if isinstance(value, list) else [value]
    return [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


_TRUE = ("true", "1", "y", "yes")
_FALSE = ("false", "0", "n", "no")


def parse_text(setting: Setting, text: str) -> Any:
    """Reads a value written as in `IPUConfig.update_from_string`: `true`, `4`, `0.1`, `[0 1]`, `null`, `name`.

    A choice is taken as written: `recomputation_mode=none` is the choice `"none"`, not null.
    """
    text = text.strip()
    if text in setting.choices:
        return text
    return setting.check(_parse(setting.name, text, setting.annotation))


def _parse(field: str, text: str, annotation: Any) -> Any:
    origin = get_origin(annotation)
    if origin is Union:
        members = get_args(annotation)
        if NoneType in members and text.lower() in ("null", "none"):
            return None
        lists = [m for m in members if get_origin(m) is list]
        if lists and text.startswith("["):
            return _parse(field, text, lists[0])
        scalars = [m for m in union_members(annotation) if m is not NoneType and get_origin(m) is not list]
        for scalar in scalars[:-1]:  # the first that reads the text: `false` as a bool, else a name as a string
            try:
                return _parse(field, text, scalar)
            except InvalidSettingError:
                continue
        return _parse(field, text, (scalars or lists)[-1])
    try:
        if origin is list:
            return _list(text) if text.startswith("[") else _not_written(field, text, annotation)
        if origin is dict:
            value = json.loads(text)
            return value if isinstance(value, dict) else _not_written(field, text, annotation)
        if annotation is bool:
            if text.lower() in _TRUE + _FALSE:
                return text.lower() in _TRUE
            return _not_written(field, text, annotation)
        if annotation in (int, float):
            return annotation(text)
    except ValueError:
        return _not_written(field, text, annotation)
    return text


def _list(text: str) -> Any:
    """A list written as JSON (`[{"blocks": ["a"]}]`) or with spaces between its items (`[0.1 0.2]`)."""
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(text.replace(" ", ","))


def _not_written(field: str, text: str, annotation: Any):
    examples = {bool: "true or false", int: "an integer", float: "a number"}
    expected = examples.get(annotation, describe(annotation))
    if get_origin(annotation) is list:
        expected += ", written as [a b c]"
    raise InvalidSettingError(field, text, f"expected {expected}")


def parse_update_string(update_str: str, settings: Mapping[str, Setting]) -> Dict[str, Any]:
    """Reads `"a=1,b=[0.1 0.2],c=true"` into checked values. Commas inside brackets or braces do not split."""
    updates = {}
    for assignment in _split_top_level(update_str):
        key, equals, text = assignment.partition("=")
        key = key.strip()
        if key not in settings:
            raise UnknownSettingError(key, settings)
        if not equals:
            raise InvalidSettingError(key, assignment, "expected key=value")
        updates[key] = parse_text(settings[key], text)
    return updates


def _split_top_level(text: str):
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += char in "[{"
        depth -= char in "]}"
        if char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part for part in parts if part.strip()]
