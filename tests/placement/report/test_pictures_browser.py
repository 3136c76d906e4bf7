"""The pictures as a person sees them: headless Chromium draws the SVG and the page, and the pixels of the screenshot
say what the figures say. Each bar's parts, told apart by their colours, are as tall as their bytes on the scale of
the lines of the IPU's memory and of what its reserve leaves, both found in the pixels; the schedule's stages begin
and end with their bubbles; the page shows the picture. Chromium: tests/support/browser.py (skipped where it is
missing, outside CI). The colours each part and each verdict is told by are read off the picture itself (its
fills, its patterns, its legend)."""

import itertools
import math
import re
import xml.etree.ElementTree as ElementTree

import pytest

from optimum_ipu_ext import PlainIPUConfig
from optimum_ipu_ext.placement.report.page import placement_page
from optimum_ipu_ext.placement.report.placement_picture import placement_svg
from optimum_ipu_ext.placement.report.plan_picture import plan_svg
from optimum_ipu_ext.placement.report.view import BAR_PARTS, placement_view
from support.browser import chromium, screenshot
from support.corpus import FULL_SIZE
from support.placement_fixtures import documented_placement, written_plan

SVG = "{http://www.w3.org/2000/svg}"
LETTERS = [letter for _, letter in BAR_PARTS]


@pytest.fixture(scope="module")
def browser():
    return chromium()


def mt5_small():
    """The split of optimum-graphcore's mt5 notebook, which ran out of memory: bars over the IPU's memory."""
    config = PlainIPUConfig(layers_per_ipu=[0, 8, 8, 0], ipus_per_replica=4, gradient_accumulation_steps=128,
                            matmul_proportion=0.2)
    return config.placement(str(FULL_SIZE / "mt5-small"), micro_batch_size=1, sequence_length=128).to_dict()


def rgb(colour):
    return tuple(int(colour[index:index + 2], 16) for index in (1, 3, 5))


def paints(root, fill):
    """The colours a fill paints: its own, or a pattern's ground and its stripes' or dots' ink."""
    if not fill.startswith("url(#"):
        return [rgb(fill)]
    pattern = next(node for node in root.iter(f"{SVG}pattern") if node.get("id") == fill[len("url(#"):-1])
    ground, mark = list(pattern)
    return [rgb(ground.get("fill")), rgb(mark.get("stroke") or mark.get("fill"))]


class Palette:
    """The colours of a picture's memory panel, as it paints them: each part's (`parts`, by letter: its fill, and
    its pattern's ink), and what else it is painted with (`others`): the lines and outlines, the paper, the plot, the
    bands, the gridlines."""

    def __init__(self, root):
        self.parts = {}
        for rect in root.iter(f"{SVG}rect"):
            if rect.get("data-part"):
                self.parts.setdefault(rect.get("data-part"), paints(root, rect.get("fill")))
        ink = next(line for line in root.iter(f"{SVG}line") if line.get("data-line") == "base").get("stroke")
        paper = root.find(f"{SVG}rect").get("fill")
        axis = next(group for group in root.iter(f"{SVG}g") if group.get("data-role") == "axis")
        plot = [rect.get("fill") for rect in axis.iter(f"{SVG}rect")] + [line.get("stroke")
                                                                          for line in axis.iter(f"{SVG}line")]
        self.others = [rgb(colour) for colour in {ink, paper, *plot}]


def nearest_part(palette, pixel, letters=None):
    """The part of `letters` (those of the bar, as the legend tells them; None: all the picture draws) whose colours
    are nearest `pixel` (an edge blending it with a line or the paper is still the part's), or None where a line,
    the paper or a band is nearer."""
    distance, letter = min((math.dist(pixel, colour), letter) for letter in letters or palette.parts
                           for colour in palette.parts[letter])
    return letter if distance < min(math.dist(pixel, colour) for colour in palette.others) else None


def bar_from_the_axis_up(palette, pixels, x, bottom, letters):
    """The part (of `letters`) of each pixel of column `x` from row `bottom` up to the bar's top (past which more than
    3 rows are of no part). A line drawn across the bar, a run of at most 3 rows between two runs of one part, is
    taken as that part."""
    column = []
    for y in range(bottom, 0, -1):
        column.append(nearest_part(palette, pixels[y][x], letters))
        if column[-4:] == [None] * 4:
            break
    while column and column[-1] is None:
        column.pop()
    runs = [[letter, len(list(rows))] for letter, rows in itertools.groupby(column)]
    for number, (letter, _) in enumerate(runs):
        crossing = 0  # the rows after this run up to the next run of the same part
        for after in range(number + 1, len(runs)):
            if runs[after][0] == letter:
                if crossing <= 3:
                    for between in range(number + 1, after):
                        runs[between][0] = letter
                break
            crossing += runs[after][1]
    return [letter for letter, rows in runs for _ in range(rows)]


