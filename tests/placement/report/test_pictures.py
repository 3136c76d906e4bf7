"""`report/placement_picture.py` and `report/page.py`: the picture of a placement parses, and carries every figure
`--json` gives, read back out of its text and attributes: each IPU's parts, total, share, pace, parameters,
Streaming Memory, layers and blocks; the lines of the IPU's memory and of its reserve; the verdict; the schedule's
stages, micro-batches and cycles. The page holds the picture and the tables and loads nothing from elsewhere.
How a browser draws them: test_pictures_browser.py."""

import collections
import html.parser
import json
import re
import xml.etree.ElementTree as ElementTree

import pytest

from optimum_ipu_ext import PlainIPUConfig
from optimum_ipu_ext.placement.report.page import placement_page
from optimum_ipu_ext.placement.report.placement_picture import placement_svg
from optimum_ipu_ext.placement.report.sentences import compress, mib
from optimum_ipu_ext.placement.report.svg import SVG_MARK, esc, wrap, written_here
from optimum_ipu_ext.placement.report.tables import placement_table
from optimum_ipu_ext.placement.report.view import BAR_PARTS, ScheduleView, placement_view
from support import PRESET, REPOSITORY
from support.corpus import FULL_SIZE, PUBLISHED_CONFIGS
from support.placement_fixtures import DOCUMENTED_CONFIG, documented_placement

SVG = "{http://www.w3.org/2000/svg}"
MIB = 1 << 20
DOCUMENTED_PICTURE = REPOSITORY / "docs" / "images" / "placement.svg"


def bert_large():
    """bert-large pre-training on Graphcore's config (4 IPUs, 5 stages, optimizer state off chip), 16 micro-batches
    of 2 x 512 tokens: it fits."""
    config = PlainIPUConfig.from_json_file(str(PUBLISHED_CONFIGS / "hub__Graphcore__bert-large-ipu@main.json"))
    config.gradient_accumulation_steps = 16
    return config.placement(str(FULL_SIZE / "bert-large-uncased"), architecture="BertForPreTraining",
                            micro_batch_size=2, sequence_length=512).to_dict()


def mt5_small():
    """The split of optimum-graphcore's mt5 notebook, which ran out of memory: 134 cycles a step."""
    config = PlainIPUConfig(layers_per_ipu=[0, 8, 8, 0], ipus_per_replica=4, gradient_accumulation_steps=128,
                            matmul_proportion=0.2)
    return config.placement(str(FULL_SIZE / "mt5-small"), micro_batch_size=1, sequence_length=128).to_dict()


def parameters_only():
    """bert-base on the preset with one micro-batch a step, without a micro-batch size: poptorch refuses it."""
    config = PlainIPUConfig.from_json_file(PRESET)
    config.gradient_accumulation_steps = 1
    return config.placement(str(FULL_SIZE / "bert-base-uncased")).to_dict()


PLACEMENTS = {"bert-large": bert_large, "mt5-small": mt5_small, "parameters only": parameters_only}


@pytest.fixture(scope="module", params=sorted(PLACEMENTS))
def placement(request):
    return PLACEMENTS[request.param]()


@pytest.fixture(scope="module")
def fitting():
    return bert_large()


def drawn(placement, config="configs/pipelined-2ipu.json"):
    return ElementTree.fromstring(placement_svg(placement, config))


def texts(element, role=None, **attributes):
    """The text of each `<text>` under `element` (with `data-role` `role`, and these `data-` attributes)."""
    found = []
    for node in element.iter(f"{SVG}text"):
        if role is not None and node.get("data-role") != role:
            continue
        if any(node.get(f"data-{name}") != value for name, value in attributes.items()):
            continue
        found.append(node.text)
    return found


def ipu_groups(root):
    return {int(group.get("data-ipu")): group for group in root.iter(f"{SVG}g")
            if group.get("data-ipu") is not None and group.get("data-stage") is None}


# the picture carries the figures

def test_the_picture_parses_and_names_model_config_and_shape(fitting):
    root = drawn(fitting)
    everything = " ".join(texts(root))
    assert " ".join(texts(root, "title")) == f"{fitting['model']}: BertForPreTraining, training"
    assert "config configs/pipelined-2ipu.json, layers_per_ipu [3, 7, 7, 7], micro-batch 2, sequence length 512" \
        in everything
    assert root.get("viewBox").startswith("0 0 ")
    assert placement_svg(fitting).splitlines()[1] == SVG_MARK


