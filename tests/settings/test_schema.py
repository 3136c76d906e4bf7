"""`settings/schema.py` on rows made here: which values each kind of annotation takes and how it is named, bounds,
choices, constraints and `null`; a `Call`'s defaults and names; a choice to its SDK enum member and back; values
read from text and `a=1,b=[0 1]` updates.

The rows of the package's own table, through a config: test_setting_values.py."""

import json
from typing import Any, Dict, List, Optional, Union

import pytest

from optimum_ipu_ext import InvalidSettingError, SettingTypeError, UnknownSettingError
from optimum_ipu_ext.sdk.plan import Ref
from optimum_ipu_ext.settings.schema import (
    Call,
    Setting,
    describe,
    parse_text,
    parse_update_string,
    table,
    union_members,
)

# Which values each kind of annotation takes, checked on settings made here (booleans are not numbers).
VALUES = {
    "true": True, "one": 1, "half": 0.5, "text": "s", "null": None, "ints": [1, 2], "floats": [0.5],
    "mixed": [1, "s"], "empty-list": [], "flags": {"a": True}, "counts": {"a": 1}, "int-keys": {1: True},
    "tuple": (1,),
}
ACCEPTS = [
    (int, {"one"}),
    (float, {"one", "half"}),
    (bool, {"true"}),
    (str, {"text"}),
    (Any, set(VALUES)),
    (Optional[int], {"one", "null"}),
    (List[int], {"ints", "empty-list"}),
    (Optional[List[int]], {"ints", "empty-list", "null"}),
    (Union[float, List[float]], {"one", "half", "ints", "floats", "empty-list"}),
    (Dict[str, bool], {"flags"}),
    (Optional[Dict[str, Any]], {"flags", "counts", "null"}),
]


@pytest.mark.parametrize("annotation, accepted", ACCEPTS, ids=[str(annotation) for annotation, _ in ACCEPTS])
def test_a_setting_takes_exactly_the_values_of_its_type(annotation, accepted):
    setting = Setting("probe", annotation, None, "A setting made by the test.")
    taken = set()
    for name, value in VALUES.items():
        try:
            setting.check(value)
        except SettingTypeError:
            continue
        taken.add(name)
    assert taken == accepted


def test_choices_and_constraints_apply_to_values_not_to_null():
    setting = Setting("probe", Optional[str], None, "", choices=("a", "b"), constraint=lambda value: "never")
    assert setting.check(None) is None
    with pytest.raises(InvalidSettingError, match=r'^`probe="c"` is invalid: allowed values are "a", "b"\.$'):
        setting.check("c")
    with pytest.raises(InvalidSettingError) as raised:
        setting.check("a")
    assert (str(raised.value), raised.value.value) == ('`probe="a"` is invalid: never.', "a")


def test_bounds_apply_to_every_number_of_a_list():
    setting = Setting("probe", List[float], [], "", minimum=0, maximum=1)
    assert setting.check([0, 0.5, 1]) == [0, 0.5, 1]
    for value, words in (([0.5, 1.5], "numbers must be from 0 to 1"), ([-0.5], "numbers must be from 0 to 1")):
        with pytest.raises(InvalidSettingError) as raised:
            setting.check(value)
        assert str(raised.value) == f"`probe={json.dumps(value)}` is invalid: {words}."
        assert (raised.value.field, raised.value.value) == ("probe", value)
    with pytest.raises(InvalidSettingError, match=r"^`probe=\[nan\]` is invalid: numbers must be finite\.$"):
        setting.check([float("nan")])


@pytest.mark.parametrize("bounds, value, words", [({"maximum": 1}, 2.0, "<= 1"), ({"minimum": 0}, -2.0, ">= 0")])
def test_a_single_bound_is_named_alone(bounds, value, words):
    with pytest.raises(InvalidSettingError) as raised:
        Setting("probe", float, 0.0, "", **bounds).check(value)
    assert str(raised.value) == f"`probe={value}` is invalid: numbers must be {words}."


