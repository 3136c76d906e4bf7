"""`ipu-config place`: a model placed on a config's IPUs, as text or JSON, `--check`, `--balance` and `--write`, and
its refusals in one line with exit code 1."""

import io
import json
import os
import subprocess
import sys

import pytest

from optimum_ipu_ext import PlainIPUConfig
from optimum_ipu_ext.placement.models import ARCHITECTURES
from optimum_ipu_ext.placement.report.page import placement_page
from optimum_ipu_ext.placement.report.placement_picture import placement_svg
from optimum_ipu_ext.placement.report.text import comparison_text
from support import PRESET
from support.cli_helpers import run, run_alone
from support.placement_fixtures import BERT_BASE, bert_base, bert_shapes, write_checkpoint

BERT_LARGE = dict(BERT_BASE, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)


def balanced(model, objective="memory", **options):
    """The preset's placement of `model` and the one balanced for `objective`, as `place --balance` makes them."""
    placer = PlainIPUConfig.from_json_file(PRESET).placer(model, **options)
    placement = placer.place()
    return placement, placer.balanced(placement, objective)


@pytest.fixture
def bert(tmp_path):
    return bert_base(tmp_path / "bert-base")


@pytest.fixture
def bert_large(tmp_path):
    return write_checkpoint(tmp_path / "bert-large", bert_shapes(BERT_LARGE), BERT_LARGE)


def test_the_placement_as_text(capsys, bert):
    code, out, err = run(capsys, "place", PRESET, "--model", bert)
    assert (code, err) == (0, "")
    assert out == str(PlainIPUConfig.from_json_file(PRESET).placement(bert)) + "\n"
    assert out.splitlines()[0] == f"{bert}: BertForMaskedLM, training, layers_per_ipu [6, 6]"
    assert out.splitlines()[3] == ("  0  Embedding, Encoder0-5, Classifier  66,987,066      638.8 "
                                   "[##############......]  71%             0.0")


def test_the_placement_as_json(capsys, bert):
    code, out, err = run(capsys, "place", PRESET, "--model", bert, "--json", "--inference", "--fp32")
    placement = PlainIPUConfig.from_json_file(PRESET).placement(bert, for_inference=True, fp32=True)
    assert (code, json.loads(out), err) == (0, placement.to_dict(), "")
    assert json.loads(out)["build"] == "inference"


def test_another_architecture_and_settings(capsys, bert):
    code, out, _ = run(capsys, "place", PRESET, "--model", bert, "--architecture", "BertForQuestionAnswering",
                       "--set", "layers_per_ipu=[4 8]", "--json")
    data = json.loads(out)
    assert (code, data["architecture"], data["layers_per_ipu"]) == (0, "BertForQuestionAnswering", [4, 8])
    assert data["ipus"][1]["blocks"][-1] == "QA Outputs"


def test_check_exits_1_when_an_ipu_is_over(capsys, bert, bert_large):
    assert run(capsys, "place", PRESET, "--model", bert, "--check")[0] == 0
    code, out, err = run(capsys, "place", PRESET, "--model", bert_large, "--check")
    assert (code, err) == (1, "")
    assert "Does not fit: IPU 0 (1,754.9 MiB), IPU 1 (1,441.5 MiB) over the 897.0 MiB of an IPU." in out
    assert run(capsys, "place", PRESET, "--model", bert_large)[0] == 0


def test_balance_shows_the_best_split_beside_the_config_s(capsys, bert):
    code, out, err = run(capsys, "place", PRESET, "--model", bert, "--balance")
    assert (code, err) == (0, "")
    current, comparison = out.split("\n\nBalanced: ")
    assert current == str(PlainIPUConfig.from_json_file(PRESET).placement(bert))
    assert comparison.splitlines()[0] == "layers_per_ipu [4, 8] (the config's: [6, 6])"
    assert comparison.splitlines()[-1] == "The largest on-chip figure: 540.8 MiB instead of 638.8 MiB; it fits."