def test_each_ipu_carries_its_parts_total_share_and_labels_as_json_gives_them(placement):
    root = drawn(placement)
    groups = ipu_groups(root)
    assert sorted(groups) == [ipu["ipu"] for ipu in placement["ipus"]]
    memory = placement["ipu_memory_bytes"]
    for ipu, view in zip(placement["ipus"], placement_view(placement).ipus):
        group = groups[ipu["ipu"]]
        expected = {letter: mib(size) for (_, letter), size in zip(BAR_PARTS, view.parts) if size}
        drawn_parts = {rect.get("data-part"): rect.get("data-mib") for rect in group.iter(f"{SVG}rect")
                       if rect.get("data-part")}
        assert drawn_parts == expected
        assert sorted(t for t in texts(group) if re.fullmatch(r"[WAOSRU] [\d,.]+", t)) == \
            sorted(f"{letter} {size}" for letter, size in expected.items())
        assert texts(group, "on-chip") == [mib(ipu["on_chip_bytes"])]
        share = f"{100 * ipu['on_chip_bytes'] / memory:.0f}%"
        assert texts(group, "share") == [f"{mib(ipu['on_chip_bytes'])} MiB, {share}"]
        assert texts(group, "parameters") == [f"{ipu['parameters']:,} parameters"]
        assert texts(group, "streaming") == [f"streaming {mib(ipu['streaming_bytes'])} MiB"]
        assert " ".join(texts(group, "blocks")) == compress(ipu["blocks"])
        assert texts(group, "ipu") == [f"IPU {ipu['ipu']}"]


def test_the_blocks_and_layers_read_as_the_report_writes_them(fitting):
    groups = ipu_groups(drawn(fitting))
    assert " ".join(texts(groups[0], "blocks")) == "Embedding, Encoder0-2, Pooler, Classifier"
    assert texts(groups[0], "layers") == ["layers 0-2"]
    assert texts(groups[3], "layers") == ["layers 17-23"]


def test_the_pace_is_each_ipu_s_cycle_as_a_share_of_the_slowest_ipu_s(fitting):
    """IPU 0 runs 184 operations a cycle, IPUs 1 to 3 329 (the embeddings and the heads weigh less than 3 and 7
    layers' products): IPU 0's cycle is 7.14 ms, the others' 11.06 ms, 65 % of it."""
    groups = ipu_groups(drawn(fitting))
    cycle = {ipu["ipu"]: ipu["cycle_seconds"] for ipu in fitting["ipus"]}
    slowest = fitting["bottleneck_ipu"]
    assert slowest == max(cycle, key=cycle.get) == 1
    assert [round(1e3 * seconds, 2) for seconds in cycle.values()] == [7.14, 11.06, 11.06, 11.06]
    paces = {}
    for number, group in groups.items():
        mark = " (slowest)" if number == slowest else ""
        assert texts(group, "pace") == [f"pace {100 * cycle[number] / cycle[slowest]:.0f}%{mark}"]
        paces[number] = texts(group, "pace")[0]
    assert paces == {0: "pace 65%", 1: "pace 100% (slowest)", 2: "pace 100%", 3: "pace 100%"}


def test_the_bars_heights_are_their_bytes_on_the_scale_of_the_ipu_s_memory(placement):
    root = drawn(placement)
    lines = {group.get("data-line"): group for group in root.iter(f"{SVG}g") if group.get("data-line")}
    memory, reserve = placement["ipu_memory_bytes"], placement["reserve_bytes"]
    assert lines["memory"].get("data-mib") == mib(memory) == "897.0"
    assert lines["reserve"].get("data-mib") == mib(memory - reserve)
    assert f"{mib(memory)} MiB" in texts(lines["memory"]) and f"{mib(memory - reserve)} MiB" in texts(lines["reserve"])
    memory_y = float(next(lines["memory"].iter(f"{SVG}line")).get("y1"))
    reserve_y = float(next(lines["reserve"].iter(f"{SVG}line")).get("y1"))
    for ipu, group in ipu_groups(root).items():
        rects = [rect for rect in group.iter(f"{SVG}rect") if rect.get("data-part")]
        base = max(float(rect.get("y")) + float(rect.get("height")) for rect in rects)
        scale = (base - memory_y) / (memory / MIB)
        assert base - reserve_y == pytest.approx((memory - reserve) / MIB * scale, abs=0.15)
        sizes = dict(zip((letter for _, letter in BAR_PARTS), placement_view(placement).ipus[ipu].parts))
        for rect in rects:
            assert float(rect.get("height")) == pytest.approx(sizes[rect.get("data-part")] / MIB * scale, abs=0.15)
        top = min(float(rect.get("y")) for rect in rects)
        assert base - top == pytest.approx(placement["ipus"][ipu]["on_chip_bytes"] / MIB * scale, abs=0.15)


