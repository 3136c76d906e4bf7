"""The training scripts of examples/ run: without the Poplar SDK each stops with one line; over the poptorch doubles
each runs up to compiling for the IPU, having handed poptorch the options of the config it loads.

The IPUTrainer script runs optimum-graphcore 0.7.1's real trainer on the IPU-host stack (its modules import over the
doubles there) and the trainer double of `doubles.optimum_graphcore` on the current stack, where the real trainer
cannot import; a test keeps the double's signature that of 0.7.1.
"""

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from support import PRESET
from support.doubles import optimum_graphcore, poptorch, state
from support.doubles.poptorch import models
from support.stack import TEST_BASE

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SCRIPTS = ["train_ipu_trainer.py", "train_poptorch.py", "train_lightning.py"]
REPLICAS = 4  # not the scripts' default, so a script that drops --replication-factor fails
# what Lightning 2.0 and torch say of themselves while the scripts run
pytestmark = [pytest.mark.filterwarnings(f"ignore::Warning:{module}.*")
              for module in ("pytorch_lightning", "lightning_fabric", "pkg_resources", "torch")]


def no_sdk_line(script):
    return (f"{script}: needs the Poplar SDK (poptorch is not installed): run it on an IPU host with the SDK "
            "enabled; `ipu-config show CONFIG` previews the options on any machine\n")


@pytest.mark.parametrize("script", SCRIPTS)
def test_without_the_sdk_a_script_stops_with_one_line(script, tmp_path):
    environment = {name: value for name, value in os.environ.items() if name != "OPTIMUM_IPU_EXT_TEST_BASE"}
    result = subprocess.run([sys.executable, str(EXAMPLES / script)], cwd=str(tmp_path), env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", no_sdk_line(script))
    assert list(tmp_path.iterdir()) == []  # it stopped before writing anything


@pytest.fixture
def run_example(sdk, monkeypatch, tmp_path):
    """`run_example(script, *arguments)` runs the script as `python script ...` in this process, over the doubles,
    up to where the poptorch double stops; returns `(the executor that was to compile, every wrapping)`."""
    monkeypatch.chdir(tmp_path)
    drop_modules("lightning_graphcore")  # imported anew over the doubles: it asks poptorch for IPUs on import

    def run(script, *arguments):
        monkeypatch.setattr(sys, "argv", [script, *arguments])
        models.wrapped.clear()
        with pytest.raises(models.CompilationStopped) as stopped:
            runpy.run_path(str(EXAMPLES / script), run_name="__main__")
        return stopped.value.executor, list(models.wrapped)

    yield run
    models.wrapped.clear()
    drop_modules("lightning_graphcore")


def drop_modules(package):
    for name in [name for name in sys.modules if name == package or name.startswith(package + ".")]:
        del sys.modules[name]


def expected_states(replicas=REPLICAS):
    """The option states of the config the scripts load with `--replication-factor replicas`, for training and
    inference."""
    from optimum_ipu_ext import IPUConfig

    config = IPUConfig.from_pretrained(str(PRESET), replication_factor=replicas)
    return state(config.to_options()), state(config.to_options(for_inference=True))


def test_the_poptorch_script_trains_with_the_config_options_and_a_poptorch_optimizer(run_example):
    executor, wrappings = run_example("train_poptorch.py", "--replication-factor", str(REPLICAS), "--steps", "1")
    training, _ = expected_states()
    [wrapping] = wrappings
    assert wrapping.training and executor.model is wrapping.model
    assert type(wrapping.model).__name__ == "TinyClassifier"
    assert isinstance(wrapping.optimizer, poptorch.optim.AdamW)
    assert state(wrapping.options) == training
    assert training["replication_factor"] == REPLICAS and training["gradient_accumulation"] == 128


def test_the_lightning_script_gives_the_strategy_the_training_and_inference_options(run_example):
    executor, wrappings = run_example("train_lightning.py", "--replication-factor", str(REPLICAS), "--steps", "1",
                                      "--out", "lightning")
    training, inference = expected_states()
    assert [wrapping.training for wrapping in wrappings] == [True, False]
    assert executor.model is wrappings[0].model and executor.options.Training.gradient_accumulation == 128
    assert isinstance(wrappings[0].optimizer, torch.optim.AdamW) and wrappings[1].optimizer is None
    assert [state(wrapping.options) for wrapping in wrappings] == [training, inference]
    assert training != inference


@pytest.fixture
def ipu_trainer(sdk, monkeypatch):
    """`from optimum.graphcore import IPUTrainer, IPUTrainingArguments` gives 0.7.1's real classes on the IPU-host
    stack (imported over the doubles, with the model modules that fill `to_pipelined`'s registry, as
    `optimum/graphcore/__init__.py` imports them) and the trainer double on the current stack."""
    if TEST_BASE == "upstream":
        package = sys.modules["optimum.graphcore"]  # conftest's stand-in
        importlib.import_module("optimum.graphcore.models.bert")
        trainer = importlib.import_module("optimum.graphcore.trainer")
        arguments = importlib.import_module("optimum.graphcore.training_args")
        monkeypatch.setattr(package, "IPUTrainer", trainer.IPUTrainer, raising=False)
        monkeypatch.setattr(package, "IPUTrainingArguments", arguments.IPUTrainingArguments, raising=False)
    else:
        import optimum_ipu_ext.config.configuration  # noqa: F401  (its base is chosen before the stand-in is in place)

        monkeypatch.setitem(sys.modules, "optimum.graphcore", optimum_graphcore)
    from optimum.graphcore import IPUTrainer

    return IPUTrainer


def test_the_ipu_trainer_script_trains_with_the_config_options(ipu_trainer, run_example):
    executor, wrappings = run_example("train_ipu_trainer.py", "--replication-factor", str(REPLICAS), "--steps", "1",
                                      "--out", "trained")
    training, _ = expected_states()
    [wrapping] = wrappings
    assert wrapping.training and executor.model is wrapping.model
    assert isinstance(wrapping.optimizer, poptorch.optim.AdamW)
    assert wrapping.optimizer.accum_type == torch.float16  # the trainer's, in half precision
    assert state(wrapping.options) == training  # the config's seed kept: the script hands it to the trainer
    expected_model = "BertForSequenceClassification"
    if TEST_BASE == "upstream":
        expected_model = "Pipelined" + expected_model
    assert type(wrapping.model).__name__ == expected_model


def source_of(module):
    """The source of one of optimum-graphcore 0.7.1's installed modules, read without importing it."""
    spec = importlib.util.find_spec("optimum")
    for location in spec.submodule_search_locations:
        path = Path(location) / "graphcore" / f"{module}.py"
        if path.is_file():
            return ast.parse(path.read_text(encoding="utf-8"))
    raise FileNotFoundError(f"optimum-graphcore's {module}.py is not installed")


def class_node(tree, name):
    return next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name)


