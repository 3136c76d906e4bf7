"""What is generated from the settings table: the JSON Schema (draft 2020-12) of `ipu_config.json` and the
attribute and method tables of docs/.

Editors use the schema to complete and check configs as they are typed (`ipu-config schema`, or the copy shipped
in the package as `ipu_config.schema.json`). It holds what one setting allows: type, choices, bounds,
default and one line of documentation. What JSON Schema cannot say (mostly rules between settings) is
checked by the core only; `RULES_NOT_IN_SCHEMA` lists it in the schema's description.
"""

import json
from typing import Any, Dict, List, Mapping, Union, get_args, get_origin

from .legacy import LEGACY_KEYS, LegacyKey
from .schema import NoneType, Setting, describe, union_members
from .table import MAX_IPUS_IN_A_JOB, METHODS_HELD_OTHERWISE, SETTINGS, TRANSFORMERS_KEYS, UNSUPPORTED_CALLS

SCHEMA_FILE = "ipu_config.schema.json"

RULES_NOT_IN_SCHEMA = (
    "a per-IPU list (`layers_per_ipu` but [-1] and, on one IPU, lists with -1; a `matmul_proportion` list; "
    "`serialized_*_splits_per_ipu`) has one entry per IPU of the pipeline (`ipus_per_replica`; `inference_*` for "
    "inference)",
    "a serialization factor and its splits per IPU are not both given",
    "`accumulate_outer_fragment_excluded_virtual_graphs` are IPUs of the pipeline (below `ipus_per_replica`)",
    "`popart_options` does not set a PopART option that a setting making a call sets",
    "`optimizer_location` needs `optimizer_state_offchip` null, `zero_seed` needs `seed` 0 or null, "
    "`replicated_tensor_sharding` needs `optimizer_state_offchip`",
    "the size of `input_replica_grouping` divides `replication_factor`",
    "a tensor location's keys are TensorLocationSettings methods, with booleans or unsigned integers as they take",
    "`num_io_tiles` is even",
    "`popart_options` values are what PopART options take: booleans, finite numbers, strings, unsigned integers, "
    "and lists or objects of strings and unsigned integers",
    f"replicas x IPUs per replica is at most {MAX_IPUS_IN_A_JOB}",
    "with `auto_round_num_ipus` not true (and `connection_type` not `never`), replicas x IPUs per replica is a power "
    "of two in each build (on one host, up to 64; under poprun, each instance's replicas)",
    "splits per IPU sit on consecutive IPUs",
    "a stage has `blocks`, a non-empty list of block ids each in no other stage, and optionally an `ipu` >= 0",
    "`execution_stages`, `execution_phases`, `separate_backward_phase` and `tensors_liveness` are given only for a "
    "strategy that reads them; a phased strategy has `execution_phases`; `parallel_phased` takes `tensors_liveness` "
    "`always_live` or `off_chip_after_fwd`",
)

_SCALARS = {bool: "boolean", int: "integer", float: "number", str: "string", NoneType: "null"}


def json_schema() -> Dict[str, Any]:
    """The JSON Schema of `ipu_config.json`."""
    properties: Dict[str, Any] = {name: _property(setting) for name, setting in SETTINGS.items()}
    for key, legacy in LEGACY_KEYS.items():
        properties[key] = _legacy_property(legacy)
    for key in sorted(TRANSFORMERS_KEYS):
        properties[key] = {"description": "An attribute of transformers' own configurations; not an IPU setting."}
    rules = "; ".join(RULES_NOT_IN_SCHEMA)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ipu_config.json",
        "description": "An IPU configuration of optimum-graphcore / optimum-ipu-ext. Checked by `ipu-config "
        f"validate`, not by this schema: {rules}.",
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }


def json_schema_string() -> str:
    """The schema as the JSON text `ipu-config schema` prints and the package ships."""
    return json.dumps(json_schema(), indent=2) + "\n"


def _legacy_property(legacy: LegacyKey) -> Dict[str, Any]:
    """A key of an earlier release: its value is carried over to the setting that holds it now, else ignored."""
    if legacy.carry is None:
        return {"deprecated": True, "description": f"Ignored, with a warning: {legacy.note}"}
    return {"deprecated": True, "type": [_SCALARS[legacy.kind], "null"],
            "description": f"Carried over, with a warning, to the setting that holds it now: {legacy.note}"}


def _property(setting: Setting) -> Dict[str, Any]:
    schema = _type(setting.annotation, setting)
    description = setting.doc
    if setting.sdk:
        description += f" Drives `opts.{setting.sdk.signature}`."
    schema.update(description=description, default=setting.default)
    return schema


def _type(annotation: Any, setting: Setting) -> Dict[str, Any]:
    origin = get_origin(annotation)
    if origin is Union:
        members = [_type(member, setting) for member in union_members(annotation)]
        return {"anyOf": members}
    if origin is list:
        schema = {"type": "array", "items": _type(get_args(annotation)[0], setting)}
        return {**schema, "minItems": setting.min_items} if setting.min_items else schema
    if origin is dict:
        return {"type": "object", "additionalProperties": _type(get_args(annotation)[1], setting)}
    if annotation is Any:
        return {}
    schema: Dict[str, Any] = {"type": _SCALARS[annotation]}
    if annotation is str and setting.choices:
        schema["enum"] = list(setting.choices)
    if annotation in (int, float):
        schema.update(_bounds(setting))
    return schema


def _bounds(setting: Setting) -> Dict[str, Union[int, float]]:
    bounds: Dict[str, Union[int, float]] = {}
    if setting.minimum is not None:
        bounds["minimum"] = setting.minimum
    if setting.maximum is not None:
        bounds["maximum"] = setting.maximum
    return bounds


def attribute_table(settings: Mapping[str, Setting]) -> str:
    """A Markdown table of `settings`: type, default, allowed values, the call each drives, what it does."""
    lines = [
        "| setting | type | default | allowed | drives | what it does |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, setting in settings.items():
        allowed = ", ".join(f"`{choice}`" for choice in setting.choices) or _bounds_text(setting)
        drives = f"`opts.{setting.sdk.signature}`" if setting.sdk else ""
        default = json.dumps(setting.default)
        kind = describe(setting.annotation)
        lines.append(f"| `{name}` | {kind} | `{default}` | {allowed} | {drives} | {setting.doc} |")
    return "\n".join(lines) + "\n"


def method_table() -> str:
    """A Markdown table of each `poptorch.Options` method (poptorch 3.4) that changes a build: the settings that hold
    it, how a config holds it otherwise, or why none does."""
    held: Dict[str, List[str]] = {}
    for name, setting in SETTINGS.items():
        if setting.sdk:
            held.setdefault(setting.sdk.signature, []).append(f"`{name}`")
    rows = {method: ", ".join(names) for method, names in held.items()}
    rows.update(METHODS_HELD_OTHERWISE)
    for method, why in UNSUPPORTED_CALLS.values():
        rows.setdefault(method, f"not held: {why}")
    lines = ["| method | in a config |", "| --- | --- |"]
    lines += [f"| `{method}` | {rows[method]} |" for method in sorted(rows, key=str.lower)]
    return "\n".join(lines) + "\n"


def _bounds_text(setting: Setting) -> str:
    if setting.minimum is not None and setting.maximum is not None:
        bounds = f"{setting.minimum} to {setting.maximum}"
    elif setting.minimum is not None:
        bounds = f">= {setting.minimum}"
    else:
        bounds = ""
    items = f"at least {setting.min_items} item{'s' if setting.min_items > 1 else ''}" if setting.min_items else ""
    return ", ".join(part for part in (bounds, items) if part)
