"""`ipu-config plan`: the plan `plan()` gives for the same arguments, as text or JSON; `--write` saves the best
config (never over a file without `--force`, never where nothing fits); `--svg` and `--html` draw the plan; usage
errors name the option; a model that cannot be read is one line; no transformers without `--from`."""

import html.parser
import json
import xml.etree.ElementTree as ElementTree

import pytest

from optimum_ipu_ext import IPUConfig, PlainIPUConfig, plan
from optimum_ipu_ext.cli.arguments import IPU_HELP, RESERVE_HELP
from optimum_ipu_ext.placement.report.page import plan_page
from optimum_ipu_ext.placement.report.plan_picture import plan_svg
from optimum_ipu_ext.placement.report.text import plan_text
from support.cli_helpers import run, run_alone
from support.placement_fixtures import PLANNED_BERT
from support.placement_models import TINY_MODELS

MODEL = PLANNED_BERT
T5 = dict(TINY_MODELS["T5ForConditionalGeneration"].config, architectures=["T5ForConditionalGeneration"])
REQUEST = ("--ipus", "4", "--global-batch-size", "32", "--sequence-length", "512")
ARGUMENTS = {"ipus": 4, "global_batch_size": 32, "sequence_length": 512}
HINT = "Save the best: add --write OUT_DIR (it writes OUT_DIR/ipu_config.json)."
# a config on the plan's 4 IPUs and batch (so timed as rank base), with a setting of its own the candidates keep
BASE = {"ipus_per_replica": 4, "layers_per_ipu": [2, 1, 1, 1], "gradient_accumulation_steps": 32,
        "executable_cache_dir": "./cache"}
SVG = "{http://www.w3.org/2000/svg}"


def model_folder(folder, config):
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return model_folder(tmp_path_factory.mktemp("plan") / "bert", MODEL)


@pytest.fixture(scope="module")
def expected(model):
    """`plan()` of the model, called directly with the command's defaults."""
    return plan(model, base=PlainIPUConfig(), **ARGUMENTS)


@pytest.fixture
def base(tmp_path):
    path = tmp_path / "base.json"
    path.write_text(json.dumps(BASE))
    return path


def as_json(found):
    return json.loads(json.dumps(found.to_dict()))


def test_the_plan_as_text_then_how_to_save_the_best(capsys, model, expected):
    code, out, err = run(capsys, "plan", "--model", model, *REQUEST)
    assert (code, err) == (0, "")
    assert out == f"{expected}\n\n{HINT}\n"
    assert out.splitlines()[0] == f"{model}: BertForPreTraining on 4 GC200 IPUs, global batch 32, sequence length 512"


def test_top_is_the_rows_of_the_table(capsys, model, expected):
    code, out, _ = run(capsys, "plan", "--model", model, *REQUEST, "--top", "3")
    assert code == 0 and out == plan_text(expected.to_dict(), 3) + f"\n\n{HINT}\n"
    assert f"... and {len(expected.candidates) - 3} more (--top, --json)." in out.splitlines()


def test_the_plan_as_json_is_plan_s_dict(capsys, model, expected):
    code, out, err = run(capsys, "plan", "--model", model, *REQUEST, "--json")
    assert (code, json.loads(out), err) == (0, as_json(expected), "")


@pytest.mark.parametrize("options, arguments", [
    (["--pod", "pod16"], {"ipus": None, "pod": "pod16"}),
    (["--micro-batch-size", "2"], {"micro_batch_size": 2}),
    (["--sequence-length", "128"], {"sequence_length": 128}),
    (["--architecture", "BertForQuestionAnswering"], {"architecture": "BertForQuestionAnswering"}),
    (["--ipu", "bow"], {"ipu": "bow"}),
    (["--reserve", "0.1"], {"reserve": 0.1}),
    (["--inference"], {"inference": True, "global_batch_size": None}),
    (["--fp32"], {"fp32": True}),
], ids=lambda value: " ".join(value) if isinstance(value, list) else "")
def test_each_option_reaches_plan(capsys, model, options, arguments):
    request = dict(ARGUMENTS, **arguments)
    argv = [part for name, value in request.items() if value is not None and name not in arguments
            for part in (f"--{name.replace('_', '-')}", str(value))]
    code, out, _ = run(capsys, "plan", "--model", model, *argv, *options, "--json")
    found = plan(model, base=PlainIPUConfig(), **request)
    assert (code, json.loads(out)) == (0 if found.best else 1, as_json(found))
    assert found.to_dict() != plan(model, base=PlainIPUConfig(), **ARGUMENTS).to_dict()  # the option changed it