def badge_of(root):
    """The badge of the verdict: its words and its colour."""
    badge = [group for group in root.iter(f"{SVG}g") if group.get("data-verdict")][0]
    return texts(badge), badge.find(f"{SVG}rect").get("fill")


def inks(root, *beginnings):
    """The colour of each line of the header that begins with one of `beginnings`, by its first words."""
    return {node.text.split(":")[0]: node.get("fill") for node in root.iter(f"{SVG}text")
            if node.text and node.text.startswith(beginnings)}


def test_the_verdict_is_on_the_badge_and_its_reasons_in_the_header():
    fits, over, refused = bert_large(), mt5_small(), parameters_only()
    badge = {name: badge_of(drawn(p)) for name, p in (("fits", fits), ("over", over), ("refused", refused))}
    assert [badge[name][0] for name in ("fits", "over", "refused")] == [["FITS"], ["DOES NOT FIT"], ["DOES NOT RUN"]]
    header = " ".join(texts(drawn(over)))
    assert "Does not fit: IPU 0 (1,221.3 MiB), IPU 3 (1,282.6 MiB) over the 897.0 MiB of an IPU." in header
    refusal = " ".join(texts(drawn(refused)))
    assert ("Does not run: `gradient_accumulation_steps` is 1, and a pipeline of 3 stages needs at least 2 x 3 - 1 = "
            "5: set it to 5 or more.") in refusal
    # each reason in the colour of its verdict's badge: what poptorch refuses in that of a placement that does not fit
    colour = {name: fill for name, (_, fill) in badge.items()}
    assert len({colour["fits"], colour["over"]}) == 2 and colour["refused"] == colour["over"]
    assert inks(drawn(refused), "Fits:", "Does not run:") == {"Fits": colour["fits"], "Does not run": colour["over"]}
    assert inks(drawn(over), "Does not fit:") == {"Does not fit": colour["over"]}
    assert inks(drawn(fits), "Fits:") == {"Fits": colour["fits"]}
    states = {number: texts(group, "state") for number, group in ipu_groups(drawn(over)).items()}
    assert states == {0: ["over the IPU's memory"], 1: [], 2: [], 3: ["over the IPU's memory"]}


def test_a_tight_ipu_is_named_in_the_reserve():
    placement = bert_large()
    placement["reserve_bytes"] = placement["ipu_memory_bytes"] - 470 * MIB  # IPU 1 holds 502.4 MiB
    placement["verdict"] = "tight"
    root = drawn(placement)
    assert texts(ipu_groups(root)[1], "state") == ["in the reserve"]
    assert texts(ipu_groups(root)[3], "state") == []
    assert ("Tight: IPU 1 (502.4 MiB), IPU 2 (470.4 MiB) over the 470.0 MiB a reserve of 427.0 MiB leaves of an "
            "IPU's 897.0 MiB.") in " ".join(texts(root))
    words, colour = badge_of(root)
    assert words == ["TIGHT"] and inks(root, "Tight:") == {"Tight": colour}
    assert colour not in (badge_of(drawn(bert_large()))[1], badge_of(drawn(mt5_small()))[1])


def test_the_time_of_a_step_is_in_the_header(fitting):
    """24 cycles of IPU 1's 11.06 ms, its weight update (the optimizer state's 504.5 MiB through Streaming Memory
    and back, and its arithmetic), no reduction, a host call a step: 0.43 s; samples a second by the model's error on
    its 16 runs, 32 / 0.43 over 1 + 0.916 and 1 - 0.151."""
    assert ("Time: 0.43 s a step on GC200 IPUs (pipeline 0.265 s, weight update 0.111 s, reduction 0 s, host 0.053 "
            "s): 32 samples, 74.5 a second, 39-88 by the model's error on 16 measured runs (data loading not "
            "counted).") in " ".join(texts(drawn(fitting)))