def lines_drawn(root, pixels):
    """The rows of the three lines of the memory panel, as drawn: the IPU's memory (solid), what the reserve leaves
    (dashed), the axis; found in the column just right of the axis's start, from the plot's top down to the axis."""
    axis = next(line for line in root.iter(f"{SVG}line") if line.get("data-line") == "base")
    plot = next(next(group.iter(f"{SVG}rect")) for group in root.iter(f"{SVG}g") if group.get("data-role") == "axis")
    x, bottom = int(float(axis.get("x1"))) + 2, int(float(axis.get("y1"))) + 4
    return dark_rows(pixels, x, int(float(plot.get("y"))), bottom)


def drawn(browser, tmp_path, placement, name="placement"):
    """The picture's SVG tree and its pixels, as Chromium draws it at its own size."""
    text = placement_svg(placement, "configs/pipelined-2ipu.json")
    path = tmp_path / f"{name}.svg"
    path.write_text(text, encoding="utf-8")
    root = ElementTree.fromstring(text)
    width, height = (math.ceil(float(root.get(side))) for side in ("width", "height"))
    return root, screenshot(browser, path, width, height, tmp_path / f"{name}.png")


def dark_rows(pixels, x, top, bottom):
    """The middle row of each run of dark pixels in column `x` between rows `top` and `bottom`."""
    runs, start = [], None
    for y in range(top, bottom):
        dark = sum(pixels[y][x]) < 450  # the lines, antialiased; not the light bands and gridlines
        if dark and start is None:
            start = y
        if not dark and start is not None:
            runs.append((start + y - 1) / 2)
            start = None
    return runs


@pytest.mark.parametrize("name", ["bert-large", "mt5-small"])
def test_the_bars_are_as_tall_as_their_bytes_on_the_scale_of_the_lines_drawn(browser, tmp_path, name):
    placement = documented_placement() if name == "bert-large" else mt5_small()
    root, pixels = drawn(browser, tmp_path, placement)
    palette = Palette(root)
    memory_y, reserve_y, base_y = lines_drawn(root, pixels)
    memory, reserve = placement["ipu_memory_bytes"], placement["reserve_bytes"]
    pixels_a_byte = (base_y - memory_y) / memory
    assert base_y - reserve_y == pytest.approx((memory - reserve) * pixels_a_byte, abs=1.5)
    bars = {int(group.get("data-ipu")): group for group in root.iter(f"{SVG}g")
            if group.get("data-ipu") is not None and group.get("data-stage") is None}
    for ipu, view in zip(placement["ipus"], placement_view(placement).ipus):
        x = int(float(next(rect for rect in bars[ipu["ipu"]].iter(f"{SVG}rect") if rect.get("data-part")).get("x")))
        expected = dict(zip(LETTERS, view.parts))
        shown = [letter for letter in LETTERS if expected[letter]]
        column = bar_from_the_axis_up(palette, pixels, x + 4, int(base_y) - 1, shown)
        top = len(column)
        seen = {letter: column.count(letter) for letter in LETTERS}
        assert top == pytest.approx(ipu["on_chip_bytes"] * pixels_a_byte, abs=2), ipu["ipu"]
        for letter in LETTERS:
            assert seen[letter] == pytest.approx(expected[letter] * pixels_a_byte, abs=2), (ipu["ipu"], letter)
        assert [letter for letter in LETTERS if seen[letter] >= 3] == [
            letter for letter in LETTERS if expected[letter] * pixels_a_byte >= 3]


def test_an_ipu_over_its_memory_rises_above_the_line_of_the_memory(browser, tmp_path):
    placement = mt5_small()
    root, pixels = drawn(browser, tmp_path, placement)
    palette = Palette(root)
    memory_y = lines_drawn(root, pixels)[0]
    overs = [ipu["ipu"] for ipu in placement["ipus"] if ipu["on_chip_bytes"] > placement["ipu_memory_bytes"]]
    assert overs == [0, 3]
    for group in root.iter(f"{SVG}g"):
        if group.get("data-ipu") is None or group.get("data-stage") is not None:
            continue
        x = int(float(next(rect for rect in group.iter(f"{SVG}rect") if rect.get("data-part")).get("x"))) + 4
        above = nearest_part(palette, pixels[int(memory_y) - 6][x]) is not None
        assert above == (int(group.get("data-ipu")) in overs)


