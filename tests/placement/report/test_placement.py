"""`report/text.py` (with `sentences.py` and `view.py`): a placement as text: one row per IPU, block names
compressed, the memory bar, the verdict and the assumptions; colour and bold through a styler; the balanced split
beside the config's."""

import dataclasses
import json

import pytest

from optimum_ipu_ext import PlainIPUConfig
from optimum_ipu_ext.placement.estimate.memory import Verdict
from optimum_ipu_ext.placement.report.sentences import compress, gflop, pipeline_line, summary_lines
from optimum_ipu_ext.placement.report.tables import placement_table
from optimum_ipu_ext.placement.report.text import bar, comparison_text
from optimum_ipu_ext.placement.report.view import placement_view
from support.placement_fixtures import bert_base


def views(placement):
    """The view of each IPU of `placement`, as every report reads it."""
    return placement_view(placement.to_dict()).ipus


@pytest.mark.parametrize("names, compressed", [
    (["Embedding", "Encoder0", "Encoder1", "Encoder2"], "Embedding, Encoder0-2"),
    (["Encoder3"], "Encoder3"),
    (["Encoder1", "Encoder3", "Encoder4"], "Encoder1, Encoder3-4"),
    (["Conv 0 ", "Conv 1 ", "Positional Embedding", "Encoder 0 "], "Conv 0-1, Positional Embedding, Encoder 0"),
    (["Encoder_stage_0_layer_0", "Encoder_stage_1_layer_0", "Encoder_stage_1_layer_1"],
     "Encoder_stage_0_layer_0, Encoder_stage_1_layer_0-1"),
    ([None, None, "Encoder0"], "Encoder0, 2 unnamed"),
    ([None], "1 unnamed block"),
    ([None, None], "2 unnamed blocks"),
    ([], "-"),
])
def test_block_names_are_compressed(names, compressed):
    assert compress(names) == compressed


def test_a_bar_shows_the_share_of_the_ipu_s_memory():
    assert bar(0, 100) == "[....................]"
    assert bar(50, 100) == "[##########..........]"
    assert bar(250, 100) == "[####################]"


def test_flops_are_shown_in_billions_to_a_tenth():
    assert [gflop(flops) for flops in (0, 49_999_999, 450_000_001, 12_345_678_901, 10**18)] == [
        "0.0", "0.0", "0.5", "12.3", "1,000,000,000.0"]


def test_the_parts_of_an_ipu_or_of_its_json_add_up_to_its_on_chip_figure(tmp_path):
    config = PlainIPUConfig(layers_per_ipu=[6, 6], gradient_accumulation_steps=8)
    counted = config.placement(bert_base(tmp_path / "bert"), micro_batch_size=2)
    update = PlainIPUConfig(layers_per_ipu=[6, 6], gradient_accumulation_steps=8, optimizer_state_offchip=True)
    # the JSON read back gives the same parts
    assert placement_view(json.loads(counted.to_json_string())).ipus == views(counted)
    for ipu, view in zip(counted.ipus, views(counted)):
        assert view.parts[5] == 0 and view.parts[3] == ipu.work.stash_bytes > 0
        assert sum(view.parts) == ipu.on_chip_bytes
    uncounted = update.placement(str(tmp_path / "bert")).to_dict()  # without the activations: the update's part
    for data, view in zip(uncounted["ipus"], placement_view(uncounted).ipus):
        assert data["stash_bytes"] is None and view.parts[2:] == (0, 0, 0, data["update_bytes"])
        assert data["update_bytes"] > 0 and sum(view.parts) == data["on_chip_bytes"]
    # IPU 0 brings in the embedding's state for its update, more than its stash and recomputation; IPU 1 less
    placed = update.placement(str(tmp_path / "bert"), micro_batch_size=1, sequence_length=32)
    (first, second), (first_parts, second_parts) = placed.ipus, (view.parts for view in views(placed))
    assert first.update_bytes > first.work.stash_bytes + first.work.recompute_bytes > 0
    assert first_parts[3:] == (0, 0, first.update_bytes) and sum(first_parts) == first.on_chip_bytes
    assert 0 < second.update_bytes < second.work.stash_bytes + second.work.recompute_bytes
    assert second_parts[3:] == (second.work.stash_bytes, second.work.recompute_bytes, 0)
    assert sum(second_parts) == second.on_chip_bytes
    # inference keeps nothing for a backward pass and updates nothing
    inference = config.placement(str(tmp_path / "bert"), for_inference=True, micro_batch_size=2)
    for ipu, view in zip(inference.ipus, views(inference)):
        assert view.parts[1:] == (0, 0, 0, 0, 0) and sum(view.parts) == ipu.on_chip_bytes