def test_without_a_micro_batch_the_bars_are_the_parameters_parts_and_there_is_no_schedule():
    placement = parameters_only()
    root = drawn(placement)
    assert {rect.get("data-part") for rect in root.iter(f"{SVG}rect") if rect.get("data-part")} == {"W", "O"}
    assert not [group for group in root.iter(f"{SVG}g") if group.get("data-stage")]
    assert "Pipeline schedule" not in texts(root)
    assert "no micro-batch given: the parameters' memory only" in " ".join(texts(root))
    assert not [text for text in texts(root) if text and text.startswith("pace")]


def test_the_legend_names_the_parts_the_bars_show(fitting):
    assert texts(drawn(fitting), "legend") == ["W weights", "A gradient accumulators", "S stash", "R recomputation",
                                               "U optimizer state brought in for the update", "an IPU's memory",
                                               "what the reserve leaves"]
    assert texts(drawn(mt5_small()), "legend")[:3] == ["W weights", "A gradient accumulators", "O optimizer state"]


def lightness(colour):
    """A colour's grey on a grey-scale print, in % (Rec. 709 luma)."""
    red, green, blue = (int(colour[index:index + 2], 16) for index in (1, 3, 5))
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 2.55


def paint(root, fill):
    """What a fill paints, as a grey-scale print shows it: (its colour, its pattern: None, "stripes" or "dots"); a
    pattern's colour is its ground's."""
    if not fill.startswith("url(#"):
        return fill, None
    pattern = next(node for node in root.iter(f"{SVG}pattern") if node.get("id") == fill[len("url(#"):-1])
    kind = "stripes" if pattern.find(f"{SVG}path") is not None else "dots"
    return pattern.find(f"{SVG}rect").get("fill"), kind


def test_the_colours_survive_a_grey_scale_print():
    painted, legend = {}, {}  # each part's paint, as its bars and as its legend's swatch show it
    for placement in (bert_large(), mt5_small(), parameters_only()):
        root = drawn(placement)
        for group in ipu_groups(root).values():
            for rect in group.iter(f"{SVG}rect"):
                if rect.get("data-part"):
                    painted.setdefault(rect.get("data-part"), set()).add(paint(root, rect.get("fill")))
        for swatch, label in zip(root, list(root)[1:]):  # each name of the legend, after its swatch
            if label.get("data-role") == "legend" and swatch.tag == f"{SVG}rect":
                legend[label.text.split()[0]] = paint(root, swatch.get("fill"))
    letters = [letter for _, letter in BAR_PARTS]
    assert sorted(painted) == sorted(letters) and all(len(paints) == 1 for paints in painted.values())
    styles = [painted[letter].pop() for letter in letters]
    assert legend == dict(zip(letters, styles))  # the legend tells the parts as the bars draw them
    # any two parts a bar may stack next to each other differ by 15 % of grey, or one of them is patterned
    for first, (fill, pattern) in enumerate(styles):
        for other, (other_fill, other_pattern) in enumerate(styles[first + 1:], first + 1):
            assert abs(lightness(fill) - lightness(other_fill)) >= 15 or pattern or other_pattern, (first, other)
    # the parameters' parts, plain, from dark to light; the pipeline's and the update's patterned
    assert [pattern for _, pattern in styles] == [None, None, None, "stripes", "stripes", "dots"]
    assert lightness(styles[0][0]) + 15 <= lightness(styles[1][0]) <= lightness(styles[2][0]) - 15
    # the schedule: forward light, backward dark, the recomputation between them striped
    root = drawn(bert_large())
    work = {rect.get("data-work"): paint(root, rect.get("fill")) for group in stage_groups(root)
            for rect in group.iter(f"{SVG}rect") if rect.get("data-work")}
    (forward, _), (backward, _), (recompute, striped) = (work[kind] for kind in ("forward", "backward", "recompute"))
    assert lightness(forward) - lightness(backward) >= 40 and lightness(recompute) - lightness(backward) >= 40
    assert striped == "stripes" and work["forward"][1] is None and work["backward"][1] is None


def test_every_text_is_escaped():
    placement = bert_large()
    placement["model"] = 'a <model> & "its" folder'
    placement["ipus"][0]["blocks"] = ["<Embedding>", "Encoder0 & 1"]
    root = drawn(placement, config="x<y>.json")
    assert texts(root, "title") == ['a <model> & "its" folder: BertForPreTraining, training']
    assert " ".join(texts(ipu_groups(root)[0], "blocks")) == "<Embedding>, Encoder0 & 1"
    assert "config x<y>.json" in " ".join(texts(root))
    assert esc('<a href="x">') == "&lt;a href=&quot;x&quot;&gt;"