def test_balance_with_json_prints_the_proposed_placement(capsys, bert):
    code, out, _ = run(capsys, "place", PRESET, "--model", bert, "--balance", "--json")
    assert code == 0 and json.loads(out) == balanced(bert)[1].to_dict()
    assert json.loads(out)["layers_per_ipu"] == [4, 8]


def test_balance_proposes_a_split_where_the_config_s_cannot_be_placed(capsys, bert, tmp_path):
    code, out, err = run(capsys, "place", PRESET, "--model", bert, "--set", "layers_per_ipu=[6 5]", "--balance",
                         "--write", tmp_path / "out")
    assert code == 0
    assert err.splitlines() == [
        f"ipu-config: note: {PRESET}: Cannot place {bert} with `layers_per_ipu`: [6, 5] places 11 layers and the "
        "model has 12. Balancing from [-1, -1].",
        f"Wrote {tmp_path / 'out' / 'ipu_config.json'} with layers_per_ipu [4, 8]"]
    assert out == str(balanced(bert)[1]) + "\n"
    assert PlainIPUConfig.from_json_file(tmp_path / "out" / "ipu_config.json").layers_per_ipu == [4, 8]
    code, out, _ = run(capsys, "place", PRESET, "--model", bert, "--set", "layers_per_ipu=[6 5]", "--balance",
                       "--json")
    assert code == 0 and json.loads(out)["layers_per_ipu"] == [4, 8]


def test_balance_with_check_checks_the_proposal(capsys, bert_large):
    code, out, _ = run(capsys, "place", PRESET, "--model", bert_large, "--balance", "--check")
    assert code == 1 and "it still does not fit." in out


def test_write_saves_the_config_with_the_balanced_split(capsys, bert, tmp_path):
    out_dir = tmp_path / "out"
    code, _, err = run(capsys, "place", PRESET, "--model", bert, "--balance", "--write", out_dir)
    assert (code, err) == (0, f"Wrote {out_dir / 'ipu_config.json'} with layers_per_ipu [4, 8]\n")
    written = PlainIPUConfig.from_json_file(out_dir / "ipu_config.json")
    preset = PlainIPUConfig.from_json_file(PRESET)
    assert written.layers_per_ipu == [4, 8] and written.inference_layers_per_ipu == preset.inference_layers_per_ipu
    saved, preset_saved = written.settings_dict(), preset.settings_dict()
    assert {name for name in saved if saved[name] != preset_saved[name]} == {"layers_per_ipu"}
    # the inference build's split goes to inference_layers_per_ipu
    code, _, err = run(capsys, "place", PRESET, "--model", bert, "--balance", "--inference", "--write", out_dir,
                       "--force")
    assert code == 0 and "with inference_layers_per_ipu [" in err
    written = PlainIPUConfig.from_json_file(out_dir / "ipu_config.json")
    assert written.layers_per_ipu == preset.layers_per_ipu and written.inference_layers_per_ipu != [-1, -1]


def test_write_never_overwrites_without_force(capsys, bert, tmp_path):
    target = tmp_path / "out" / "ipu_config.json"
    target.parent.mkdir()
    target.write_text("{}")
    code, out, err = run(capsys, "place", PRESET, "--model", bert, "--balance", "--write", target.parent)
    assert (code, out, err) == (1, "", f"ipu-config: error: {target}: exists; pass --force to overwrite it\n")
    assert target.read_text() == "{}"


def test_write_needs_balance(capsys, bert, tmp_path):
    code, _, err = run(capsys, "place", PRESET, "--model", bert, "--write", tmp_path / "out")
    assert code == 2 and "--write saves the balanced split: give --balance too" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("arguments", [[PRESET], ["--model", "bert-base-uncased"], []])
def test_the_config_and_the_model_are_required(capsys, arguments):
    code, _, err = run(capsys, "place", *arguments)
    assert code == 2 and "error: CONFIG and --model are required, unless --list-architectures is given" in err


def test_list_architectures_prints_the_45(capsys):
    code, out, err = run(capsys, "place", "--list-architectures")
    assert (code, err) == (0, "")
    names = out.splitlines()
    assert (len(names), names[:3], names[-2:]) == (
        45, ["BartForConditionalGeneration", "BartForSequenceClassification", "BertForMaskedLM"],
        ["Wav2Vec2ForPreTraining", "WhisperForConditionalGeneration"])
    assert names == sorted(names) == sorted(ARCHITECTURES)


