"""poptorch's own option files (`Options.loadFromFile`), both ways: a config written as one
(`to_options_file`, `OptionsPlan.to_options_lines`) and one read into a config (`from_options_file`,
`from_options_lines`). The doubles run a file as poptorch 3.4 does; what they make of an exported file has the
state `to_options()` builds, and the import of a file has the state the doubles make of it. Every refusal is one
line naming the file and the line."""

import locale
import os
import pickle
import subprocess
import sys

import pytest

from optimum_ipu_ext import (
    IPUConfig,
    OptionsFileError,
    OutputExistsError,
    PlainIPUConfig,
    UnsupportedOptionsError,
    __version__,
)
from optimum_ipu_ext.options.build import build_plan
from optimum_ipu_ext.recorder import sdk_modules
from optimum_ipu_ext.sdk.enums import enum_value, members
from optimum_ipu_ext.sdk.option_lines import OptionLine, lines_run
from optimum_ipu_ext.sdk.plan import Construct, OptionCall, OptionsPlan, Ref
from optimum_ipu_ext.sdk.popdist import PopDistLaunch
from support import doubles
from support.doubles import installed
from support.enum_values import POPART_ENUM_VALUES, POPTORCH_ENUM_VALUES
from support.expected_states import differences
from support.markers import NOT_UNDER_MUTMUT
from support.option_file_helpers import EXAMPLE, PRESETS, TEMP_FILE, built, loaded, seen


def write(folder, name, *lines):
    path = folder / name
    path.write_text("".join(line + "\n" for line in lines))
    return path


# --- the rule poptorch reads a file by ------------------------------------------------------------------------

def test_blank_lines_and_comments_are_skipped_and_lines_stripped():
    lines = ["deviceIterations(1)\n", "\n", "   \n", "# a comment\n", "   # an indented one\n",
             "  replicationFactor(2)  \n", "enableSyntheticData(True) # after a call: Python's own\n", "\t#\n"]
    assert lines_run(lines) == [
        OptionLine(1, "deviceIterations(1)"),
        OptionLine(6, "replicationFactor(2)"),
        OptionLine(7, "enableSyntheticData(True) # after a call: Python's own"),
    ]


def test_a_file_as_poptorch_reads_it_sets_what_its_calls_set(tmp_path, sdk):
    path = write(tmp_path, "run.cfg", "deviceIterations(1)", "setExecutionStrategy(poptorch.ShardedExecution())",
                 "  replicationFactor(3)", " ", "enableSyntheticData(True) # a comment after a call", "# a comment")
    options = doubles.poptorch.Options().loadFromFile(str(path))
    expected = doubles.poptorch.Options().deviceIterations(1).setExecutionStrategy(doubles.poptorch.ShardedExecution())
    expected.replicationFactor(3).enableSyntheticData(True)
    assert differences(seen(options, "training"), seen(expected, "training")) == {}


def test_files_loaded_in_turn_keep_what_the_last_does_not_change(tmp_path):
    first = write(tmp_path, "c1.cfg", "deviceIterations(32)", "replicationFactor(2)")
    second = write(tmp_path, "c2.cfg", "deviceIterations(4)")
    state = loaded("training", first, second)
    assert (state["device_iterations"], state["replication_factor"]) == (4, 2)
    config = PlainIPUConfig.from_options_file(training=[first, second])
    assert (config.device_iterations, config.replication_factor) == (4, 2)


@pytest.mark.parametrize("stack", ["doubles", "recorder"])
def test_a_line_that_does_not_compile_is_poptorchs_config_file_error(tmp_path, stack):
    path = write(tmp_path, "tmp.conf", "# the calls", "deviceIterations(1)", "", "outputMode(poptorch.OutputMode.All")
    context = installed() if stack == "doubles" else sdk_modules()
    with context:
        import poptorch

        options = poptorch.Options()
        with pytest.raises(poptorch.ConfigFileError) as raised:
            options.loadFromFile(str(path))
        assert options.device_iterations == 1 and options.defaultOutputMode()  # nothing ran
    # poptorch counts the lines it runs, and names the file by its base name
    assert str(raised.value) == ("SyntaxError at line 2 of tmp.conf: '(' was never closed\n"
                                 "> options.outputMode(poptorch.OutputMode.All\n")