def test_the_text_has_one_row_per_ipu_a_verdict_and_the_assumptions(tmp_path):
    config = PlainIPUConfig(layers_per_ipu=[6, 6], gradient_accumulation_steps=8)
    placement = config.placement(bert_base(tmp_path / "bert"))
    assert str(placement) == f"""\
{tmp_path / 'bert'}: BertForMaskedLM, training, layers_per_ipu [6, 6]

IPU  Blocks                             Parameters  On chip, MiB of 897.0                  Streaming, MiB
  0  Embedding, Encoder0-5, Classifier  66,987,066      638.8 [##############......]  71%             0.0
  1  Encoder6-11                        42,527,232      405.6 [#########...........]  45%             0.0

Fits: every IPU's on-chip figure is within the 672.8 MiB a reserve of 224.2 MiB leaves of an IPU's 897.0 MiB.
Assumes training: weights fp16, gradient accumulators fp16, AdamW/LAMB state 6 bytes a parameter; activations and \
pipeline stashes come on top; code, exchange buffers and the temporaries matmul_proportion allows are the reserve's."""


def tagged(text, name):
    return f"<{name}>{text}</{name}>"


def test_an_ipu_over_its_memory_is_named_in_red_and_one_over_its_reserve_in_yellow(tmp_path):
    config = PlainIPUConfig(layers_per_ipu=[6, 6], gradient_accumulation_steps=8)
    placement = config.placement(bert_base(tmp_path / "bert"))
    over = dataclasses.replace(placement, ipu_memory_bytes=600 << 20, reserve_bytes=200 << 20)
    over_text = over.text(tagged)
    assert "<red>  0</red>  Embedding, Encoder0-5" in over_text and "<yellow>  1</yellow>  Encoder6-11" in over_text
    assert over_text.splitlines()[-2] == ("<red>Does not fit</red>: <red>IPU 0</red> (638.8 MiB) over the 600.0 MiB "
                                          "of an IPU.")
    assert (over.verdict, over.to_dict()["verdict"], over.fits) == (Verdict.DOES_NOT_FIT, "does not fit", False)
    tight = dataclasses.replace(placement, ipu_memory_bytes=700 << 20, reserve_bytes=100 << 20)
    text = tight.text(tagged)
    assert "<yellow>  0</yellow>  Embedding, Encoder0-5" in text and "\n  1  Encoder6-11" in text
    assert text.splitlines()[-2] == ("<yellow>Tight</yellow>: <yellow>IPU 0</yellow> (638.8 MiB) over the 600.0 MiB a "
                                     "reserve of 100.0 MiB leaves of an IPU's 700.0 MiB.")
    assert (tight.verdict, tight.to_dict()["verdict"], tight.fits) == (Verdict.TIGHT, "tight", False)
    assert all(line.startswith("<bold>IPU  Blocks") for line in (over_text.splitlines()[2],
                                                                  text.splitlines()[2]))  # the header is no IPU's
    # an IPU full to its memory's last byte is over its reserve, not over its memory; one full to what the reserve
    # leaves is over neither
    full = dataclasses.replace(placement, ipu_memory_bytes=placement.ipus[0].on_chip_bytes,
                               reserve_bytes=placement.ipus[0].on_chip_bytes - placement.ipus[1].on_chip_bytes)
    text = full.text(tagged)
    assert full.verdict == Verdict.TIGHT and "<yellow>  0</yellow>  Embedding" in text and "\n  1  Encoder6-11" in text
    assert text.splitlines()[-2].startswith("<yellow>Tight</yellow>: <yellow>IPU 0</yellow> (638.8 MiB) over the "
                                            "405.6 MiB a reserve")


def test_what_poptorch_refuses_is_listed_before_the_memory_s_verdict(tmp_path):
    placement = PlainIPUConfig(layers_per_ipu=[6, 6]).placement(bert_base(tmp_path / "bert"))
    refused = dataclasses.replace(placement, schedule=placement.schedule._replace(problems=("one", "two")))
    assert refused.text(tagged).splitlines()[-2] == (
        "<red>Does not run</red>: one; two; memory fits: every IPU's on-chip figure is within the 672.8 MiB a "
        "reserve of 224.2 MiB leaves of an IPU's 897.0 MiB.")


def test_the_model_and_the_headers_are_bold_and_an_ipu_full_to_its_reserve_s_last_byte_is_not_over(tmp_path):
    placement = PlainIPUConfig(layers_per_ipu=[12, 0]).placement(bert_base(tmp_path / "bert"))
    exactly = dataclasses.replace(placement, ipu_memory_bytes=placement.ipus[0].on_chip_bytes + 10, reserve_bytes=10)
    lines = exactly.text(tagged).splitlines()
    assert lines[0] == f"<bold>{tmp_path / 'bert'}</bold>: BertForMaskedLM, training, layers_per_ipu [12, 0]"
    assert lines[2].startswith("<bold>IPU  Blocks") and lines[2].endswith("Streaming, MiB</bold>")
    assert [number for number, line in enumerate(lines) if "<" in line] == [0, 2, len(lines) - 2]
    assert lines[-2].startswith("<green>Fits</green>: ")
    # the parameters are right-aligned under their header
    header, *rows = str(exactly).splitlines()[2:5]
    ends = [row.index(f"{ipu.parameters:,}") + len(f"{ipu.parameters:,}") for row, ipu in zip(rows, exactly.ipus)]
    assert ends == [header.index("Parameters") + len("Parameters")] * 2 and exactly.ipus[1].parameters == 0


