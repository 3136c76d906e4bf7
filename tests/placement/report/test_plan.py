"""`report/text.py`'s `plan_text`: a plan as text, on a plan written by hand in the shape `ipu-config plan --json`
gives."""

import pytest

from optimum_ipu_ext.placement.report.tables import plan_table
from optimum_ipu_ext.placement.report.text import plan_text
from optimum_ipu_ext.placement.report.view import plan_view
from support.placement_fixtures import plan_candidate, written_plan

BAND = ("Speeds are the model's: runs measured 0.52 to 1.18 times its figure (16 runs, each left out of the fit in "
        "turn); it ranks builds of one model.")


def test_the_text_says_what_the_plan_is_for_and_its_best():
    lines = plan_text(written_plan()).splitlines()
    assert lines[:4] == [
        "bert-large-uncased: BertForQuestionAnswering on 16 GC200 IPUs, global batch 2,048, sequence length 384",
        "8 builds searched: 5 fit, 1 tight, 1 do not fit.",
        "",
        "Best: 4 IPUs x 4, micro-batch 2, G 64, checkpoints, state off chip, layers_per_ipu [3, 7, 7, 7]: 330.2 "
        "samples a second, 0.0969 s a step, the largest IPU 56% of its memory.",
    ]


@pytest.mark.parametrize("factor, words", [
    (None, ""), (1, ""), (2, ", serialization factor 2"), (3, ", serialization factor 3"),
])
def test_the_best_names_its_serialization_factor_only_above_1(factor, words):
    plan = written_plan()
    plan["candidates"][0]["embedding_serialization_factor"] = factor
    assert plan_text(plan).splitlines()[3] == (
        f"Best: 4 IPUs x 4, micro-batch 2, G 64, checkpoints, state off chip, layers_per_ipu [3, 7, 7, 7]{words}: "
        "330.2 samples a second, 0.0969 s a step, the largest IPU 56% of its memory.")


def test_the_best_is_the_first_candidate_and_only_where_it_fits():
    plan = written_plan()
    refused, fitting = plan["candidates"][5], plan["candidates"][0]
    plan.update(candidates=[refused, fitting], pareto=[1])  # the first does not run: no best, though the second fits
    assert plan_text(plan).splitlines()[3] == "No build fits: the nearest are first below."
    plan.update(candidates=[fitting], pareto=[0])
    assert plan_text(plan).splitlines()[3].startswith("Best: 4 IPUs x 4, micro-batch 2, G 64, ")


def test_the_table_left_aligns_layers_per_ipu_and_the_verdict_and_right_aligns_the_rest_after_a_blank_line():
    plan = written_plan()
    wide = plan_candidate(2, 8, 2, 64, 1.35, "does not fit", 380.0, sharding=True)
    wide["layers_per_ipu"] = [10, 14]
    plan.update(candidates=[plan["candidates"][0], wide], pareto=[0], reference=None)
    # each column as wide as its header, "G" as "64", "Verdict" as "does not fit"; steps of 32 / 330.2 = 0.0969 s
    # and 32 / 380.0 = 0.0842 s (to 3 figures)
    assert plan_text(plan).splitlines()[4:] == [
        "",
        "Rank  IPUs a replica  Replicas  layers_per_ipu  Micro-batch   G  Checkpoint every layer  State off chip  "
        "RTS  Largest IPU  Verdict       Samples a second  Step, s",
        "   1               4         4  [3, 7, 7, 7]              2  64                     yes             yes  "
        " no          56%  fits                     330.2   0.0969",
        "   2               2         8  [10, 14]                  2  64                     yes             yes  "
        "yes         135%  does not fit             380.0   0.0842",
        "",
        "Speed against memory (the frontier): #1 330.2/s at 56%.",
        BAND,
    ]


def test_the_table_shows_the_top_candidates_then_the_base_config_and_what_is_left_out():
    lines = plan_text(written_plan(), top=3).splitlines()
    header = lines[5]
    assert header.split("  ")[0] == "Rank" and "Samples a second" in header and "Frontier" not in header
    rows = lines[6:10]
    assert [row.split()[0] for row in rows] == ["1", "2", "3", "base"]
    assert rows[1].split()[-2:] == ["352.9", "0.0907"]
    assert "[3, 7, 7, 7]" in rows[0] and rows[3].split()[-2] == "299.3"
    assert lines[10] == "... and 5 more (--top, --json)."


def test_the_candidates_left_out_are_counted_only_where_there_are_more_than_top():
    lines = plan_text(written_plan(), top=7).splitlines()
    assert lines[13].startswith("base ") and lines[14] == "... and 1 more (--top, --json)."
    lines = plan_text(written_plan(), top=8).splitlines()
    assert lines[14].startswith("base ") and lines[15] == ""