def test_the_picture_in_the_docs_is_the_one_drawn_now():
    drawn_now = placement_svg(documented_placement(), DOCUMENTED_CONFIG)
    assert DOCUMENTED_PICTURE.read_text(encoding="utf-8") == drawn_now, \
        "docs/images/placement.svg is not the picture drawn now: run `make documents`"


def test_the_picture_is_drawn_the_same_from_the_json_read_back(fitting):
    assert placement_svg(json.loads(json.dumps(fitting))) == placement_svg(fitting)


# the schedule

def stage_groups(root):
    return [group for group in root.iter(f"{SVG}g") if group.get("data-stage") is not None]


def work_of(group, kind):
    return [int(rect.get("data-micro-batch")) for rect in group.iter(f"{SVG}rect") if rect.get("data-work") == kind]


def test_the_schedule_runs_every_micro_batch_through_every_stage_forward_and_backward(fitting):
    root = drawn(fitting)
    groups = stage_groups(root)
    assert [(int(g.get("data-stage")), int(g.get("data-ipu"))) for g in groups] == [(0, 0), (1, 1), (2, 2), (3, 3),
                                                                                     (4, 0)]
    for group in groups:
        assert work_of(group, "forward") == list(range(16))
        assert work_of(group, "backward") == list(range(16))
        assert work_of(group, "recompute") == list(range(16))  # every IPU recomputes
    cycles = [text for text in texts(root) if text and text.isdigit()]
    assert "24" in cycles and "25" not in cycles
    assert "One step: 5 stages, 16 micro-batches, 24 cycles (16 + 2 x (5 - 1)); each cycle every stage runs one " \
        "micro-batch forward and one backward" in " ".join(texts(root))


def test_the_bubbles_show_where_a_stage_idles(fitting):
    groups = stage_groups(drawn(fitting))
    cell = {}
    for group in groups:
        for rect in group.iter(f"{SVG}rect"):
            if rect.get("data-work") == "forward":
                cell.setdefault(int(group.get("data-stage")), []).append(float(rect.get("x")))
    width = cell[0][1] - cell[0][0]
    # stage k begins k cycles after stage 0: the ramp-up's bubble
    assert [round((cell[stage][0] - cell[0][0]) / width) for stage in range(5)] == [0, 1, 2, 3, 4]


def test_the_slowest_ipu_s_stages_are_marked(fitting):
    groups = stage_groups(drawn(fitting))
    assert [group.get("data-slowest") for group in groups] == [None, "true", None, None, None]
    assert texts(groups[1]).count("slowest IPU") == 1
    assert "A cycle lasts as long as IPU 1, the slowest, takes for its work (marked: its stages)." in texts(
        drawn(fitting))


def test_a_long_step_shows_its_ramps_and_hides_steady_cycles():
    placement = mt5_small()
    root = drawn(placement)
    groups = stage_groups(root)
    forward = work_of(groups[0], "forward")
    assert forward[:3] == [0, 1, 2] and forward[-3:] == [125, 126, 127] and len(forward) < 128
    assert "96 more" in texts(root)
    assert not work_of(groups[0], "recompute")  # IPU 0 computes nothing: it recomputes nothing
    assert work_of(groups[1], "recompute") == work_of(groups[1], "backward")


def pipelined(placement, stages, batches, training=True):
    """`placement` as a pipeline of `stages` stages (on its IPUs in turn) that runs `batches` micro-batches a step."""
    cycles = batches + (2 if training else 1) * (stages - 1)
    return dict(placement, build="training" if training else "inference", pipeline_cycles=cycles,
                pipeline_efficiency=batches / cycles,
                stages=[{"ipu": number % len(placement["ipus"]), "blocks": [], "stash_depth": 1}
                        for number in range(stages)])


def columns_of(group):
    """The x of each cycle a stage's row draws, left to right: of the cells of its tracks, idle or not (a mark of
    the slowest IPU beside the row is narrower)."""
    cells = [rect for rect in group.iter(f"{SVG}rect") if not rect.get("data-work")]
    width = collections.Counter(rect.get("width") for rect in cells).most_common(1)[0][0]
    return sorted({float(rect.get("x")) for rect in cells if rect.get("width") == width})