def test_the_trainer_double_has_the_signature_of_the_real_one():
    init = next(node for node in class_node(source_of("trainer"), "IPUTrainer").body
                if isinstance(node, ast.FunctionDef) and node.name == "__init__")
    defaults = [None] * (len(init.args.args) - len(init.args.defaults)) + init.args.defaults
    real = [(argument.arg, None if default is None else ast.literal_eval(default))
            for argument, default in zip(init.args.args, defaults)]
    double = [(name, None if parameter.default is inspect.Parameter.empty else parameter.default)
              for name, parameter in inspect.signature(optimum_graphcore.IPUTrainer.__init__).parameters.items()]
    assert double == real


def test_the_training_arguments_double_has_real_fields_with_their_defaults():
    real = {}
    for node in class_node(source_of("training_args"), "IPUTrainingArguments").body:
        if isinstance(node, ast.AnnAssign):
            keywords = {keyword.arg: keyword.value for keyword in getattr(node.value, "keywords", [])}
            real[node.target.id] = ast.literal_eval(keywords["default"]) if "default" in keywords else None
    double = {field.name: None if field.default is dataclasses.MISSING else field.default
              for field in dataclasses.fields(optimum_graphcore.IPUTrainingArguments)}
    assert double == {name: real[name] for name in double}
    assert len(double) >= 14


def test_the_trainer_double_refuses_what_it_does_not_model(sdk):
    args = optimum_graphcore.IPUTrainingArguments(output_dir="out")
    with pytest.raises(NotImplementedError, match=r"given: \['callbacks'\]"):
        optimum_graphcore.IPUTrainer(model=torch.nn.Linear(1, 1), ipu_config=object(), args=args, callbacks=[])
    with pytest.raises(TypeError, match="do_eval"):
        optimum_graphcore.IPUTrainingArguments(output_dir="out", do_eval=True)


# --- examples/measure_ipu_trainer.py: a trial of `plan --trials`, measured for `calibrate` --------------------------

MEASURE = "measure_ipu_trainer.py"