def test_each_stage_idles_through_its_bubbles_and_works_between_them(browser, tmp_path):
    placement = documented_placement()  # 5 stages, 16 micro-batches: 24 cycles
    root, pixels = drawn(browser, tmp_path, placement)
    stages = [group for group in root.iter(f"{SVG}g") if group.get("data-stage") is not None]
    forward, backward = (rgb(next(rect for group in stages for rect in group.iter(f"{SVG}rect")
                                  if rect.get("data-work") == kind).get("fill")) for kind in ("forward", "backward"))
    first = next(rect for rect in stages[0].iter(f"{SVG}rect") if rect.get("data-work") == "forward")
    start, cell = float(first.get("x")), 0.0
    second = [rect for rect in stages[0].iter(f"{SVG}rect") if rect.get("data-work") == "forward"][1]
    cell = float(second.get("x")) - start
    for number, stage in enumerate(stages):
        forward_y = int(float(next(rect for rect in stage.iter(f"{SVG}rect")
                                   if rect.get("data-work") == "forward").get("y"))) + 2
        backward_y = forward_y + 14
        track = [pixels[forward_y][int(start + cycle * cell) + 3] for cycle in range(24)]
        lower = [pixels[backward_y][int(start + (cycle + 1) * cell) - 3] for cycle in range(24)]
        working = [math.dist(pixel, forward) < 30 for pixel in track]
        assert working == [number <= cycle < number + 16 for cycle in range(24)], number
        going_back = [math.dist(pixel, backward) < 30 for pixel in lower]
        assert going_back == [8 - number <= cycle < 8 - number + 16 for cycle in range(24)], number


def test_the_page_shows_the_picture_and_its_verdict(browser, tmp_path):
    placement = mt5_small()
    page = tmp_path / "placement.html"
    text = placement_page(placement, "configs/pipelined-2ipu.json")
    page.write_text(text, encoding="utf-8")
    pixels = screenshot(browser, page, 1100, 1400, tmp_path / "page.png")
    picture = ElementTree.fromstring(text[text.index("<svg"):text.index("</svg>") + len("</svg>")])
    badge = next(group for group in picture.iter(f"{SVG}g") if group.get("data-verdict") == "does not fit")
    weights_fill = next(rect for rect in picture.iter(f"{SVG}rect") if rect.get("data-part") == "W").get("fill")
    colours = {pixel for row in pixels for pixel in row}
    assert rgb(badge.find(f"{SVG}rect").get("fill")) in colours  # the badge, DOES NOT FIT
    weights = sum(row.count(rgb(weights_fill)) for row in pixels)
    assert weights > 2000  # the bars of weights, drawn


def test_the_picture_is_the_size_it_says(browser, tmp_path):
    root, pixels = drawn(browser, tmp_path, documented_placement())
    assert (len(pixels[0]), len(pixels)) == (math.ceil(float(root.get("width"))), math.ceil(float(root.get("height"))))
    assert re.fullmatch(r"0 0 [\d.]+ [\d.]+", root.get("viewBox"))
    assert pixels[-1][-1] == (255, 255, 255)


def test_each_candidate_of_a_plan_is_drawn_in_its_verdict_s_colour_where_its_figures_put_it(browser, tmp_path):
    text = plan_svg(written_plan())
    path = tmp_path / "plan.svg"
    path.write_text(text, encoding="utf-8")
    root = ElementTree.fromstring(text)
    pixels = screenshot(browser, path, math.ceil(float(root.get("width"))), math.ceil(float(root.get("height"))),
                        tmp_path / "plan.png")
    # each verdict's colour, as the legend shows it: the marker before its name (a cross is only stroked)
    legend = {label.text: marker for marker, label in zip(root, list(root)[1:]) if label.get("data-role") == "legend"}
    colours = {verdict: rgb(legend[verdict].get("fill") if legend[verdict].get("fill") != "none"
                            else legend[verdict].get("stroke")) for verdict in ("fits", "tight", "does not fit")}
    assert len(set(colours.values())) == 3
    seen = 0
    for group in root.iter(f"{SVG}g"):
        if group.get("data-candidate") in (None, "reference") or group.get("data-verdict") not in colours:
            continue
        circle = group.find(f"{SVG}circle")
        if circle is not None:
            x, y = float(circle.get("cx")), float(circle.get("cy"))
        else:  # a triangle or a cross: its first corner, then its centre
            numbers = [float(n) for n in re.findall(r"-?[\d.]+", group.find(f"{SVG}path").get("d"))[:2]]
            x, y = numbers[0] + (6 * 0.9 if group.get("data-verdict") == "does not fit" else 0), \
                numbers[1] + (6 * 0.9 if group.get("data-verdict") == "does not fit" else 7)
        assert math.dist(pixels[round(y)][round(x)], colours[group.get("data-verdict")]) < 40, group.get(
            "data-candidate")
        seen += 1
    assert seen == 6