@pytest.mark.parametrize("min_items, words", [(1, "at least 1 item needed"), (2, "at least 2 items needed")])
def test_a_list_has_at_least_its_fewest_items(min_items, words):
    setting = Setting("probe", List[int], [0], "", min_items=min_items)
    assert setting.check([0] * min_items) == [0] * min_items
    with pytest.raises(InvalidSettingError) as raised:
        setting.check([0] * (min_items - 1))
    assert str(raised.value) == f"`probe={json.dumps([0] * (min_items - 1))}` is invalid: {words}."


def test_a_default_is_copied_for_each_config():
    setting = Setting("probe", Dict[str, bool], {"a": True}, "")
    first = setting.default_value()
    first["b"] = False
    assert setting.default_value() == {"a": True} and setting.default == {"a": True}


# --- a row's call ----------------------------------------------------------------------------------------------------


def test_a_call_with_a_key_reads_its_state_under_that_key():
    assert Call("_Popart.set", key="autoRecomputation").state == ("autoRecomputation",)
    assert Call("_Popart.set", key="a", state=("b", "c")).state == ("b", "c")
    assert Call("deviceIterations").state == ()
    assert Call("deviceIterations").modes == ("training", "inference")


@pytest.mark.parametrize("call, popart, signature", [
    (Call("_Popart.set", key="autoRecomputation"), True, '_Popart.set("autoRecomputation", ...)'),
    (Call("_Popart.setPatterns"), True, "_Popart.setPatterns"),
    (Call("Training.gradientAccumulation"), False, "Training.gradientAccumulation"),
])
def test_a_call_s_signature_and_whether_it_sets_a_popart_option(call, popart, signature):
    assert (call.sets_popart_option, call.signature) == (popart, signature)


def test_a_setting_with_a_call_also_takes_null():
    assert Setting("probe", int, 1, "", sdk=Call("deviceIterations")).annotation == Optional[int]
    assert Setting("probe", int, 1, "").annotation is int
    assert Setting("probe", Optional[int], 1, "", sdk=Call("deviceIterations")).annotation == Optional[int]


def test_null_is_stored_as_null_as():
    setting = Setting("probe", Optional[int], 1, "", minimum=1, null_as=1)
    assert setting.check(None) == 1 and setting.check(3) == 3


# --- choices and SDK enum members, both ways -------------------------------------------------------------------------

# Rows made by each test that uses them, so that the test covers making a row's enum members (`__post_init__`)
def recomputation_row() -> Setting:
    return Setting("probe", Optional[str], None, "", choices={"none": "NoRecompute", "pipeline": "Pipeline"},
                   sdk=Call("_Popart.set", key="autoRecomputation", sdk_enum="popart.RecomputationType"))


def output_row() -> Setting:
    return Setting("probe", str, "all", "", choices={"all": "All", "final": "Final"},
                   sdk=Call("outputMode", state=("output_mode",), sdk_enum="poptorch.OutputMode"))


def test_a_choice_stands_for_its_enum_member():
    recomputation, output = recomputation_row(), output_row()
    assert recomputation.sdk_member("pipeline") == "popart.RecomputationType.Pipeline"
    assert [recomputation.argument(choice) for choice in ("none", "pipeline")] == [  # a PopART key's: as an int
        Ref("popart.RecomputationType.NoRecompute", as_int=True),
        Ref("popart.RecomputationType.Pipeline", as_int=True),
    ]
    assert [output.argument(choice) for choice in ("all", "final")] == [Ref("poptorch.OutputMode.All"),
                                                                       Ref("poptorch.OutputMode.Final")]
    assert recomputation.argument(None) is None  # no call


def test_encode_makes_the_argument_and_decode_reads_it_back():
    setting = Setting("probe", Optional[int], None, "", sdk=Call("probe", state=("a", "b"),
                                                                   encode=lambda value: (value, value + 1),
                                                                   decode=lambda a, b: None if a is None else a + b))
    assert setting.argument(3) == (3, 4)
    assert setting.read({"a": 1, "b": 2}) == 3 and setting.read({}) is None


def test_a_state_reads_back_as_its_value_and_an_sdk_default_as_null():
    setting = Setting("probe", Optional[float], None, "", sdk=Call("_Popart.set", key="k", sdk_default=10.0))
    assert setting.read({"k": 5.0}) == 5.0
    assert setting.read({"k": 10.0}) is None and setting.read({}) is None