@pytest.mark.parametrize("stack", ["doubles", "recorder"])
def test_only_poptorch_and_the_options_are_in_scope(tmp_path, stack):
    context = installed() if stack == "doubles" else sdk_modules()
    with context:
        import poptorch

        with pytest.raises(NameError, match="'torch' is not defined"):
            poptorch.Options().loadFromFile(str(write(tmp_path, "a.cfg", "Precision.setPartialsType(torch.half)")))
        with pytest.raises(NameError, match="'opts' is not defined"):
            poptorch.Options().loadFromFile(str(write(tmp_path, "b.cfg", "deviceIterations(opts)")))
        path = write(tmp_path, "c.cfg", "Precision.setPartialsType(poptorch.torch.half)")
        options = poptorch.Options().loadFromFile(str(path))
        assert options._popart.options["partialsTypeMatMuls"] == "half"


@pytest.mark.parametrize("stack", ["doubles", "recorder"])
def test_other_errors_come_out_as_raised_after_the_lines_before_them_ran(tmp_path, stack):
    path = write(tmp_path, "run.cfg", "deviceIterations(4)", "deviceIteration(4)")
    context = installed() if stack == "doubles" else sdk_modules()
    with context:
        import poptorch

        options = poptorch.Options()
        with pytest.raises(AttributeError, match="deviceIteration"):
            options.loadFromFile(str(path))
        assert options.device_iterations == 4