def test_the_base_config_is_one_row_however_few_the_candidates():
    lines = plan_text(written_plan(), top=20).splitlines()
    rows = lines[6:lines.index("", 6)]
    assert [row.split()[0] for row in rows] == ["1", "2", "3", "4", "5", "6", "7", "8", "base"]


def test_the_frontier_marks_the_tight_and_the_base_config_and_the_speeds_worth_close():
    lines = plan_text(written_plan()).splitlines()
    assert lines[-3] == ("Speed against memory (the frontier): #1 330.2/s at 56%, #2 352.9/s at 74%, "
                         "#3 301.5/s at 48%, #4 361.0/s at 93% (tight), #8 240.0/s at 30%.")
    assert lines[-2].startswith("The base config (base in the table): 4 IPUs x 4, micro-batch 2, G 16, ")
    assert lines[-2].endswith("299.3 samples a second, 0.107 s a step, the largest IPU 56% of its memory, fits.")
    assert lines[-1] == BAND


def test_the_speeds_worth_is_the_band_of_the_calibration_that_timed_them():
    """A band of -15 % / +92 %: a measured run was 1 / 1.92 = 0.52 to 1 / 0.85 = 1.18 times the model's figure."""
    plan = written_plan()
    assert plan_text(plan).splitlines()[-1] == BAND
    for candidate in plan["candidates"]:
        candidate["placement"]["time_model"] = dict(candidate["placement"]["time_model"], runs=3)
        speed = candidate["placement"]["samples_per_second"]
        candidate["placement"]["samples_per_second_range"] = [speed / 2, speed / 0.5]
    widened = BAND.replace("0.52 to 1.18", "0.50 to 2.00").replace("16 runs", "3 runs")
    assert plan_text(plan).splitlines()[-1] == widened


def test_a_plan_where_nothing_fits_says_so_and_an_inference_plan_shows_device_iterations():
    plan = written_plan()
    plan.update(candidates=plan["candidates"][3:5], pareto=[0])
    assert plan_text(plan).splitlines()[3] == "No build fits: the nearest are first below."
    inference = written_plan()
    inference.update(build="inference", global_batch_size=None, reference=None)
    for candidate in inference["candidates"]:
        candidate["device_iterations"] = 32
        del candidate["gradient_accumulation_steps"]
    lines = plan_text(inference).splitlines()
    assert lines[0].endswith("on 16 GC200 IPUs, inference, sequence length 384")
    assert "Device iterations" in lines[5] and "Checkpoint" not in lines[5]
    assert lines[3].startswith("Best: 4 IPUs x 4, micro-batch 2, 32 device iterations, layers_per_ipu")


def test_the_table_of_pages_gives_each_candidate_s_pipeline_efficiency_and_frontier_and_the_base_config_last():
    plan = written_plan()
    plan["candidates"][1]["pipeline_efficiency"] = None
    headers, rows = plan_table(plan_view(plan))
    assert headers[-2:] == ["Pipeline efficiency", "Frontier"]
    for row, candidate in zip(rows, plan["candidates"]):
        efficiency = candidate["pipeline_efficiency"]
        assert row[-2] == ("-" if efficiency is None else f"{100 * efficiency:.1f}%")
    assert [row[-1] for row in rows[:len(plan["candidates"])]] == [
        "yes" if index in plan["pareto"] else "" for index in range(len(plan["candidates"]))]
    assert rows[-1][0] == "base" and rows[-1][-1] == ""
    inference = written_plan()
    inference.update(build="inference", global_batch_size=None, reference=None)
    for index, candidate in enumerate(inference["candidates"]):
        candidate["device_iterations"] = 2 ** index
        del candidate["gradient_accumulation_steps"]
    headers, rows = plan_table(plan_view(inference))
    column = headers.index("Device iterations")
    assert [row[column] for row in rows] == [str(2 ** index) for index in range(len(inference["candidates"]))]


def test_the_request_names_a_decoder_length():
    plan = written_plan()
    plan["decoder_sequence_length"] = 128
    assert plan_text(plan).splitlines()[0].endswith(", sequence length 384, decoder length 128")


def test_a_plan_of_one_timed_candidate_gives_the_band_and_one_read_back_without_placements_none():
    plan = written_plan()
    plan.update(candidates=plan["candidates"][:1], pareto=[0], reference=None)
    assert plan_text(plan).splitlines()[-1] == BAND
    for candidate in plan["candidates"]:
        del candidate["placement"]
    assert plan_view(plan).candidates[0].placement is None
    assert BAND not in plan_text(plan)


def test_a_plan_read_back_without_its_build_is_a_training_plan():
    plan = written_plan()
    del plan["build"]
    assert plan_view(plan).training