def test_the_decoder_s_length_reaches_plan(capsys, tmp_path):
    t5 = model_folder(tmp_path / "t5", T5)
    request = ["--ipus", "2", "--global-batch-size", "8", "--sequence-length", "16"]
    code, out, _ = run(capsys, "plan", "--model", t5, *request, "--decoder-sequence-length", "8", "--json")
    found = plan(t5, 2, global_batch_size=8, sequence_length=16, decoder_sequence_length=8, base=PlainIPUConfig())
    assert (code, json.loads(out)) == (0, as_json(found))
    assert json.loads(out)["decoder_sequence_length"] == 8
    assert found.to_dict() != plan(t5, 2, global_batch_size=8, sequence_length=16, base=PlainIPUConfig()).to_dict()


def test_the_revision_reaches_plan(capsys, model):
    code, out, err = run(capsys, "plan", "--model", model, *REQUEST, "--revision", "main")
    assert (code, out) == (1, "")
    assert err == (f"ipu-config: error: Cannot place {model}: a local folder has no revisions; --revision applies to "
                   "Hub repositories.\n")


def test_from_keeps_the_config_s_other_settings_and_times_it_as_rank_base(capsys, model, base):
    code, out, err = run(capsys, "plan", "--model", model, *REQUEST, "--from", base, "--json")
    found = plan(model, base=PlainIPUConfig.from_json_file(base), **ARGUMENTS)
    assert (code, json.loads(out), err) == (0, as_json(found), "")
    data = json.loads(out)
    assert data["reference"]["layers_per_ipu"] == [2, 1, 1, 1]
    assert {candidate["ipu_config"]["executable_cache_dir"] for candidate in data["candidates"]} == {"./cache"}
    code, out, _ = run(capsys, "plan", "--model", model, *REQUEST, "--from", base)
    rows = [line.split()[0] for line in out.splitlines() if line.split()[:1] and (line.split()[0].isdigit()
                                                                                  or line.split()[0] == "base")]
    assert code == 0 and rows[-1] == "base" and rows.count("base") == 1
    assert "The base config (base in the table): 4 IPUs x 1, micro-batch 1, G 32, " in out


def test_from_a_config_on_other_ipus_is_not_timed_and_a_note_says_so(capsys, model, base):
    code, out, err = run(capsys, "plan", "--model", model, "--ipus", "8", "--global-batch-size", "32", "--from", base,
                         "--json")
    assert (code, json.loads(out)["reference"]) == (0, None)
    assert err == (f"ipu-config: note: {base} is not timed beside the candidates (no row base): its IPUs or batch "
                   "are not the plan's, or it cannot be placed; the candidates keep its other settings.\n")


# --- --write ---------------------------------------------------------------------------------------------------------


def test_write_saves_the_best_config(capsys, model, expected, tmp_path):
    out_dir = tmp_path / "best"
    code, out, err = run(capsys, "plan", "--model", model, *REQUEST, "--write", out_dir)
    target = out_dir / "ipu_config.json"
    assert (code, out, err) == (0, f"{expected}\n", f"Wrote {target}: the best build, rank 1\n")
    loaded = IPUConfig.from_pretrained(str(out_dir))
    best = expected.best.ipu_config
    assert loaded.settings_dict() == best.settings_dict()
    assert (loaded.ipus_per_replica, loaded.layers_per_ipu, loaded.gradient_accumulation_steps) == (
        best.ipus_per_replica, best.layers_per_ipu, best.gradient_accumulation_steps)
    assert loaded.layers_per_ipu == list(expected.best.placement.layers_per_ipu)