FILES = {  # the lines of files both stacks must read to the same state
    "the example": EXAMPLE.read_text().splitlines(),
    "every kind of argument": [
        "setExecutionStrategy(poptorch.PipelinedExecution("
        "poptorch.Stage('a').ipu(0), poptorch.Stage('b', 'c').ipu(1)))",
        "TensorLocations.setWeightLocation("
        "poptorch.TensorLocationSettings().useOnChipStorage(False).minElementsForOffChip(64))",
        "setAvailableMemoryProportion({'IPU0': 0.1, 'IPU1': 0.3})",
        '_Popart.set("autoRecomputation", 3)  # popart.RecomputationType.Pipeline',
        "Precision.setPartialsType(poptorch.torch.float16)",
        "outputMode(poptorch.OutputMode.Sum); options.randomSeed(7)",  # `options` is in scope too
        "enableExecutableCaching(None)",
        "relaxOptimizerAttributesChecks()",
        "device_iterations = 8",
    ],
    "phases": [
        "setExecutionStrategy(poptorch.SerialPhasedExecution(poptorch.Phase('0'), poptorch.Phase('1', '2'))"
        ".setTensorsLiveness(poptorch.Liveness.OffChipAfterEachPhase))",
    ],
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_the_recorder_loads_a_file_to_the_doubles_state(tmp_path, name):
    path = write(tmp_path, "run.cfg", *FILES[name])
    with sdk_modules():
        import poptorch

        recorded = seen(poptorch.Options().loadFromFile(str(path)), "training")
    assert differences(recorded, loaded("training", path)) == {}


# --- export: a config as an option file ------------------------------------------------------------------------

PRESET_TRAINING_FILE = f"""\
# poptorch options for training, from the IPU config "configs/pipelined-2ipu.json" (optimum-ipu-ext {__version__})
# Load them into a plain poptorch.Options: options = poptorch.Options(); options.loadFromFile(path)
# Not into popdist.poptorch.Options: under poprun it sets the replicas and process of its instance itself
# (it refuses replicationFactor); build those with IPUConfig.to_options()
replicationFactor(1)
Training.gradientAccumulation(128)
deviceIterations(1)
outputMode(poptorch.OutputMode.All)
randomSeed(1234)
enableExecutableCaching("exec")
autoRoundNumIPUs(True)
Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Mean)
Precision.enableStochasticRounding(True)
TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(True).useReplicatedTensorSharding(False))
setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
setAvailableMemoryProportion({{"IPU0": 0.1, "IPU1": 0.1}})
_Popart.set("autoRecomputation", 3)  # popart.RecomputationType.Pipeline
_Popart.set("disableGradAccumulationTensorStreams", True)
_Popart.set("accumulateOuterFragmentSettings.schedule", 3)  \
# popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized
_Popart.set("accumulateOuterFragmentSettings.excludedVirtualGraphs", ["0"])
_Popart.set("outlineThreshold", 10.0)
_Popart.set("scheduleNonWeightUpdateGradientConsumersEarly", True)
_Popart.setPatterns({{"TiedGather": True, "TiedGatherAccumulate": True, "UpdateInplacePrioritiesForIpu": True}})
"""


def test_the_preset_exports_as_written_out(tmp_path):
    config = PlainIPUConfig.from_json_file(PRESETS[0])
    path = config.to_options_file(tmp_path / "train.cfg", name="configs/pipelined-2ipu.json")
    assert path == str(tmp_path / "train.cfg")
    assert (tmp_path / "train.cfg").read_text() == PRESET_TRAINING_FILE
    assert config.options_plan(popdist=False).to_options_lines() == PRESET_TRAINING_FILE.splitlines()[4:]


def test_the_first_line_says_which_build_and_the_header_what_the_file_is_for(tmp_path):
    path = PlainIPUConfig().to_options_file(tmp_path / "infer.cfg", for_inference=True)
    header = [line for line in (tmp_path / "infer.cfg").read_text().splitlines() if line.startswith("#")]
    assert header == [
        f"# poptorch options for inference, from an IPU config (optimum-ipu-ext {__version__})",
        "# Load them into a plain poptorch.Options: options = poptorch.Options(); options.loadFromFile(path)",
        "# Not into popdist.poptorch.Options: under poprun it sets the replicas and process of its instance itself",
        "# (it refuses replicationFactor); build those with IPUConfig.to_options()",
    ]
    assert path.endswith("infer.cfg")


def test_a_file_is_ascii_whatever_its_name_and_values(tmp_path):
    config = PlainIPUConfig(executable_cache_dir="caché/\U0001F600", popart_options={"logDir": "journal\n\"é\""})
    config.to_options_file(tmp_path / "run.cfg", name="org/modèle\nx")
    text = (tmp_path / "run.cfg").read_bytes().decode("ascii")
    source = 'the IPU config "org/mod\\u00e8le\\nx"'
    assert text.splitlines()[0].endswith(f"from {source} (optimum-ipu-ext {__version__})")
    assert 'enableExecutableCaching(\'cach\\xe9/\\U0001f600\')' in text
    assert '_Popart.set("logDir", "journal\\n\\"\\u00e9\\"")' in text
    assert loaded("training", tmp_path / "run.cfg")["cachePath"] == "caché/\U0001F600"
    assert loaded("training", tmp_path / "run.cfg")["logDir"] == "journal\n\"é\""


@pytest.mark.parametrize(
    "value, line",
    [
        (Ref("popart.RecomputationType.NormOnly", as_int=True),
         '_Popart.set("k", 2)  # popart.RecomputationType.NormOnly'),
        (Ref("poptorch.OutputMode.Sum"), '_Popart.set("k", poptorch.OutputMode.Sum)'),
        (Ref("torch.float16"), '_Popart.set("k", poptorch.torch.float16)'),
        (float("inf"), '_Popart.set("k", float("inf"))'),
        (float("-inf"), '_Popart.set("k", float("-inf"))'),
        ({"a": [1, "b"]}, '_Popart.set("k", {"a": [1, "b"]})'),
        (Construct("poptorch.Stage", ("0",), chain=(("ipu", (1,)),)), '_Popart.set("k", poptorch.Stage("0").ipu(1))'),
        # SDK values inside lists, dicts and constructs are written for the file too
        ([Ref("popart.RecomputationType.Pipeline", as_int=True),
          Ref("popart.RecomputationType.NormOnly", as_int=True)],
         '_Popart.set("k", [3, 2])  # popart.RecomputationType.Pipeline, popart.RecomputationType.NormOnly'),
        ({Ref("torch.float16"): Ref("popart.RecomputationType.Pipeline", as_int=True)},
         '_Popart.set("k", {poptorch.torch.float16: 3})  # popart.RecomputationType.Pipeline'),
        (Construct("poptorch.Stage", (Ref("torch.float16"),), kwargs=(("k", Ref("torch.float32")),),
                   chain=(("ipu", (Ref("popart.RecomputationType.Pipeline", as_int=True),)),)),
         '_Popart.set("k", poptorch.Stage(poptorch.torch.float16, k=poptorch.torch.float32).ipu(3))'
         '  # popart.RecomputationType.Pipeline'),
        # JSON's escapes up to U+FFFF, Python's beyond
        ("\uffff", '_Popart.set("k", "\\uffff")'),
        ("\U00010000", "_Popart.set(\"k\", '\\U00010000')"),
    ],
)
def test_each_kind_of_argument_is_written_with_only_poptorch_in_scope(value, line):
    plan = OptionsPlan(Construct("poptorch.Options"), (OptionCall("_Popart.set", ("k", value)),))
    assert plan.to_options_lines() == [line]


@pytest.mark.parametrize("module, values", [("poptorch", POPTORCH_ENUM_VALUES), ("popart", POPART_ENUM_VALUES)])
def test_an_integer_enum_member_is_written_as_its_value(module, values):
    written = {(enum, member): enum_value(f"{module}.{enum}.{member}")
               for enum, found in values.items() for member, value in found.items() if isinstance(value, int)}
    assert written == {(enum, member): value for enum, found in values.items() for member, value in found.items()
                       if isinstance(value, int)}
    assert len(written) > 20


def test_a_member_s_value_counts_from_0_unless_the_table_gives_it():
    assert members("Final EveryN All") == [("Final", 0), ("EveryN", 1), ("All", 2)]
    assert members("OnePerGroup=0 AllReplicas=2") == [("OnePerGroup", 0), ("AllReplicas", 2)]


def test_a_temporary_file_is_drawn_afresh_by_each_load(tmp_path):
    PlainIPUConfig().to_options_file(tmp_path / "run.cfg")
    line = next(line for line in (tmp_path / "run.cfg").read_text().splitlines() if "saveInitializersToFile" in line)
    assert line == (
        '_Popart.set("saveInitializersToFile", __import__("tempfile").NamedTemporaryFile().name)'
        "  # a fresh temporary file"
    )
    with installed():
        loads = [doubles.poptorch.Options().loadFromFile(str(tmp_path / "run.cfg")) for _ in range(2)]
        names = {options._popart.options["saveInitializersToFile"] for options in loads}
    assert len(names) == 2 and loaded("training", tmp_path / "run.cfg")["saveInitializersToFile"] == TEMP_FILE


@pytest.mark.parametrize("path", ["popart.SyntheticDataMode.Off", "popdist.getNumInstances"])
def test_only_poptorchs_names_can_be_written(path):
    plan = OptionsPlan(Construct("poptorch.Options"), (OptionCall("_Popart.set", ("k", Ref(path))),))
    refusal = f"`{path}` cannot be written in a poptorch option file: only `poptorch` is in scope"
    with pytest.raises(ValueError, match=refusal):
        plan.to_options_lines()


def test_only_poptorch_s_classes_can_be_made_in_a_file():
    plan = OptionsPlan(Construct("poptorch.Options"), (OptionCall("_Popart.set", ("k", Construct("torch.Tensor"))),))
    with pytest.raises(ValueError) as raised:
        plan.to_options_lines()
    assert str(raised.value) == (
        "`torch.Tensor` cannot be written in a poptorch option file: only `poptorch` is in scope"
    )


def test_a_plan_of_popdist_options_is_not_written(tmp_path):
    config = PlainIPUConfig(replication_factor=4)
    plan = build_plan(vars(config), popdist=PopDistLaunch(num_replicas=4, num_instances=2))
    with pytest.raises(ValueError) as raised:
        plan.to_options_lines()
    assert str(raised.value) == ("a poptorch option file is loaded into a plain poptorch.Options; this plan makes "
                                 "popdist.poptorch.Options(ipus_per_replica=1): plan the build with popdist=False")


def test_the_file_is_of_a_plain_build_under_poprun_too(tmp_path, monkeypatch):
    monkeypatch.setenv("POPDIST_NUM_TOTAL_REPLICAS", "4")
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "2")
    monkeypatch.setenv("POPDIST_REPLICA_INDEX_OFFSET", "2")
    PlainIPUConfig(replication_factor=4).to_options_file(tmp_path / "run.cfg")
    assert loaded("training", tmp_path / "run.cfg")["replication_factor"] == 4