def test_an_enum_member_reads_back_as_its_choice(sdk):
    recomputation = recomputation_row()
    assert recomputation.read({"autoRecomputation": 3}) == "pipeline"  # RecomputationType.Pipeline
    assert recomputation.read({"autoRecomputation": 0}) == "none"
    assert recomputation.choice(1) == 1  # Standard: no choice of this row stands for it
    assert output_row().read({"output_mode": 0}) == "final"


# --- names of types, and the table -----------------------------------------------------------------------------------


@pytest.mark.parametrize("annotation, words", [
    (int, "int"), (float, "number"), (bool, "bool"), (str, "string"), (Any, "any"),
    (Optional[List[int]], "list of int, or null"),
    (Union[List[float], float, None], "number or list of number, or null"),
    (Dict[str, bool], "object of string to bool"),
    (Union[str, bool], "bool or string"),
])
def test_a_type_is_named_as_the_errors_name_it(annotation, words):
    assert describe(annotation) == words


def test_the_members_of_a_union_come_scalars_first_and_null_last():
    assert union_members(Union[None, List[int], str, bool]) == (bool, str, List[int], type(None))


def test_a_table_maps_each_name_to_its_row_in_order():
    first, second = Setting("b", int, 0, ""), Setting("a", int, 0, "")
    assert list(table(first, second).items()) == [("b", first), ("a", second)]


# --- values read from text -------------------------------------------------------------------------------------------

TEXT_SETTINGS = table(
    Setting("count", Optional[int], None, ""),
    Setting("flag", bool, False, ""),
    Setting("proportion", Union[float, List[float]], 0.2, ""),
    Setting("mode", Optional[str], None, "", choices=("none", "all")),
    Setting("flags", Optional[Dict[str, bool]], None, ""),
    Setting("name", Union[bool, str], False, ""),
)


@pytest.mark.parametrize("name, text, value", [
    ("count", " 4 ", 4), ("count", "null", None), ("count", "None", None),
    ("flag", "yes", True), ("flag", "N", False), ("flag", "1", True),
    ("proportion", "0.5", 0.5), ("proportion", "[0.1 0.2]", [0.1, 0.2]), ("proportion", "[0.1, 0.2]", [0.1, 0.2]),
    ("mode", "none", "none"),  # a choice, not null
    ("flags", '{"a": true}', {"a": True}),
    ("name", "false", False), ("name", "exec", "exec"),  # the first member that reads it
])
def test_a_value_is_read_from_its_text(name, text, value):
    assert parse_text(TEXT_SETTINGS[name], text) == value


@pytest.mark.parametrize("name, text, words", [
    ("count", "four", "expected an integer"),
    ("flag", "maybe", "expected true or false"),
    ("flags", "[1]", "expected object of string to bool"),  # a union reads its members: null or an object
    ("mode", "some", 'allowed values are "none", "all"'),
])
def test_text_a_setting_cannot_read_is_refused_with_what_it_expects(name, text, words):
    with pytest.raises(InvalidSettingError) as raised:
        parse_text(TEXT_SETTINGS[name], text)
    assert str(raised.value) == f"`{name}={json.dumps(text)}` is invalid: {words}."


def test_an_update_string_splits_at_commas_outside_brackets_and_braces():
    assert parse_update_string('count=2, proportion=[0.1,0.2],flags={"a": true, "b": false},', TEXT_SETTINGS) == {
        "count": 2, "proportion": [0.1, 0.2], "flags": {"a": True, "b": False}}
    assert parse_update_string("", TEXT_SETTINGS) == {}


def test_an_update_string_refuses_an_unknown_key_and_an_assignment_without_a_value():
    with pytest.raises(UnknownSettingError):
        parse_update_string("counts=2", TEXT_SETTINGS)
    with pytest.raises(InvalidSettingError) as raised:
        parse_update_string("count", TEXT_SETTINGS)
    assert str(raised.value) == '`count="count"` is invalid: expected key=value.'