def test_listing_the_architectures_needs_neither_torch_nor_transformers():
    assert run_alone("place", "--list-architectures") == "0 []"


@pytest.mark.parametrize("arguments, message", [
    (["--set", "layers_per_ipu=[6 5]"], "Cannot place {bert} with `layers_per_ipu`: [6, 5] places 11 layers and the "
     "model has 12."),
    (["--architecture", "AlbertForMaskedLM"], "Cannot place {bert}: AlbertForMaskedLM has no pipelined version in "
     "optimum-graphcore 0.7.1; give one of model type \"bert\"'s with --architecture (architecture=): "
     "BertForMaskedLM,"),
    (["--architecture", "GPT2LMHeadModel"], "Cannot place {bert}: GPT2LMHeadModel takes a config of model type "
     "\"gpt2\", and this one is \"bert\"."),
    (["--model-revision", "main"], "Cannot place {bert}: a local folder has no revisions; --revision applies to Hub "
     "repositories."),
])
def test_a_config_that_cannot_be_placed_is_one_line_naming_the_file_the_setting_and_the_model(capsys, bert, arguments,
                                                                                                message):
    code, out, err = run(capsys, "place", PRESET, "--model", bert, *arguments)
    assert (code, out) == (1, "")
    assert err.startswith(f"ipu-config: error: {PRESET}: " + message.format(bert=bert)) and err.count("\n") == 1


def test_a_missing_model_file_is_named(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "place", PRESET, "--model", tmp_path / "empty")
    missing = tmp_path / "empty" / "config.json"
    assert code == 1 and err == (f"ipu-config: error: Cannot read the model file '{missing}': no such file: a model "
                                 "folder holds its config.json.\n")


def test_a_malformed_header_is_named(capsys, bert):
    with open(os.path.join(bert, "model.safetensors"), "r+b") as writer:
        writer.truncate(4)
    code, _, err = run(capsys, "place", PRESET, "--model", bert)
    assert code == 1 and err.startswith(f"ipu-config: error: Cannot read the model file "
                                        f"'{os.path.join(bert, 'model.safetensors')}': truncated")


def test_a_config_json_size_of_another_kind_is_one_line_naming_the_field(capsys, tmp_path):
    folder = tmp_path / "bert"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(dict(BERT_BASE, hidden_size="768")))
    code, out, err = run(capsys, "place", PRESET, "--model", folder)
    assert (code, out) == (1, "")
    assert err == (f'ipu-config: error: {PRESET}: Cannot place {folder}: its config.json gives `hidden_size` "768", '
                   "and the placement needs a whole number.\n")


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("environment, coloured", [({"TERM": "xterm"}, True), ({"TERM": "dumb"}, False),
                                                   ({"TERM": "xterm", "NO_COLOR": "1"}, False)])