def test_an_existing_file_is_kept_unless_overwrite(tmp_path):
    path = write(tmp_path, "run.cfg", "deviceIterations(4)  # by hand")
    with pytest.raises(OutputExistsError) as raised:
        PlainIPUConfig().to_options_file(path)
    assert str(raised.value) == f"'{path}' exists: pass overwrite=True to overwrite it"
    assert isinstance(raised.value, FileExistsError) and path.read_text() == "deviceIterations(4)  # by hand\n"
    PlainIPUConfig(device_iterations=2).to_options_file(path, overwrite=True)
    assert "deviceIterations(2)" in path.read_text().splitlines()
    assert sorted(os.listdir(tmp_path)) == ["run.cfg"]  # written atomically: no partial file left


def test_a_failed_write_leaves_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        PlainIPUConfig().to_options_file(tmp_path / "missing" / "run.cfg")
    assert os.listdir(tmp_path) == []


def test_an_invalid_config_writes_nothing(tmp_path):
    config = PlainIPUConfig()
    config.__dict__["layers_per_ipu"] = [1, 2]  # disagrees with ipus_per_replica=1: refused when planned
    config.__dict__["ipus_per_replica"] = 3
    with pytest.raises(ValueError):
        config.to_options_file(tmp_path / "run.cfg")
    assert os.listdir(tmp_path) == []


# --- import: an option file as a config -----------------------------------------------------------------------

EXAMPLE_SETTINGS = {  # what the example's calls set, written out; the rest is poptorch's defaults, imported as such
    "device_iterations": 32,
    "replication_factor": 16,
    "gradient_accumulation_steps": 8,
    "num_io_tiles": 64,
    "popart_options": {"defaultBufferingDepth": 8},
    "stochastic_rounding": True,
    "executable_cache_dir": "",
    "matmul_proportion": None,
    "execution_strategy": None,
}


