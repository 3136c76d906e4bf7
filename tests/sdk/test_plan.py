"""The options plan as data: how its values print, serialise and resolve, the imports its printed form needs, and
which failure to import the SDK is reported as a missing Poplar SDK."""

import os
import re
import sys
import tempfile
import textwrap
import types

import pytest

from optimum_ipu_ext import IPUConfig, PoplarSDKNotFoundError
from optimum_ipu_ext.sdk.plan import Construct, OptionCall, OptionsPlan, Ref, TempFile
from support import doubles


@pytest.fixture
def tools():
    """A stand-in SDK module: `tools.make(*args, **kwargs)` returns a `Made` that records them and chained calls."""

    class Made:
        def __init__(self, *args, **kwargs):
            self.calls = [("make", args, kwargs)]

        def then(self, *args):
            self.calls.append(("then", args, {}))
            return self

    return {"tools": types.SimpleNamespace(make=Made, one=1, two=types.SimpleNamespace(three=3))}


NESTED = Construct(
    "tools.make",
    args=(Ref("tools.one"), [Ref("tools.two.three"), 4]),
    kwargs=(("key", Ref("tools.one")), ("table", {"a": Ref("tools.two.three")})),
    chain=(("then", (Ref("tools.one"), "x")), ("then", ())),
)


def test_a_construct_resolves_every_sdk_value_in_it(tools):
    made = NESTED.resolve(tools)
    assert made.calls == [
        ("make", (1, [3, 4]), {"key": 1, "table": {"a": 3}}),
        ("then", (1, "x"), {}),
        ("then", (), {}),
    ]


def test_a_construct_prints_as_python():
    assert NESTED.render() == (
        'tools.make(tools.one, [tools.two.three, 4], key=tools.one, table={"a": tools.two.three})'
        '.then(tools.one, "x").then()'
    )


def test_a_construct_as_data():
    assert NESTED.to_dict() == {
        "new": "tools.make",
        "args": [{"sdk": "tools.one"}, [{"sdk": "tools.two.three"}, 4]],
        "kwargs": {"key": {"sdk": "tools.one"}, "table": {"a": {"sdk": "tools.two.three"}}},
        "chain": [["then", [{"sdk": "tools.one"}, "x"]], ["then", []]],
    }


def test_refs_and_temporary_files():
    assert (Ref("popart.X.Y").render(), Ref("popart.X.Y", as_int=True).render()) == ("popart.X.Y", "int(popart.X.Y)")
    assert Ref("popart.X.Y", as_int=True).to_dict() == {"sdk": "popart.X.Y", "int": True}
    assert TempFile().to_dict() == {"temp_file": True}
    assert TempFile().render() == "tempfile.NamedTemporaryFile().name"


def test_printed_plan_imports_every_module_it_names():
    plan = OptionsPlan(
        Construct("poptorch.Options"),
        (
            OptionCall("setExecutionStrategy", (Construct("poptorch.PipelinedExecution", args=(Ref("first.A"),)),)),
            OptionCall("x", (Construct("poptorch.S", kwargs=(("k", Ref("second.B")),)),)),
            OptionCall("y", (Construct("poptorch.S", chain=(("c", (Ref("third.C"),)),)),)),
            OptionCall("z", ([Ref("fourth.D")], {"key": Ref("fifth.E")}, TempFile())),
            OptionCall("w", (Ref("popdist.poptorch.Options"), Ref("torch.float16"))),
        ),
        notes=("a note",),
    )
    assert str(plan).splitlines()[:12] == [
        "import fifth", "import first", "import fourth", "import popdist.poptorch", "import poptorch", "import second",
        "import tempfile", "import third", "import torch", "", "opts = poptorch.Options()", "# a note",
    ]
    assert str(plan).splitlines()[-1] == "opts.w(popdist.poptorch.Options, torch.float16)"


def test_default_plan_as_data_draws_a_temporary_file():
    calls = IPUConfig().options_plan().to_dict()["calls"]
    assert {"method": "_Popart.set", "args": ["saveInitializersToFile", {"temp_file": True}]} in calls


def test_popart_options_are_set_last_through_popart(sdk):
    config = IPUConfig(popart_options={"decomposeGradSum": True, "enableStableNorm": False})
    lines = str(config.options_plan()).splitlines()
    assert lines[-2:] == ['opts._Popart.set("decomposeGradSum", True)', 'opts._Popart.set("enableStableNorm", False)']


def test_lists_print_with_every_item():
    config = IPUConfig(layers_per_ipu=[-1, -1, -1], accumulate_outer_fragment_excluded_virtual_graphs=[2, 0, 1])
    line = 'opts._Popart.set("accumulateOuterFragmentSettings.excludedVirtualGraphs", ["2", "0", "1"])'
    assert line in str(config.options_plan()).splitlines()


def test_encoder_on_the_cpu_is_not_supported_as_upstream_says():
    with pytest.raises(NotImplementedError) as raised:
        IPUConfig(execute_encoder_on_cpu_for_generation=True).options_plan()
    assert str(raised.value) == "execute_encoder_on_cpu_for_generation is not supported yet."


# --- which import failures mean "no Poplar SDK" ------------------------------------------------------------------


@pytest.fixture
def broken_poptorch(tmp_path, monkeypatch):
    """`import poptorch` finds a package on sys.path whose own import fails with `imports`."""

    def install(imports):
        package = tmp_path / "poptorch"
        package.mkdir()
        (package / "__init__.py").write_text(textwrap.dedent(f"import {imports}\n"))
        monkeypatch.syspath_prepend(str(tmp_path))
        for name in [name for name in sys.modules if name == "poptorch" or name.startswith("poptorch.")]:
            monkeypatch.delitem(sys.modules, name)
        monkeypatch.setitem(sys.modules, "popart", doubles.popart)  # imported before poptorch

    return install


def test_a_poptorch_without_its_native_part_is_a_missing_sdk(broken_poptorch):
    broken_poptorch("poptorch.poptorch_core")
    with pytest.raises(PoplarSDKNotFoundError) as raised:
        IPUConfig().to_options()
    assert raised.value.name == "poptorch" and "`to_options()` needs `poptorch`" in str(raised.value)


def test_a_dependency_missing_under_poptorch_is_not_a_missing_sdk(broken_poptorch):
    broken_poptorch("a_module_that_is_not_installed")
    with pytest.raises(ModuleNotFoundError) as raised:
        IPUConfig().to_options()
    assert not isinstance(raised.value, PoplarSDKNotFoundError)
    assert raised.value.name == "a_module_that_is_not_installed"


def test_each_build_draws_a_new_temporary_file_name_of_128_random_bits_and_creates_no_file(sdk):
    plan = IPUConfig(save_initializers_to_file=True).options_plan(compile_only=True)
    names = {plan.build().toDict()["saveInitializersToFile"] for _ in range(3)}
    assert len(names) == 3 and all(TempFile.drew(name) and not os.path.exists(name) for name in names)
    assert all(re.fullmatch(f"{tempfile.gettempprefix()}[0-9a-f]{{32}}", os.path.basename(name)) for name in names)


def test_a_plans_argument_to_a_method_is_that_of_its_first_call_and_none_without_one():
    calls = (OptionCall("deviceIterations", (2,)), OptionCall("deviceIterations", (3,)))
    plan = OptionsPlan(Construct("poptorch.Options"), calls)
    assert plan.argument("deviceIterations") == 2
    assert plan.argument("replicationFactor") is None