def test_the_ipu_that_is_over_is_red_on_terminals_only(monkeypatch, bert_large, environment, coloured):
    from optimum_ipu_ext.cli import main

    monkeypatch.delenv("NO_COLOR", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert main(["place", PRESET, "--model", bert_large]) == 0
    red = "\033[31mIPU 0\033[0m (1,754.9 MiB)"
    assert (red in terminal.getvalue()) == coloured
    assert ("\033[31m  0\033[0m  Embedding" in terminal.getvalue()) == coloured
    assert ("\033[" in terminal.getvalue()) == coloured


# --- the activations, the pipeline, --balance time ---------------------------------------------------------------


def test_the_micro_batch_counts_the_activations(capsys, bert):
    code, out, err = run(capsys, "place", PRESET, "--model", bert, "--micro-batch-size", "2", "--sequence-length",
                         "16", "--json")
    placement = PlainIPUConfig.from_json_file(PRESET).placement(bert, micro_batch_size=2, sequence_length=16)
    assert (code, json.loads(out), err) == (0, placement.to_dict(), "")
    assert (json.loads(out)["micro_batch_size"], json.loads(out)["sequence_length"]) == (2, 16)
    code, out, _ = run(capsys, "place", PRESET, "--model", bert, "--sequence-length", "16")
    assert code == 0 and out == str(PlainIPUConfig.from_json_file(PRESET).placement(bert, sequence_length=16)) + "\n"
    assert out.splitlines()[0].endswith("layers_per_ipu [6, 6], micro-batch 1, sequence length 16")


def test_check_exits_1_when_poptorch_refuses_the_pipeline(capsys, bert):
    code, out, err = run(capsys, "place", PRESET, "--model", bert, "--check", "--set", "gradient_accumulation_steps=4")
    assert (code, err) == (1, "")
    assert ("Does not run: `gradient_accumulation_steps` is 4, and a pipeline of 3 stages needs at least 2 x 3 - 1 = "
            "5: set it to 5 or more; memory fits: every IPU's on-chip figure is within the 672.8 MiB a reserve of "
            "224.2 MiB leaves of an IPU's 897.0 MiB.") in out.splitlines()


def test_balance_time_shows_the_flops_beside_the_config_s(capsys, bert):
    code, out, err = run(capsys, "place", PRESET, "--model", bert, "--micro-batch-size", "2", "--balance", "time")
    assert (code, err) == (0, "")
    current, comparison = out.split("\n\nBalanced: ")
    placement, proposal = balanced(bert, "time", micro_batch_size=2)
    assert current == str(placement) == str(PlainIPUConfig.from_json_file(PRESET).placement(bert, micro_batch_size=2))
    expected = comparison_text(placement.to_dict(), proposal.to_dict(), objective="time")
    assert "Balanced: " + comparison == expected + "\n"
    code, out, _ = run(capsys, "place", PRESET, "--model", bert, "--micro-batch-size", "2", "--balance")
    assert code == 0 and out.split("\n\nBalanced: ")[1].splitlines()[1] == (
        "IPU  Layers  Balanced  On chip, MiB  Balanced, MiB")


def test_balance_time_needs_the_activations(capsys, bert):
    code, out, err = run(capsys, "place", PRESET, "--model", bert, "--balance", "time")
    assert (code, out) == (1, "")
    assert err == (f"ipu-config: error: {PRESET}: Cannot place {bert}: balancing for time needs the operations of a "
                   "micro-batch: give its size or its sequence length (micro_batch_size=, --micro-batch-size).\n")
    code, _, err = run(capsys, "place", PRESET, "--model", bert, "--balance", "speed")
    assert code == 2 and "argument --balance: invalid choice: 'speed' (choose from 'memory', 'time')" in err


def test_a_micro_batch_of_no_example_is_one_line_naming_the_flag_s_setting(capsys, bert):
    code, out, err = run(capsys, "place", PRESET, "--model", bert, "--micro-batch-size", "0")
    assert (code, out) == (1, "")
    assert err == (f"ipu-config: error: {PRESET}: Cannot place {bert} with `micro_batch_size`: 0 is not a positive "
                   "whole number.\n")


def test_the_help_says_what_a_sequence_counts(capsys):
    code, out, _ = run(capsys, "place", "--help")
    text = " ".join(out.split())
    assert code == 0
    assert "Wav2Vec2/HuBERT: S input samples at 16 kHz (default 16000); Whisper: the feature extractor's frames; " \
           "refused for images, whose size is config.json's image_size" in text


# pictures: --svg and --html

def test_svg_and_html_draw_the_placement_the_text_shows(capsys, bert, tmp_path):
    picture, page = tmp_path / "placement.svg", tmp_path / "placement.html"
    arguments = ("place", PRESET, "--model", bert, "--micro-batch-size", "2", "--set", "gradient_accumulation_steps=8")
    code, out, err = run(capsys, *arguments, "--svg", picture, "--html", page)
    assert (code, out, err) == (0, run(capsys, *arguments)[1], f"Wrote {picture}\nWrote {page}\n")
    config = PlainIPUConfig.from_json_file(PRESET)
    config.gradient_accumulation_steps = 8
    placement = config.placement(bert, micro_batch_size=2).to_dict()
    label = f"{PRESET} with gradient_accumulation_steps=8"
    assert picture.read_text(encoding="utf-8") == placement_svg(placement, label)
    assert page.read_text(encoding="utf-8") == placement_page(placement, label)


def test_svg_with_json_draws_what_the_json_says(capsys, bert, tmp_path):
    code, out, _ = run(capsys, "place", PRESET, "--model", bert, "--json", "--svg", tmp_path / "p.svg")
    assert code == 0 and (tmp_path / "p.svg").read_text(encoding="utf-8") == placement_svg(json.loads(out), PRESET)


def test_with_balance_the_picture_is_the_proposal_s(capsys, bert, tmp_path):
    code, _, err = run(capsys, "place", PRESET, "--model", bert, "--balance", "--svg", tmp_path / "p.svg")
    proposal = balanced(bert)[1].to_dict()
    assert (code, err) == (0, f"Wrote {tmp_path / 'p.svg'} (the balanced split's)\n")
    assert (tmp_path / "p.svg").read_text(encoding="utf-8") == placement_svg(proposal,
                                                                             f"{PRESET}, balanced for memory")


def test_a_picture_place_wrote_is_replaced_and_any_other_file_kept_without_force(capsys, bert, tmp_path):
    picture, page = tmp_path / "p.svg", tmp_path / "p.html"
    assert run(capsys, "place", PRESET, "--model", bert, "--svg", picture, "--html", page)[0] == 0
    code, _, err = run(capsys, "place", PRESET, "--model", bert, "--svg", picture, "--html", page, "--set",
                       "layers_per_ipu=[4 8]")
    assert (code, "layers_per_ipu [4, 8]" in picture.read_text(), "layers_per_ipu [4, 8]" in page.read_text()) == (
        0, True, True)
    notes = tmp_path / "notes.svg"
    notes.write_text('<svg xmlns="http://www.w3.org/2000/svg"><!-- my drawing --></svg>')
    missing = tmp_path / "no-such-model"  # refused before the model is read
    code, out, err = run(capsys, "place", PRESET, "--model", missing, "--svg", notes)
    assert (code, out) == (1, "")
    assert err == f"ipu-config: error: {notes}: exists and is not a picture or page place wrote; pass --force to " \
                  "overwrite it\n"
    assert notes.read_text() == '<svg xmlns="http://www.w3.org/2000/svg"><!-- my drawing --></svg>'
    assert run(capsys, "place", PRESET, "--model", bert, "--svg", notes, "--force")[0] == 0
    assert "Generator: optimum-ipu-ext" in notes.read_text()


@pytest.mark.parametrize("where, message", [
    ("missing/p.svg", "{path}: its folder {folder} does not exist"),
    (".", "{path}: is a folder; --svg takes the file to write"),
])
def test_a_picture_with_nowhere_to_go_is_refused_before_placing(capsys, tmp_path, where, message):
    path = tmp_path / where
    code, _, err = run(capsys, "place", PRESET, "--model", tmp_path / "no-such-model", "--svg", path)
    assert (code, err) == (1, "ipu-config: error: " + message.format(path=path, folder=tmp_path / "missing") + "\n")


def test_svg_and_html_to_one_file_is_a_usage_error(capsys, bert, tmp_path):
    code, _, err = run(capsys, "place", PRESET, "--model", bert, "--svg", tmp_path / "p", "--html", tmp_path / "p")
    assert code == 2 and f"--svg and --html name the same file, {tmp_path / 'p'}: give each its own" in err


def test_placing_without_a_picture_imports_no_drawing_code(bert):
    code = ("import sys\n"
            "from optimum_ipu_ext.cli import main\n"
            f"main(['place', {str(PRESET)!r}, '--model', {bert!r}, '--micro-batch-size', '2'])\n"
            "print(sorted(name for name in sys.modules if name.endswith(('.placement_picture', '.plan_picture', "
            "'.svg', '.page'))))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines()[-1] == "[]"