@pytest.mark.parametrize("stack", ["recorder", "doubles"])
def test_the_example_imports_to_what_poptorch_loads_it_to(stack):
    if stack == "doubles":
        with installed(hardware_version=2):
            config = IPUConfig.from_options_file(training=EXAMPLE)
    else:
        config = IPUConfig.from_options_file(training=EXAMPLE)
    assert {name: getattr(config, name) for name in EXAMPLE_SETTINGS} == EXAMPLE_SETTINGS
    assert differences(built(config, "training"), loaded("training", EXAMPLE)) == {}


def test_the_example_is_in_the_style_of_such_files():
    text = EXAMPLE.read_text()
    for call in ("deviceIterations(", "replicationFactor(", "TensorLocations.numIOTiles(", "_Popart.set("):
        assert call in text
    assert "# enableExecutableCaching(" in text and ")    # " in text  # a call commented out, a comment after a call


def test_a_class_imports_into_itself():
    assert type(IPUConfig.from_options_file(training=EXAMPLE)) is IPUConfig
    assert type(PlainIPUConfig.from_options_file(training=EXAMPLE)) is PlainIPUConfig


def test_training_and_inference_files_import_into_one_config(tmp_path):
    training = write(tmp_path, "train.cfg", "replicationFactor(4)", "Training.gradientAccumulation(16)")
    inference = write(tmp_path, "infer.cfg", "replicationFactor(2)", "deviceIterations(8)")
    config = PlainIPUConfig.from_options_file(training=str(training), inference=inference, layers_per_ipu=[2, 3])
    assert (config.replication_factor, config.gradient_accumulation_steps, config.device_iterations) == (4, 16, 1)
    assert (config.inference_replication_factor, config.inference_device_iterations) == (2, 8)
    assert config.layers_per_ipu == [2, 3]
    inference_only = PlainIPUConfig.from_options_file(inference=[inference])
    assert (inference_only.replication_factor, inference_only.inference_replication_factor) == (1, 2)


YAML_LINES = ["deviceIterations(20)", "replicationFactor(8)", "TensorLocations.numIOTiles(128)",
              '_Popart.set("defaultBufferingDepth", 256)']


def test_lines_import_as_the_file_of_those_lines(tmp_path):
    from_file = PlainIPUConfig.from_options_file(training=write(tmp_path, "run.cfg", *YAML_LINES))
    from_lines = PlainIPUConfig.from_options_lines(training=YAML_LINES)
    from_text = PlainIPUConfig.from_options_lines(training="\n".join(YAML_LINES) + "\n")
    assert from_lines.settings_dict() == from_file.settings_dict() == from_text.settings_dict()
    assert (from_lines.num_io_tiles, from_lines.popart_options) == (128, {"defaultBufferingDepth": 256})
    both = PlainIPUConfig.from_options_lines(training=YAML_LINES, inference=(*YAML_LINES, "deviceIterations(4)"))
    assert (both.device_iterations, both.inference_device_iterations) == (20, 4)


def test_lines_split_as_a_files_lines_are():
    config = PlainIPUConfig.from_options_lines(training="deviceIterations(2)\r\nreplicationFactor(4)\rrandomSeed(3)")
    assert (config.device_iterations, config.replication_factor, config.seed) == (2, 4, 3)


@pytest.mark.parametrize("given", [[1], "deviceIterations(1)".encode(), None.__class__, [b"x"]])
def test_lines_are_strings(given):
    with pytest.raises(TypeError, match="`training` must be option lines: a list of strings, or a string"):
        PlainIPUConfig.from_options_lines(training=given)


@pytest.mark.parametrize("given", [[], 3, {"a.cfg"}])
def test_files_are_a_path_or_a_list_of_paths(given):
    refusal = "`inference` must be the path of an option file, or a non-empty list of paths"
    with pytest.raises(TypeError, match=refusal):
        PlainIPUConfig.from_options_file(inference=given)


@pytest.mark.parametrize("method", ["from_options_file", "from_options_lines"])
def test_a_build_is_needed(method):
    with pytest.raises(TypeError) as raised:
        getattr(PlainIPUConfig, method)(layers_per_ipu=[1])
    assert str(raised.value) == "option files or lines are needed for `training` or `inference`, or both"


def test_a_builder_that_loads_a_file_imports_on_the_recorder(tmp_path):
    path = write(tmp_path, "run.cfg", "deviceIterations(6)")
    with sdk_modules():
        import poptorch

        options = poptorch.Options().replicationFactor(2)
        options.loadFromFile(str(path))
        config = PlainIPUConfig.from_options(training=options)
    assert (config.replication_factor, config.device_iterations) == (2, 6)


