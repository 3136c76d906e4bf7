"""`report/pictures.py` and `report/page.py`: the picture of a placement parses, and carries every figure
`--json` gives, read back out of its text and attributes: each IPU's parts, total, share, pace, parameters,
Streaming Memory, layers and blocks; the lines of the IPU's memory and of its reserve; the verdict; the schedule's
stages, micro-batches and cycles. The page holds the picture and the tables and loads nothing from elsewhere.
How a browser draws them: test_pictures_browser.py."""

import html.parser
import json
import re
import xml.etree.ElementTree as ElementTree

import pytest

from optimum_ipu_ext import PlainIPUConfig
from optimum_ipu_ext.placement.report.page import placement_page
from optimum_ipu_ext.placement.report.pictures import (
    BACKWARD,
    FORWARD,
    MIB,
    PART_STYLES,
    RECOMPUTE,
    SVG_MARK,
    VERDICT_COLOURS,
    cycle_work,
    drawn_cycles,
    esc,
    placement_svg,
    placement_table,
    schedule,
    wrap,
    written_here,
)
from optimum_ipu_ext.placement.report.placement import BAR_PARTS, compress, mib, parts
from support import PRESET, REPOSITORY
from support.corpus import FULL_SIZE, PUBLISHED_CONFIGS
from support.placement_fixtures import DOCUMENTED_CONFIG, documented_placement

SVG = "{http://www.w3.org/2000/svg}"
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
    for ipu in placement["ipus"]:
        group = groups[ipu["ipu"]]
        expected = {letter: mib(size) for (_, letter), size in zip(BAR_PARTS, parts(ipu)) if size}
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


def test_the_pace_is_each_ipu_s_share_of_the_slowest_ipu_s_flops(fitting):
    groups = ipu_groups(drawn(fitting))
    flops = {ipu["ipu"]: ipu["forward_flops"] + ipu["backward_flops"] + ipu["recompute_flops"]
             for ipu in fitting["ipus"]}
    slowest = fitting["bottleneck_ipu"]
    assert slowest == max(flops, key=flops.get) == 1
    for number, group in groups.items():
        mark = " (slowest)" if number == slowest else ""
        assert texts(group, "pace") == [f"pace {100 * flops[number] / flops[slowest]:.0f}%{mark}"]


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
        sizes = dict(zip((letter for _, letter in BAR_PARTS), parts(placement["ipus"][ipu])))
        for rect in rects:
            assert float(rect.get("height")) == pytest.approx(sizes[rect.get("data-part")] / MIB * scale, abs=0.15)
        top = min(float(rect.get("y")) for rect in rects)
        assert base - top == pytest.approx(placement["ipus"][ipu]["on_chip_bytes"] / MIB * scale, abs=0.15)


def test_the_verdict_is_on_the_badge_and_its_reasons_in_the_header():
    fits, over, refused = bert_large(), mt5_small(), parameters_only()
    badge = {name: [g for g in drawn(p).iter(f"{SVG}g") if g.get("data-verdict")][0]
             for name, p in (("fits", fits), ("over", over), ("refused", refused))}
    assert [texts(badge[name]) for name in ("fits", "over", "refused")] == [["FITS"], ["DOES NOT FIT"],
                                                                            ["DOES NOT RUN"]]
    header = " ".join(texts(drawn(over)))
    assert "Does not fit: IPU 0 (1,221.3 MiB), IPU 3 (1,282.6 MiB) over the 897.0 MiB of an IPU." in header
    refusal = " ".join(texts(drawn(refused)))
    assert ("Does not run: `gradient_accumulation_steps` is 1, and a pipeline of 3 stages needs at least 2 x 3 - 1 = "
            "5: set it to 5 or more.") in refusal
    inks = {node.text.split(":")[0]: node.get("fill") for node in drawn(refused).iter(f"{SVG}text")
            if node.text and node.text.startswith(("Fits:", "Does not run:"))}
    assert inks == {"Fits": VERDICT_COLOURS["fits"], "Does not run": VERDICT_COLOURS["does not fit"]}
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


def test_the_time_of_a_step_is_in_the_header(fitting):
    assert ("Time: 0.428 s a step on GC200 IPUs (pipeline 0.196 s, weight update 0.11 s, reduction 0 s, overhead "
            "0.121 s): 32 samples, 74.8 a second.") in " ".join(texts(drawn(fitting)))


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


def test_the_colours_survive_a_grey_scale_print():
    # any two parts a bar may stack next to each other differ by 15 % of grey, or one of them is patterned
    for first, (fill, pattern, _, _) in enumerate(PART_STYLES):
        for other, (other_fill, other_pattern, _, _) in enumerate(PART_STYLES[first + 1:], first + 1):
            assert abs(lightness(fill) - lightness(other_fill)) >= 15 or pattern or other_pattern, (first, other)
    # the parameters' parts, plain, from dark to light; the pipeline's and the update's patterned
    assert [pattern for _, pattern, _, _ in PART_STYLES] == [None, None, None, "stripes", "stripes", "dots"]
    assert lightness(PART_STYLES[0][0]) + 15 <= lightness(PART_STYLES[1][0]) <= lightness(PART_STYLES[2][0]) - 15
    # the schedule: forward light, backward dark, the recomputation between them striped
    assert lightness(FORWARD) - lightness(BACKWARD) >= 40 and lightness(RECOMPUTE) - lightness(BACKWARD) >= 40


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