def test_write_with_json_and_from_saves_the_best_with_the_config_s_settings(capsys, model, base, tmp_path):
    code, out, _ = run(capsys, "plan", "--model", model, *REQUEST, "--from", base, "--json", "--write", tmp_path)
    assert code == 0
    written = json.loads((tmp_path / "ipu_config.json").read_text())
    best = json.loads(out)["candidates"][0]
    assert written["executable_cache_dir"] == "./cache"
    assert PlainIPUConfig.from_dict(written).settings_dict() == PlainIPUConfig.from_dict(
        best["ipu_config"]).settings_dict()


def test_write_never_overwrites_without_force(capsys, model, expected, tmp_path):
    target = tmp_path / "ipu_config.json"
    target.write_text("{}")
    code, out, err = run(capsys, "plan", "--model", model, *REQUEST, "--write", tmp_path)
    assert (code, out, err) == (1, "", f"ipu-config: error: {target}: exists; pass --force to overwrite it\n")
    assert target.read_text() == "{}"
    code, _, err = run(capsys, "plan", "--model", model, *REQUEST, "--write", tmp_path, "--force")
    assert (code, err) == (0, f"Wrote {target}: the best build, rank 1\n")
    assert PlainIPUConfig.from_json_file(target).settings_dict() == expected.best.ipu_config.settings_dict()


def test_where_nothing_fits_the_plan_is_printed_with_exit_1_and_nothing_written(capsys, model, tmp_path):
    request = ("--ipus", "1", "--global-batch-size", "32", "--sequence-length", "512")
    found = plan(model, 1, global_batch_size=32, sequence_length=512, base=PlainIPUConfig())
    assert found.best is None
    code, out, err = run(capsys, "plan", "--model", model, *request)
    assert (code, out, err) == (1, f"{found}\n", "")
    assert "No build fits: the nearest are first below." in out
    code, out, err = run(capsys, "plan", "--model", model, *request, "--write", tmp_path / "out")
    assert (code, out) == (1, f"{found}\n")
    assert err == (f"ipu-config: error: no build fits, so {tmp_path / 'out' / 'ipu_config.json'} is not written: "
                   "the plan lists the builds nearest to fitting first\n")
    assert not (tmp_path / "out").exists()
    code, out, _ = run(capsys, "plan", "--model", model, *request, "--json")
    assert (code, json.loads(out)) == (1, as_json(found))


# --- --svg and --html ------------------------------------------------------------------------------------------------


class Tags(html.parser.HTMLParser):
    """The start tags of a page, in order, with their attributes."""

    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_svg_and_html_draw_the_plan(capsys, model, expected, tmp_path):
    picture, page = tmp_path / "plan.svg", tmp_path / "plan.html"
    code, out, err = run(capsys, "plan", "--model", model, *REQUEST, "--svg", picture, "--html", page)
    assert (code, out, err) == (0, f"{expected}\n\n{HINT}\n", f"Wrote {picture}\nWrote {page}\n")
    data = as_json(expected)
    assert picture.read_text(encoding="utf-8") == plan_svg(data)
    assert page.read_text(encoding="utf-8") == plan_page(data)
    root = ElementTree.fromstring(picture.read_text(encoding="utf-8"))
    drawn = {group.get("data-candidate") for group in root.iter(f"{SVG}g") if group.get("data-candidate")}
    assert root.tag == f"{SVG}svg" and drawn == {str(index) for index in range(len(expected.candidates))}
    tags = Tags()
    tags.feed(page.read_text(encoding="utf-8"))
    drawn = {attributes["data-candidate"] for tag, attributes in tags.tags if "data-candidate" in attributes}
    assert tags.tags[0][0] == "html" and drawn == {str(index) for index in range(len(expected.candidates))}