@pytest.mark.parametrize("stages, batches, drawn_all", [(5, 16, True), (4, 34, True), (8, 32, True),
                                                        (4, 128, False), (14, 512, False)])
def test_which_cycles_are_drawn(fitting, stages, batches, drawn_all):
    # 24, 40, 46, 134 and 538 cycles, of which 8, 6, 14, 6 and 26 fill and flush the pipeline
    cycles, fill = batches + 2 * (stages - 1), 2 * (stages - 1)
    root = drawn(pipelined(fitting, stages, batches))
    first = stage_groups(root)[0]
    columns = columns_of(first)
    cell = columns[1] - columns[0]
    steps = [round((after - before) / cell, 1) for before, after in zip(columns, columns[1:])]
    hidden = [text for text in texts(root) if text and text.endswith(" more")]
    if drawn_all:
        assert len(columns) == cycles and set(steps) == {1} and not hidden
        assert work_of(first, "forward") == list(range(batches)) == work_of(first, "backward")
        return
    # the first cycles, a gap a cell and a half wide that stands for the steady ones, and as many last cycles
    assert steps.count(2.5) == 1
    gap = steps.index(2.5) + 1
    assert set(steps[:gap - 1] + steps[gap:]) == {1} and len(columns) == 2 * gap
    assert hidden == [f"{cycles - 2 * gap:,} more"]
    assert gap >= fill + 3
    # stage 0 takes micro-batch m forward in cycle m, and back 2(S-1) cycles later
    assert work_of(first, "forward") == [*range(gap), *range(cycles - gap, batches)]
    assert work_of(first, "backward") == [*range(gap - fill), *range(cycles - gap - fill, batches)]


def runs_of(group, cycles):
    """The micro-batch a stage's row runs forward and backward (None: none) in each cycle, all drawn."""
    columns = columns_of(group)
    assert len(columns) == cycles
    runs = [[None, None] for _ in columns]
    for rect in group.iter(f"{SVG}rect"):
        if rect.get("data-work") in ("forward", "backward"):
            cycle = max(index for index, x in enumerate(columns) if x <= float(rect.get("x")))
            runs[cycle][rect.get("data-work") == "backward"] = int(rect.get("data-micro-batch"))
    return [tuple(run) for run in runs]