def test_a_long_step_shows_its_ramps_and_hides_steady_cycles():
    placement = mt5_small()
    root = drawn(placement)
    groups = stage_groups(root)
    forward = work_of(groups[0], "forward")
    assert forward[:3] == [0, 1, 2] and forward[-3:] == [125, 126, 127] and len(forward) < 128
    assert "96 more" in texts(root)
    assert not work_of(groups[0], "recompute")  # IPU 0 computes nothing: it recomputes nothing
    assert work_of(groups[1], "recompute") == work_of(groups[1], "backward")


@pytest.mark.parametrize("cycles, fill, drawn_all", [(24, 8, True), (40, 6, True), (46, 14, True),
                                                    (134, 6, False), (538, 26, False)])
def test_which_cycles_are_drawn(cycles, fill, drawn_all):
    columns = drawn_cycles(cycles, fill)
    if drawn_all:
        assert columns == list(range(cycles))
        return
    gap = columns.index(None)
    assert columns[:gap] == list(range(gap)) and columns[gap + 1:] == list(range(cycles - gap, cycles))
    assert gap >= fill + 3


def test_each_stage_takes_a_micro_batch_forward_k_cycles_after_the_first_and_back_2_s_2_k_after():
    # 3 stages, 5 micro-batches: 9 cycles
    runs = [[cycle_work(stage, 3, 5, cycle, True) for cycle in range(9)] for stage in range(3)]
    assert runs[0] == [(0, None), (1, None), (2, None), (3, None), (4, 0), (None, 1), (None, 2), (None, 3), (None, 4)]
    assert runs[2] == [(None, None), (None, None), (0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (None, None),
                       (None, None)]
    assert [cycle_work(1, 3, 5, cycle, False) for cycle in (0, 1, 5, 6)] == [(None, None), (0, None), (4, None),
                                                                             (None, None)]


def test_the_schedule_is_read_off_the_cycles_and_the_efficiency(fitting):
    assert schedule(fitting) == (5, 16, True)
    inference = dict(fitting, build="inference", pipeline_cycles=12, pipeline_efficiency=8 / 12)
    assert schedule(inference) == (5, 8, False)
    assert schedule(dict(fitting, pipeline_cycles=None, pipeline_efficiency=None)) is None
    # a generation build's encoder and decoder run as two pipelines: its stages are not one pipeline's
    assert schedule(dict(fitting, build="inference", pipeline_cycles=10, pipeline_efficiency=8 / 10)) is None
    root = drawn(dict(fitting, build="inference", pipeline_cycles=10, pipeline_efficiency=8 / 10))
    assert "Schedule: the encoder and the decoder run as pipelines of their own; not drawn." in texts(root)


def test_a_build_that_is_not_pipelined_has_no_schedule(fitting):
    root = drawn(dict(fitting, pipeline_cycles=None, pipeline_efficiency=None))
    assert not stage_groups(root)
    assert "Not pipelined: the 5 stages (IPUs 0, 1, 2, 3, 0) run one micro-batch at a time; IPU 1 computes the " \
        "most and sets the pace." in " ".join(texts(root))


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
    headers, rows = placement_table(fitting)
    assert headers == ["IPU", "Blocks", "Layers", "Parameters", "On chip, MiB of 897.0", "Share", "W, MiB", "A, MiB",
                       "O, MiB", "S, MiB", "R, MiB", "U, MiB", "Streaming, MiB", "Forward, GFLOP", "Backward, GFLOP",
                       "Pace"]
    assert rows[0] == ["0", "Embedding, Encoder0-2, Pooler, Classifier", "0-2", "71,705,404", "452.4", "50%", "136.8",
                       "136.8", "0.0", "0.0", "0.0", "178.8", "410.3", "149.9", "449.7", "77%"]
    assert [row[-1] for row in rows] == ["77%", "100%", "100%", "100%"]
    assert placement_table(parameters_only())[0][-1] == "Streaming, MiB"


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
    headers, rows = placement_table(fitting)
    assert parser.rows[0] == headers and parser.rows[1:5] == rows
    assert parser.rows[5] == ["Stage", "IPU", "Blocks", "Stash depth, micro-batches"]
    assert parser.rows[6] == ["0", "0", "Embedding, Encoder0-2", "9"]
    assert parser.rows[-4:] == [["pipeline", "0.1964"], ["weight update", "0.1102"], ["reduction", "0"],
                                ["overhead", "0.121"]]
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