def test_a_picture_plan_wrote_is_replaced_and_any_other_file_kept_without_force(capsys, model, tmp_path):
    picture = tmp_path / "plan.svg"
    assert run(capsys, "plan", "--model", model, *REQUEST, "--svg", picture)[0] == 0
    first = picture.read_text(encoding="utf-8")
    assert run(capsys, "plan", "--model", model, *REQUEST, "--svg", picture, "--reserve", "0.1")[0] == 0
    found = plan(model, base=PlainIPUConfig(), reserve=0.1, **ARGUMENTS)
    assert first != picture.read_text(encoding="utf-8") == plan_svg(as_json(found))
    notes = tmp_path / "notes.svg"
    notes.write_text('<svg xmlns="http://www.w3.org/2000/svg"><!-- my drawing --></svg>')
    code, out, err = run(capsys, "plan", "--model", tmp_path / "no-such-model", *REQUEST, "--svg", notes)
    assert (code, out) == (1, "")
    assert err == f"ipu-config: error: {notes}: exists and is not a picture or page plan wrote; pass --force to " \
                  "overwrite it\n"
    assert notes.read_text() == '<svg xmlns="http://www.w3.org/2000/svg"><!-- my drawing --></svg>'
    assert run(capsys, "plan", "--model", model, *REQUEST, "--svg", notes, "--force")[0] == 0
    assert "Generator: optimum-ipu-ext" in notes.read_text()


def test_where_nothing_fits_the_pictures_are_drawn_all_the_same(capsys, model, tmp_path):
    picture = tmp_path / "plan.svg"
    code, _, err = run(capsys, "plan", "--model", model, "--ipus", "1", "--global-batch-size", "32",
                       "--sequence-length", "512", "--svg", picture)
    assert (code, err) == (1, f"Wrote {picture}\n")
    assert ElementTree.fromstring(picture.read_text(encoding="utf-8")).tag == f"{SVG}svg"


@pytest.mark.parametrize("where, message", [
    ("missing/p.svg", "{path}: its folder {folder} does not exist"),
    (".", "{path}: is a folder; --svg takes the file to write"),
])
def test_a_picture_with_nowhere_to_go_is_refused_before_planning(capsys, tmp_path, where, message):
    path = tmp_path / where
    code, _, err = run(capsys, "plan", "--model", tmp_path / "no-such-model", *REQUEST, "--svg", path)
    assert (code, err) == (1, "ipu-config: error: " + message.format(path=path, folder=tmp_path / "missing") + "\n")


# --- refusals --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments, message", [
    (["--global-batch-size", "32"], "one of the arguments --ipus --pod is required"),
    (["--ipus", "4", "--pod", "pod4", "--global-batch-size", "32"],
     "argument --pod: not allowed with argument --ipus"),
    (["--ipus", "4"], "the following argument is required for a training plan: --global-batch-size (the samples of "
     "a step); or give --inference"),
    (["--ipus", "4", "--inference", "--global-batch-size", "32"], "argument --global-batch-size: not allowed with "
     "--inference: an inference plan chooses the replicas and the device iterations of a step"),
    (["--ipus", "3", "--global-batch-size", "32"], "argument --ipus: 3 is invalid: allowed values are powers of two "
     "(1, 2, 4, ...), as IPU devices come"),
    (["--ipus", "0", "--global-batch-size", "32"], "argument --ipus: expected a positive whole number, got '0'"),
    (["--pod", "pod5", "--global-batch-size", "32"], 'argument --pod: "pod5" is invalid: allowed values are "pod4", '
     '"pod16", "pod64", "pod128", "pod256", "pod512", "pod1024"'),
    (["--ipus", "4", "--global-batch-size", "-1"], "argument --global-batch-size: expected a positive whole number, "
     "got '-1'"),
    (["--ipus", "4", "--global-batch-size", "32", "--micro-batch-size", "x"], "argument --micro-batch-size: expected "
     "a positive whole number, got 'x'"),
    (["--ipus", "4", "--global-batch-size", "32", "--sequence-length", "0"], "argument --sequence-length: expected a "
     "positive whole number, got '0'"),
    (["--ipus", "4", "--global-batch-size", "32", "--top", "0"], "argument --top: expected a positive whole number, "
     "got '0'"),
    (["--ipus", "4", "--global-batch-size", "32", "--reserve", "1"], "argument --reserve: expected a share of an "
     "IPU's memory from 0 to less than 1, e.g. 0.25, got '1'"),
    (["--ipus", "4", "--global-batch-size", "32", "--ipu", "mk1"], "argument --ipu: invalid choice: 'mk1' (choose "
     "from 'gc200', 'bow')"),
])
def test_a_usage_error_names_the_option_the_value_and_what_is_allowed(capsys, model, tmp_path, arguments, message):
    code, out, err = run(capsys, "plan", "--model", model, *arguments, "--write", tmp_path)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == f"ipu-config plan: error: {message}"
    assert not (tmp_path / "ipu_config.json").exists()