def test_reading_files_imports_no_torch_unless_a_line_names_it(tmp_path):
    plain = write(tmp_path, "plain.cfg", *YAML_LINES)
    dtype = write(tmp_path, "dtype.cfg", "Precision.setPartialsType(poptorch.torch.half)")
    code = (
        "import sys\n"
        "from optimum_ipu_ext import PlainIPUConfig\n"
        f"PlainIPUConfig.from_options_file(training={str(plain)!r})\n"
        "print(sorted(name for name in ('torch', 'transformers', 'poptorch') if name in sys.modules))\n"
        f"config = PlainIPUConfig.from_options_file(training={str(dtype)!r})\n"
        "print(config.enable_half_partials, 'torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout == "[]\nTrue True\n"


def test_what_the_import_drops_is_warned(tmp_path):
    path = write(tmp_path, "run.cfg", 'setAvailableMemoryProportion({"IPU0": 0.1, "IPU1": 0.2})')
    with pytest.warns(UserWarning, match="the training memory proportions of IPU1, beyond the 1 IPUs"):
        config = PlainIPUConfig.from_options_file(training=path, ipus_per_replica=1)
    assert config.matmul_proportion == 0.1


@NOT_UNDER_MUTMUT
def test_what_the_import_drops_is_warned_at_the_callers_line(tmp_path):
    path = write(tmp_path, "run.cfg", 'setAvailableMemoryProportion({"IPU0": 0.1, "IPU1": 0.2})')
    with pytest.warns(UserWarning) as caught:
        PlainIPUConfig.from_options_file(training=path, ipus_per_replica=1)
    assert caught[0].filename == __file__
    with pytest.warns(UserWarning) as caught:
        PlainIPUConfig.from_options_lines(training=path.read_text(), ipus_per_replica=1)
    assert caught[0].filename == __file__


# --- refusals: one line each, naming the file and the line --------------------------------------------------------

REFUSED_LINES = {  # file lines -> (the number of the line refused, what is wrong)
    "a syntax error": (["# first", "deviceIterations(4)", "", "# again", "outputMode(poptorch.OutputMode.All"],
                       5, "SyntaxError: '(' was never closed."),
    "an unknown method": (["deviceIterations(4)", "deviceIteration(4)"], 2,
                          "AttributeError: Invalid attribute deviceIteration."),
    "an unknown method of a part": (["Training.accumulation(4)"], 1,
                                    "AttributeError: Invalid attribute accumulation."),
    "too many arguments": (["deviceIterations(1, 2)"], 1,
                           "TypeError: deviceIterations(): too many positional arguments."),
    "too few arguments": (["Training.gradientAccumulation()"], 1,
                          "TypeError: gradientAccumulation(): missing a required argument: 'gradient_accumulation'."),
    "a wrong type": (['replicationFactor("4")'], 1,
                     "AssertionError: Unexpected type <class 'str'> for option replication_factor. "
                     "Expected <class 'int'>."),
    "a value poptorch refuses": (["TensorLocations.numIOTiles(33)"], 1,
                                 "AssertionError: numIOTiles must be an even number between 32 and 192."),
    "a name not in scope": (["Precision.setPartialsType(torch.half)"], 1,
                            "NameError: name 'torch' is not defined (only `poptorch` is in scope in an option file)."),
    "an import": (["import os"], 1, "SyntaxError: invalid syntax."),
    "an assignment of no option": (["replicationFactor(2)", "x = 1"], 2,
                                   "AssertionError: Invalid option x, valid options are"),
    "a second statement without the prefix": (["deviceIterations(1); replicationFactor(2)"], 1,
                                              "NameError: name 'replicationFactor' is not defined"),
    # poptorch's exec has fresh globals: no name of the module that runs the lines, and the names given it are
    # locals, which a comprehension does not see
    "a name of the reader's module": (['deviceIterations(importlib.import_module("os") and 2)'], 1,
                                      "NameError: name 'importlib' is not defined"),
    "poptorch in a comprehension": (["deviceIterations([poptorch for _ in [1]] and 2)"], 1,
                                    "NameError: name 'poptorch' is not defined"),
}


@pytest.mark.parametrize("name", sorted(REFUSED_LINES))
def test_a_line_poptorch_refuses_is_named_with_its_file(tmp_path, name):
    lines, number, problem = REFUSED_LINES[name]
    path = write(tmp_path, "run.cfg", *lines)
    with pytest.raises(OptionsFileError) as raised:
        PlainIPUConfig.from_options_file(training=path)
    error = raised.value
    assert (error.path, error.line, error.text) == (str(path), number, lines[number - 1])
    at_line = f"{path}, line {number} (`{lines[number - 1]}`)"
    assert str(error).startswith(f"Cannot read the poptorch options of {at_line}: {problem}")
    assert "\n" not in str(error) and error.problem.startswith(problem.rstrip("."))
    assert isinstance(error, OSError) and pickle.loads(pickle.dumps(error)).line == number
    with pytest.raises(OptionsFileError) as from_lines:
        PlainIPUConfig.from_options_lines(inference=lines)
    assert str(from_lines.value).startswith(f"Cannot read the poptorch options of the inference lines, line {number} ")


def test_poptorch_refuses_the_same_lines(tmp_path):
    for lines, _, _ in REFUSED_LINES.values():
        with installed(), pytest.raises((AssertionError, AttributeError, TypeError, NameError,
                                         doubles.poptorch.ConfigFileError)):
            doubles.poptorch.Options().loadFromFile(str(write(tmp_path, "run.cfg", *lines)))


def test_the_files_are_read_before_any_runs(tmp_path):
    good = write(tmp_path, "good.cfg", "deviceIterations(4)")
    with pytest.raises(OptionsFileError, match="missing.cfg: no such file"):
        PlainIPUConfig.from_options_file(training=[good, tmp_path / "missing.cfg"], inference=good)


def test_a_failing_line_of_a_later_file_names_that_file(tmp_path):
    good = write(tmp_path, "good.cfg", "deviceIterations(4)")
    bad = write(tmp_path, "bad.cfg", "", "deviceIterations()")
    with pytest.raises(OptionsFileError) as raised:
        PlainIPUConfig.from_options_file(training=[good, bad])
    assert (raised.value.path, raised.value.line) == (str(bad), 2)


def test_a_missing_file(tmp_path):
    with pytest.raises(OptionsFileError) as raised:
        PlainIPUConfig.from_options_file(training=tmp_path / "run.cfg")
    assert str(raised.value) == (
        f"Cannot read the poptorch options of {tmp_path / 'run.cfg'}: no such file or directory."
    )
    assert (raised.value.line, raised.value.text) == (None, None)


def test_a_directory(tmp_path):
    with pytest.raises(OptionsFileError) as raised:
        PlainIPUConfig.from_options_file(training=tmp_path)
    assert str(raised.value) == f"Cannot read the poptorch options of {tmp_path}: a directory, not an option file."


def test_an_unreadable_file(tmp_path, monkeypatch):
    path = write(tmp_path, "run.cfg", "deviceIterations(4)")

    def refused(file, *args, **kwargs):  # what open() raises for a file without read permission (root reads any)
        raise PermissionError(13, "Permission denied", file)

    from optimum_ipu_ext.options import option_file_import

    monkeypatch.setattr(option_file_import, "open", refused, raising=False)
    with pytest.raises(OptionsFileError) as raised:
        PlainIPUConfig.from_options_file(training=path)
    assert str(raised.value) == f"Cannot read the poptorch options of {path}: cannot be read (Permission denied)."


def test_a_file_that_is_not_text(tmp_path):
    encoding = locale.getpreferredencoding(False)
    if "utf" not in encoding.lower().replace("-", ""):
        pytest.skip(f"the locale's encoding, {encoding}, may decode any byte")
    path = tmp_path / "run.cfg"
    path.write_bytes(b"deviceIterations(4)\n\x81\xff\n")
    with pytest.raises(OptionsFileError) as raised:
        PlainIPUConfig.from_options_file(training=path)
    name = encoding.lower().replace("_", "-")
    assert str(raised.value) == (f"Cannot read the poptorch options of {path}: not {name} text, the "
                                 "encoding poptorch reads it in (invalid start byte at byte 20).")


def test_a_null_character(tmp_path):
    path = tmp_path / "run.cfg"
    path.write_bytes(b"deviceIterations(4\x00)\n")
    with pytest.raises(OptionsFileError) as raised:
        PlainIPUConfig.from_options_file(training=path)
    assert str(raised.value).startswith(f"Cannot read the poptorch options of {path}")
    assert "null" in str(raised.value)


@pytest.mark.parametrize("text", ["", "\n\n   \n", "# deviceIterations(4)\n  # replicationFactor(2)\n"])
def test_a_file_without_a_call_is_refused(tmp_path, text):
    path = tmp_path / "run.cfg"
    path.write_text(text)
    with pytest.raises(OptionsFileError) as raised:
        PlainIPUConfig.from_options_file(training=path)
    assert str(raised.value) == (
        f"Cannot read the poptorch options of {path}: no option call, only blank lines and comments."
    )
    with pytest.raises(OptionsFileError, match="of the training lines: no option call"):
        PlainIPUConfig.from_options_lines(training=text)


def test_an_empty_file_beside_others_is_what_poptorch_makes_of_it_nothing(tmp_path):
    empty = write(tmp_path, "empty.cfg", "# all off for now")
    config = PlainIPUConfig.from_options_file(training=[write(tmp_path, "run.cfg", "deviceIterations(4)"), empty])
    assert config.device_iterations == 4
    with pytest.raises(OptionsFileError, match=f"of {empty}, {empty}: no option call"):
        PlainIPUConfig.from_options_file(training=[empty, empty])


REFUSED_OPTIONS = {  # file lines -> {option: (where, problem)}
    "a log folder": (["deviceIterations(4)", 'logDir("/logs")  # of one run'],
                     {"logDir (log_dir)": (2, "'/logs' given: where one run writes its logs")}),
    "a value no setting takes": (["deviceIterations(0)"],
                                 {"deviceIterations (device_iterations)": (1, "0: `device_iterations=0` is invalid: "
                                                                          "numbers must be >= 1.")}),
    "a PopART value no setting takes": (['_Popart.set("customCodelets", None)'],
                                        {"customCodelets": (1, "None: values must be what PopART options take: "
                                                            "booleans, finite numbers, strings, unsigned integers, "
                                                            "and lists or objects of strings and unsigned integers")}),
    "the last line that set it": (['logDir("a")', "deviceIterations(2)", 'logDir("b")'],
                                  {"logDir (log_dir)": (3, "'b' given: where one run writes its logs")}),
    "a strategy": (["setExecutionStrategy(poptorch.PipelinedExecution(poptorch.Stage('a').ipu(-1)))"],
                   {"setExecutionStrategy": (1, "PipelinedExecution: stage 0: `ipu` must be an integer >= 0")}),
}


@pytest.mark.parametrize("name", sorted(REFUSED_OPTIONS))
def test_an_option_no_setting_holds_is_refused_naming_its_line(tmp_path, name):
    lines, expected = REFUSED_OPTIONS[name]
    path = write(tmp_path, "run.cfg", *lines)
    with pytest.raises(UnsupportedOptionsError) as raised:
        PlainIPUConfig.from_options_file(training=path)
    error = raised.value
    assert error.options == {option: problem for option, (_, problem) in expected.items()}
    assert error.locations == {option: f"{path}, line {line}" for option, (line, _) in expected.items()}
    for option, (line, problem) in expected.items():
        assert f"`{option}` ({path}, line {line}: {problem})" in str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.options, copy.locations, str(copy)) == (error.options, error.locations, str(error))