def measuring_script():
    """examples/measure_ipu_trainer.py as a module, its `main()` not run."""
    spec = importlib.util.spec_from_file_location("measure_ipu_trainer", EXAMPLES / MEASURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def trial(tmp_path):
    """A trial's folder (the preset on 4 replicas) and a folder holding a tiny BERT's config.json."""
    from optimum_ipu_ext import IPUConfig
    from support.placement_fixtures import tiny_model

    IPUConfig.from_pretrained(str(PRESET), replication_factor=REPLICAS).save_pretrained(str(tmp_path / "trial"))
    model = tiny_model("BertForQuestionAnswering")
    model.config.architectures = ["BertForQuestionAnswering"]
    model.config.save_pretrained(str(tmp_path / "model"))
    return tmp_path / "trial", tmp_path / "model"


def test_without_the_sdk_the_measuring_script_stops_with_one_line(trial, tmp_path):
    config, model = trial
    environment = {name: value for name, value in os.environ.items() if name != "OPTIMUM_IPU_EXT_TEST_BASE"}
    result = subprocess.run([sys.executable, str(EXAMPLES / MEASURE), "--config", str(config), "--model", str(model),
                             "--micro-batch-size", "2", "--sequence-length", "8", "--out", str(tmp_path / "run")],
                            cwd=str(tmp_path), env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, timeout=300)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (f"{MEASURE}: needs the Poplar SDK (poptorch is not installed): run it on an IPU host "
                             "with the SDK enabled; `ipu-config place CONFIG --model MODEL` times it on any "
                             "machine\n")
    assert not (tmp_path / "run").exists()


def test_the_measuring_script_trains_the_trial_s_config_with_ipu_trainer(ipu_trainer, run_example, trial):
    config, model = trial
    executor, wrappings = run_example(MEASURE, "--config", str(config), "--model", str(model), "--micro-batch-size",
                                      "2", "--sequence-length", "8", "--steps", "1", "--out", "run")
    training, _ = expected_states()
    [wrapping] = wrappings
    assert wrapping.training and executor.model is wrapping.model
    assert state(wrapping.options) == training  # the config's seed kept
    expected_model = "BertForQuestionAnswering"
    if TEST_BASE == "upstream":
        expected_model = "Pipelined" + expected_model
    assert type(wrapping.model).__name__ == expected_model


def _measured_architectures():
    """The architectures the measuring script makes inputs for, but optimum-graphcore's own (GroupBERT)."""
    from optimum_ipu_ext.placement.models import ARCHITECTURES

    unsupported = measuring_script().UNSUPPORTED
    return [name for name in ARCHITECTURES if name not in unsupported and not name.startswith("GroupBert")]


@pytest.mark.parametrize("architecture", _measured_architectures())
def test_the_measuring_script_s_random_inputs_train_each_kind_of_model(architecture):
    """A batch of two of its samples, through the model in training: a loss."""
    from transformers import default_data_collator

    from support.placement_fixtures import tiny_model

    script = measuring_script()
    model = tiny_model(architecture)
    if getattr(model.config, "pad_token_id", 0) is None:  # as the script sets it
        model.config.pad_token_id = model.config.eos_token_id
    audio = "2Vec" in architecture or "Hubert" in architecture
    facts = {"micro_batch_size": 2, "sequence_length": 400 if audio else 8,
             "decoder_sequence_length": 4 if "ConditionalGeneration" in architecture else None}
    data = script.RandomInputs(architecture, model.config, facts, 5)
    assert len(data) == 5
    batch = default_data_collator([data[0], data[1]])
    output = model.train()(**batch)
    assert output.loss.dim() == 0 and torch.isfinite(output.loss)


def test_what_the_measuring_script_leaves_is_a_run_calibrate_reads(trial, tmp_path):
    """The trainer's result files, then the script's own: calibrate reads the run with the script's facts."""
    from transformers import AutoConfig

    from optimum_ipu_ext import IPUConfig
    from optimum_ipu_ext.config.measured_runs import read_measured_runs

    config, model = trial
    out = tmp_path / "run"
    out.mkdir()
    ipu_config = IPUConfig.from_pretrained(str(config))
    # as IPUTrainer.save_metrics writes them: 1 host call a step of 2 x 128 x 4 samples
    metrics = {"epoch": 1.0, "train_loss": 4.1, "train_runtime": 10.0, "train_samples_per_second": 204.8,
               "train_steps_per_second": 0.2}
    for name in ("train_results.json", "all_results.json"):
        (out / name).write_text(json.dumps(metrics, indent=4, sort_keys=True))
    facts = {"micro_batch_size": 2, "sequence_length": 8, "decoder_sequence_length": None,
             "architecture": "BertForQuestionAnswering", "ipu": "bow"}
    measuring_script().save_run(str(out), AutoConfig.from_pretrained(str(model)), ipu_config, facts)
    assert json.loads((out / "ipu_run.json").read_text()) == {**facts, "written_by": "examples/measure_ipu_trainer.py"}
    [run] = read_measured_runs([str(out)])
    assert (run.architecture, run.micro_batch_size, run.sequence_length, run.ipu, run.measured_samples_per_second,
            run.ipu_config["replication_factor"]) == ("BertForQuestionAnswering", 2, 8, "bow", 204.8, REPLICAS)