def test_each_stage_takes_a_micro_batch_forward_k_cycles_after_the_first_and_back_2_s_2_k_after(fitting):
    # 3 stages, 5 micro-batches: 9 cycles
    runs = [runs_of(group, 9) for group in stage_groups(drawn(pipelined(fitting, 3, 5)))]
    assert runs[0] == [(0, None), (1, None), (2, None), (3, None), (4, 0), (None, 1), (None, 2), (None, 3), (None, 4)]
    assert runs[2] == [(None, None), (None, None), (0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (None, None),
                       (None, None)]
    # inference: forward only, 7 cycles
    inference = runs_of(stage_groups(drawn(pipelined(fitting, 3, 5, training=False)))[1], 7)
    assert [inference[cycle] for cycle in (0, 1, 5, 6)] == [(None, None), (0, None), (4, None), (None, None)]


def schedule(placement):
    return placement_view(placement).schedule


def test_the_schedule_is_read_off_the_cycles_and_the_efficiency(fitting):
    assert schedule(fitting) == ScheduleView(5, 16, 24, True)
    inference = dict(fitting, build="inference", pipeline_cycles=12, pipeline_efficiency=8 / 12)
    assert schedule(inference) == ScheduleView(5, 8, 12, False)
    assert schedule(dict(fitting, pipeline_cycles=None, pipeline_efficiency=None)) is None
    # a generation build's encoder and decoder run as two pipelines: its stages are not one pipeline's
    assert schedule(dict(fitting, build="inference", pipeline_cycles=10, pipeline_efficiency=8 / 10)) is None
    root = drawn(dict(fitting, build="inference", pipeline_cycles=10, pipeline_efficiency=8 / 10))
    assert "Schedule: the encoder and the decoder run as pipelines of their own; not drawn." in texts(root)


def test_a_build_that_is_not_pipelined_has_no_schedule(fitting):
    root = drawn(dict(fitting, pipeline_cycles=None, pipeline_efficiency=None))
    assert not stage_groups(root)
    assert "Not pipelined: the 5 stages (IPUs 0, 1, 2, 3, 0) run one micro-batch at a time; IPU 1 takes the " \
        "longest and sets the pace." in " ".join(texts(root))


# helpers

def test_long_lines_wrap_between_items_then_between_words():
    assert wrap("Embedding, Encoder0-2, Pooler, Classifier", 110, 10) == ["Embedding,", "Encoder0-2, Pooler,",
                                                                         "Classifier"]
    assert wrap("Embedding, Encoder0-2, Pooler, Classifier", 130, 10) == ["Embedding, Encoder0-2,",
                                                                         "Pooler, Classifier"]
    assert wrap("Encoder Stack Final LayerNorm", 80, 10) == ["Encoder Stack", "Final", "LayerNorm"]
    assert wrap("Supercalifragilistic", 20, 10) == ["Supercalifragilistic"]


def test_a_file_is_known_as_one_place_wrote_by_its_first_lines(fitting):
    assert written_here(placement_svg(fitting)[:2048])
    assert written_here(placement_page(fitting)[:2048])
    assert not written_here('{"layers_per_ipu": [6, 6]}')
    assert not written_here('<svg xmlns="http://www.w3.org/2000/svg"></svg>')


# the table and the page

def test_the_table_is_the_text_report_s_with_each_part_of_the_memory(fitting):
    headers, rows = placement_table(placement_view(fitting))
    assert headers == ["IPU", "Blocks", "Layers", "Parameters", "On chip, MiB of 897.0", "Share", "W, MiB", "A, MiB",
                       "O, MiB", "S, MiB", "R, MiB", "U, MiB", "Streaming, MiB", "Forward, GFLOP", "Backward, GFLOP",
                       "Pace"]
    assert rows[0] == ["0", "Embedding, Encoder0-2, Pooler, Classifier", "0-2", "71,705,404", "452.4", "50%", "136.8",
                       "136.8", "0.0", "0.0", "0.0", "178.8", "410.3", "149.9", "449.7", "65%"]
    assert [row[-1] for row in rows] == ["65%", "100%", "100%", "100%"]
    assert placement_table(placement_view(parameters_only()))[0][-1] == "Streaming, MiB"


class Page(html.parser.HTMLParser):
    """The tags, the attributes that load something, and the table cells of a page."""

    def __init__(self):
        super().__init__()
        self.tags, self.loads, self.cells, self.rows, self._cell = [], [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "srcset", "poster", "data") or (value and "url(" in value
                                                                        and "url(#" not in value):
                self.loads.append((tag, name, value))
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def test_the_page_holds_the_picture_and_the_tables_and_loads_nothing(fitting):
    page = placement_page(fitting, "configs/pipelined-2ipu.json")
    parser = Page()
    parser.feed(page)
    assert parser.tags.count("svg") == 1 and parser.tags.count("table") == 3
    assert not parser.loads
    assert "script" not in parser.tags and "link" not in parser.tags and "img" not in parser.tags
    assert "@import" not in page and "url(http" not in page
    assert "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">" \
        in page
    # every address in it is the SVG namespace, which names and loads nothing
    assert set(re.findall(r"https?://[^\s\"'<]+", page)) == {"http://www.w3.org/2000/svg"}
    headers, rows = placement_table(placement_view(fitting))
    assert parser.rows[0] == headers and parser.rows[1:5] == rows
    assert parser.rows[5] == ["Stage", "IPU", "Blocks", "Stash depth, micro-batches"]
    assert parser.rows[6] == ["0", "0", "Embedding, Encoder0-2", "9"]
    assert parser.rows[-4:] == [["pipeline", "0.2654"], ["weight update", "0.1111"], ["reduction", "0"],
                                ["host", "0.05305"]]
    assert "pace: the IPU's cycle, as a share of the slowest IPU's.</p>" in page
    assert json.loads(html.unescape(page.split("<pre>")[1].split("</pre>")[0])) == fitting
    assert f"<title>{esc(fitting['model'])}: BertForPreTraining, training</title>" in page


def test_the_page_of_a_placement_without_a_micro_batch_has_no_time(fitting):
    page = placement_page(parameters_only())
    assert "A step's time" not in page and page.count("<table>") == 2


def test_an_ipu_over_its_memory_is_marked_in_the_page_s_table():
    parser = Page()
    page = placement_page(mt5_small())
    parser.feed(page)
    assert page.count('<tr class="over">') == 2 and '<tr class="tight">' not in page