def test_refusals_of_both_builds_name_the_build_and_the_line(tmp_path):
    training = write(tmp_path, "train.cfg", "deviceIterations(4)")
    inference = write(tmp_path, "infer.cfg", "", 'logDir("/inference-logs")')
    with pytest.raises(UnsupportedOptionsError) as raised:
        PlainIPUConfig.from_options_file(training=training, inference=inference)
    assert raised.value.locations == {"logDir (log_dir) (inference)": f"{inference}, line 2"}
    assert str(raised.value) == ("No IPU config rebuilds these options: `logDir (log_dir) (inference)` "
                                 f"({inference}, line 2: '/inference-logs' given: where one run writes its logs).")


def test_a_refused_option_is_named_by_the_line_that_set_it_not_a_later_one(tmp_path):
    path = write(tmp_path, "run.cfg", 'logDir("/logs")', "deviceIterations(4)", "replicationFactor(2)")
    with pytest.raises(UnsupportedOptionsError) as raised:
        PlainIPUConfig.from_options_file(training=path)
    assert raised.value.locations == {"logDir (log_dir)": f"{path}, line 1"}


def test_located_ignores_options_the_error_does_not_name():
    locations = {"log_dir": "a.cfg, line 1", "x": "b.cfg, line 2"}
    error = UnsupportedOptionsError({"log_dir": "'/logs' given"}).located(locations)
    assert error.locations == {"log_dir": "a.cfg, line 1"}
    assert str(error) == "No IPU config rebuilds these options: `log_dir` (a.cfg, line 1: '/logs' given)."


def test_a_setting_both_builds_share_must_be_alike_in_both_files(tmp_path):
    training = write(tmp_path, "train.cfg", "TensorLocations.numIOTiles(128)")
    inference = write(tmp_path, "infer.cfg", "deviceIterations(4)")
    with pytest.raises(UnsupportedOptionsError) as raised:
        PlainIPUConfig.from_options_file(training=training, inference=inference)
    assert raised.value.options == {
        "TensorLocations.numIOTiles (numIOTiles) (inference)": "'not set' given, 128 rebuilt"
    }