def test_the_comparison_s_verdict_and_headers_are_bold(tmp_path):
    placer = PlainIPUConfig(layers_per_ipu=[6, 6]).placer(bert_base(tmp_path / "bert"))
    placement = placer.place()
    balanced = placer.balanced(placement)
    lines = comparison_text(placement.to_dict(), balanced.to_dict(), tagged).splitlines()
    assert lines[0] == f"<bold>Balanced: layers_per_ipu {list(balanced.layers_per_ipu)} (the config's: [6, 6])</bold>"
    assert lines[1] == "<bold>IPU  Layers  Balanced  On chip, MiB  Balanced, MiB</bold>"
    assert not any("<" in line for line in lines[2:])
    assert comparison_text(balanced.to_dict(), balanced.to_dict(), tagged) == (
        "<bold>Balanced: the config's layers_per_ipu already makes the largest on-chip figure smallest.</bold>")


def test_the_balanced_split_is_shown_beside_the_config_s(tmp_path):
    config = PlainIPUConfig(layers_per_ipu=[6, 6], gradient_accumulation_steps=8)
    placer = config.placer(bert_base(tmp_path / "bert"))
    placement = placer.place()
    balanced = placer.balanced(placement)
    # per layer 7,087,872 parameters, and on IPU 0 the embeddings and the head: 24,459,834
    assert balanced.layers_per_ipu == (4, 8)
    assert comparison_text(placement.to_dict(), balanced.to_dict()) == """\
Balanced: layers_per_ipu [4, 8] (the config's: [6, 6])
IPU  Layers  Balanced  On chip, MiB  Balanced, MiB
  0       6         4         638.8          503.6
  1       6         8         405.6          540.8
The largest on-chip figure: 540.8 MiB instead of 638.8 MiB; it fits."""
    assert comparison_text(balanced.to_dict(), placer.balanced(balanced).to_dict()) == (
        "Balanced: the config's layers_per_ipu already makes the largest on-chip figure smallest.")
    tight = dataclasses.replace(balanced, reserve_bytes=balanced.ipu_memory_bytes - (500 << 20))
    assert comparison_text(placement.to_dict(), tight.to_dict()).endswith(
        "The largest on-chip figure: 540.8 MiB instead of 638.8 MiB; it is tight.")


def test_balanced_for_time_each_ipu_s_cycle_is_shown_and_the_slowest_named_first(tmp_path):
    config = PlainIPUConfig(layers_per_ipu=[6, 6], gradient_accumulation_steps=8)
    placer = config.placer(bert_base(tmp_path / "bert"))
    placement = placer.place()

    def timed(placement, cycle_seconds):
        """The placement with each IPU's cycle taking these seconds."""
        return dataclasses.replace(placement, ipus=tuple(
            dataclasses.replace(ipu, cycle_seconds=seconds) for ipu, seconds in zip(placement.ipus, cycle_seconds)))

    current = timed(placement, [0.012, 0.006])
    balanced = timed(placer.place([4, 8]), [0.008, 0.0095])
    assert comparison_text(current.to_dict(), balanced.to_dict(), objective="time") == """\
Balanced: layers_per_ipu [4, 8] (the config's: [6, 6])
IPU  Layers  Balanced  On chip, MiB  Balanced, MiB  Cycle, ms  Balanced, ms
  0       6         4         638.8          503.6      12.00          8.00
  1       6         8         405.6          540.8       6.00          9.50
The slowest IPU: 9.50 ms a cycle instead of 12.00; the largest on-chip figure: 540.8 MiB instead of 638.8 MiB; \
it fits."""


def test_a_summary_names_the_config_and_without_a_micro_batch_says_what_it_counts(tmp_path):
    config = PlainIPUConfig(layers_per_ipu=[0, 12], gradient_accumulation_steps=8)
    view = placement_view(config.placement(bert_base(tmp_path / "bert")).to_dict())
    named, unnamed = summary_lines(view, "mine.json"), summary_lines(view)
    assert named[0] == "config mine.json, " + unnamed[0]
    assert unnamed[0].endswith("; no micro-batch given: the parameters' memory only")
    # nothing timed: no IPU sets the pace
    assert pipeline_line(view).endswith("% of them with every stage busy.")
    # an IPU without a layer
    assert [row[2] for row in placement_table(view)[1]] == ["-", "0-11"]


def test_the_balanced_split_is_compared_for_memory_unless_asked_for_time(tmp_path):
    model = bert_base(tmp_path / "bert")
    current = PlainIPUConfig(layers_per_ipu=[6, 6]).placement(model, micro_batch_size=2).to_dict()
    proposal = PlainIPUConfig(layers_per_ipu=[5, 7]).placement(model, micro_batch_size=2).to_dict()
    memory = comparison_text(current, proposal)
    assert memory == comparison_text(current, proposal, objective="memory")
    assert memory != comparison_text(current, proposal, objective="time")