def test_the_model_is_required(capsys):
    code, _, err = run(capsys, "plan", "--ipus", "4", "--global-batch-size", "32")
    assert code == 2
    assert err.splitlines()[-1] == "ipu-config plan: error: the following arguments are required: --model"


def test_svg_and_html_to_one_file_is_a_usage_error(capsys, model, tmp_path):
    code, _, err = run(capsys, "plan", "--model", model, *REQUEST, "--svg", tmp_path / "p", "--html", tmp_path / "p")
    assert code == 2 and f"--svg and --html name the same file, {tmp_path / 'p'}: give each its own" in err


def test_a_missing_model_folder_is_one_line(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    code, out, err = run(capsys, "plan", "--model", tmp_path / "empty", *REQUEST)
    missing = tmp_path / "empty" / "config.json"
    assert (code, out) == (1, "")
    assert err == (f"ipu-config: error: Cannot read the model file '{missing}': no such file: a model folder holds "
                   "its config.json.\n")


@pytest.mark.parametrize("arguments, message", [
    (["--architecture", "GPT2LMHeadModel"], 'Cannot place {model}: GPT2LMHeadModel takes a config of model type '
     '"gpt2", and this one is "bert".'),
    (["--global-batch-size", "1"], "Cannot place {model}: no build runs on 4 IPUs for this batch: give more IPUs, or "
     "a global batch size that the replicas and the pipeline's stages divide."),
])
def test_a_model_that_cannot_be_planned_is_one_line(capsys, model, arguments, message):
    code, out, err = run(capsys, "plan", "--model", model, *REQUEST, *arguments)
    assert (code, out, err) == (1, "", f"ipu-config: error: {message.format(model=model)}\n")


def test_the_help_names_the_reserve_and_the_ipu_as_place_does(capsys):
    code, out, _ = run(capsys, "plan", "--help")
    text = " ".join(out.split())
    assert code == 0 and RESERVE_HELP in text and IPU_HELP in text


# --- what it imports -------------------------------------------------------------------------------------------------


def test_planning_imports_neither_torch_nor_transformers(model, base):
    assert run_alone("plan", "--model", model, *REQUEST) == "0 []"
    assert run_alone("plan", "--model", model, *REQUEST, "--from", base) == "0 []"


def test_calibration_times_the_plan_with_the_file_s_constants(capsys, model, tmp_path, monkeypatch):
    from optimum_ipu_ext.placement.estimate.calibration_file import shipped_calibration

    shipped = shipped_calibration()
    mine = tmp_path / "mine.json"
    constants = {"operation_cycles": 0.0, "elementwise_cycles": shipped.elementwise_cycles,
                 "call_seconds": shipped.call_seconds}
    mine.write_text(json.dumps({"constants": constants, "band": [-0.5, 0.5], "runs": 7, "coverage": {}}))
    monkeypatch.delenv("OPTIMUM_IPU_EXT_CALIBRATION", raising=False)
    code, out, err = run(capsys, "plan", "--model", model, *REQUEST, "--calibration", mine, "--json")
    expected = plan(model, base=PlainIPUConfig(), calibration=str(mine), **ARGUMENTS)
    assert (code, json.loads(out), err) == (0, expected.to_dict(), "")
    assert {candidate["placement"]["time_model"]["calibration"] for candidate in json.loads(out)["candidates"]} == {
        str(mine)}
    text = run(capsys, "plan", "--model", model, *REQUEST, "--calibration", mine)[1].splitlines()
    assert text[-3] == (f"Speeds are the model's, with the calibration {mine}: runs measured 0.67 to 2.00 times its "
                        "figure (7 runs, each left out of the fit in turn); it ranks builds of one model.")
    gone = tmp_path / "gone.json"
    code, out, err = run(capsys, "plan", "--model", model, *REQUEST, "--calibration", gone)
    assert (code, out, err) == (1, "", f"ipu-config: error: Cannot read the calibration file '{gone}': no such file "
                                       "(`ipu-config calibrate` writes one).\n")


TRIALS = ["rank1-4x1-mb2-di8", "best-4x1-mb2-di1", "rank6-2x2-mb2-di8", "rank2-4x1-mb1-di8"]


def test_trials_with_write_write_each_trial_s_config_and_the_command_that_measures_it(capsys, model, tmp_path):
    out = tmp_path / "trials"
    code, stdout, err = run(capsys, "plan", "--model", model, *REQUEST, "--trials", "4", "--write", out)
    assert (code, err) == (0, f"Wrote 4 trials to {out}: each folder's ipu_config.json and command.txt\n")
    found = plan(model, base=PlainIPUConfig(), trials=4, **ARGUMENTS)
    assert sorted(path.name for path in out.iterdir()) == sorted(TRIALS)
    assert not (out / "ipu_config.json").exists()  # with --trials, --write writes the trials alone
    for trial in found.trials:
        folder = out / trial.name
        assert sorted(path.name for path in folder.iterdir()) == ["command.txt", "ipu_config.json"]
        assert PlainIPUConfig.from_json_file(str(folder / "ipu_config.json")).to_dict() == \
            trial.candidate.ipu_config.to_dict()
        assert (folder / "command.txt").read_text() == (
            f"python examples/measure_ipu_trainer.py --config {folder}/ipu_config.json --model {model} --architecture "
            f"BertForPreTraining --micro-batch-size {trial.candidate.micro_batch_size} --sequence-length 512 --ipu "
            f"gc200 --steps 20 --out {folder}/run\n")
    lines = stdout.splitlines()
    start = lines.index("Trials: 4 builds worth measuring, the best and those whose order against it the model is "
                        "least sure of (their speeds within its band of the best's, their steps spending other shares "
                        "on what calibrate fits):")
    assert lines[start + 1:] == [
        f"  rank1-4x1-mb2-di8: {found.trials[0].candidate.samples_per_second:,.1f} samples a second; the best",
        f"  best-4x1-mb2-di1: {found.trials[1].candidate.samples_per_second:,.1f} samples a second; the best with "
        "one optimizer step a host call",
        f"  rank6-2x2-mb2-di8: {found.trials[2].candidate.samples_per_second:,.1f} samples a second; IPUs a replica 2 "
        "(the best's 4)",
        f"  rank2-4x1-mb1-di8: {found.trials[3].candidate.samples_per_second:,.1f} samples a second; micro-batch 1 "
        "(the best's 2)",
        f"Measure each, from the checkout on an IPU host: the command in {out}/NAME/command.txt, 20 steps; then:",
        f"  ipu-config calibrate {out}/*/run --output calibration.json",
        "  and plan again with --calibration calibration.json",
    ]
    assert HINT not in stdout


def test_trials_never_overwrite_a_trial_s_file_without_force(capsys, model, tmp_path):
    out = tmp_path / "trials"
    (out / TRIALS[2]).mkdir(parents=True)
    (out / TRIALS[2] / "command.txt").write_text("mine")
    code, stdout, err = run(capsys, "plan", "--model", model, *REQUEST, "--trials", "4", "--write", out)
    assert (code, stdout) == (1, "")
    assert err == (f"ipu-config: error: {out / TRIALS[2] / 'command.txt'}: exists; pass --force to overwrite it (no "
                   "trial was written)\n")
    assert sorted(path.name for path in out.iterdir()) == [TRIALS[2]]
    assert (out / TRIALS[2] / "command.txt").read_text() == "mine"
    assert run(capsys, "plan", "--model", model, *REQUEST, "--trials", "4", "--write", out, "--force")[0] == 0
    assert (out / TRIALS[2] / "command.txt").read_text().startswith("python examples/measure_ipu_trainer.py")


def test_trials_without_write_are_listed_with_how_to_write_them(capsys, model):
    code, stdout, err = run(capsys, "plan", "--model", model, *REQUEST, "--trials", "2")
    lines = stdout.splitlines()
    assert (code, err) == (0, "")
    assert lines[-6:] == [
        lines[-6],
        lines[-5],
        "Write them: add --write OUT_DIR (each OUT_DIR/NAME/ipu_config.json and command.txt).",
        "Measure each, from the checkout on an IPU host: the command in OUT_DIR/NAME/command.txt, 20 steps; then:",
        "  ipu-config calibrate OUT_DIR/*/run --output calibration.json",
        "  and plan again with --calibration calibration.json",
    ]
    assert lines[-6].startswith("  rank1-4x1-mb2-di8: ") and lines[-5].startswith("  best-4x1-mb2-di1: ")
    data = json.loads(run(capsys, "plan", "--model", model, *REQUEST, "--trials", "2", "--json")[1])
    assert [trial["name"] for trial in data["trials"]] == TRIALS[:2]


def test_trials_of_an_encoder_decoder_give_its_decoder_s_length_and_of_images_none(capsys, tmp_path):
    t5 = model_folder(tmp_path / "t5", T5)
    code, stdout, _ = run(capsys, "plan", "--model", t5, "--ipus", "2", "--global-batch-size", "8",
                          "--sequence-length", "64", "--decoder-sequence-length", "16", "--trials", "1", "--write",
                          tmp_path / "trials")
    [folder] = list((tmp_path / "trials").iterdir())
    assert code == 0 and "--sequence-length 64 --decoder-sequence-length 16 --ipu gc200" in (
        folder / "command.txt").read_text()
    vit = model_folder(tmp_path / "vit", dict(TINY_MODELS["ViTForImageClassification"].config,
                                              architectures=["ViTForImageClassification"]))
    code, stdout, _ = run(capsys, "plan", "--model", vit, "--ipus", "2", "--global-batch-size", "8", "--trials", "1",
                          "--write", tmp_path / "images", "--ipu", "bow")
    [folder] = list((tmp_path / "images").iterdir())
    command = (folder / "command.txt").read_text()
    assert code == 0 and "--sequence-length" not in command
    assert "--architecture ViTForImageClassification --micro-batch-size 4 --ipu bow --steps 20" in command


def test_trials_are_refused_for_inference_and_where_nothing_fits(capsys, model, tmp_path):
    code, _, err = run(capsys, "plan", "--model", model, "--ipus", "4", "--inference", "--trials", "2")
    assert code == 2 and "argument --trials: not allowed with --inference: calibrate fits training runs" in err
    code, stdout, err = run(capsys, "plan", "--model", model, "--ipus", "1", "--global-batch-size", "32",
                            "--sequence-length", "512", "--trials", "2", "--write", tmp_path / "none")
    assert (code, err) == (1, "ipu-config: error: no build fits, so no trial is written: the plan lists the builds "
                              "nearest to fitting first\n")
    assert not (tmp_path / "none").exists()
    assert run(capsys, "plan", "--model", model, *REQUEST, "--trials", "0")[0] == 2
