"""`report/plan_picture.py`'s plan picture and `page.py`'s plan page, on a plan written by hand in the shape
`ipu-config plan --json` gives (`candidates` best first, `pareto`, `reference`): a point per candidate at its speed
and its largest IPU's share of its memory, shaped by its verdict; the frontier through the candidates on it, in
order of memory; the best and the base config marked and named in the key; the reserve's and the memory's lines
where the shares say."""

import html.parser
import re
import xml.etree.ElementTree as ElementTree

import pytest

from optimum_ipu_ext.placement.report.page import plan_page
from optimum_ipu_ext.placement.report.plan_picture import plan_svg
from optimum_ipu_ext.placement.report.sentences import candidate_label
from optimum_ipu_ext.placement.report.tables import plan_table
from optimum_ipu_ext.placement.report.view import plan_view
from support import REPOSITORY
from support.placement_fixtures import documented_plan, plan_candidate as candidate, written_plan

SVG = "{http://www.w3.org/2000/svg}"
TITLE = "Plan: bert-large-uncased: BertForQuestionAnswering on 16 GC200 IPUs, global batch 2,048, sequence length 384"


@pytest.fixture(scope="module")
def plan():
    return written_plan()


def points(root):
    return {group.get("data-candidate"): group for group in root.iter(f"{SVG}g") if group.get("data-candidate")}


def texts(root, role):
    return [node.text for node in root.iter(f"{SVG}text") if node.get("data-role") == role]


def test_each_timed_candidate_and_the_reference_is_a_point_of_its_speed_and_share(plan):
    root = ElementTree.fromstring(plan_svg(plan))
    drawn = points(root)
    assert sorted(drawn) == ["0", "1", "2", "3", "4", "5", "7", "reference"]  # 6 has no time
    for name, group in drawn.items():
        source = plan["reference"] if name == "reference" else plan["candidates"][int(name)]
        assert float(group.get("data-share")) == source["largest_share"]
        assert group.get("data-samples") == f"{source['samples_per_second']:.1f}"
    assert [drawn[name].get("data-verdict") for name in ("0", "3", "4", "5")] == ["fits", "tight", "does not fit",
                                                                                  "does not run"]
    notes = [node.text for node in root.iter(f"{SVG}text")]
    assert "1 without a time (no activations counted) are not drawn." in notes


def test_points_sit_where_their_figures_put_them_on_the_axes(plan):
    root = ElementTree.fromstring(plan_svg(plan))
    lines = {line.get("data-line"): float(line.get("x1")) for line in root.iter(f"{SVG}line") if line.get("data-line")}
    circles = {name: next(group.iter(f"{SVG}circle")) for name, group in points(root).items()
               if group.get("data-verdict") == "fits"}
    zero = lines["memory"] - (lines["memory"] - lines["reserve"]) / 0.25  # the reserve leaves 75 %
    width = lines["memory"] - zero
    for name, circle in circles.items():
        share = plan["candidates"][int(name)]["largest_share"] if name != "reference" else 0.562
        assert float(circle.get("cx")) == pytest.approx(zero + share * width, abs=0.1)
    speeds = {name: float(circle.get("cy")) for name, circle in circles.items()}
    assert speeds["7"] > speeds["2"] > speeds["0"] > speeds["1"]  # faster is higher
    assert speeds["0"] - speeds["1"] == pytest.approx((speeds["2"] - speeds["0"]) * (352.9 - 330.2) / (330.2 - 301.5),
                                                      abs=0.2)


def test_the_frontier_runs_through_its_candidates_in_order_of_memory(plan):
    root = ElementTree.fromstring(plan_svg(plan))
    path = next(node for node in root.iter(f"{SVG}path") if node.get("data-role") == "frontier").get("d")
    corners = [tuple(map(float, corner.split(","))) for corner in re.findall(r"[ML]([\d.]+,[\d.]+)", path)]
    drawn = points(root)
    expected = [next(drawn[name].iter(f"{SVG}circle" if name != "3" else f"{SVG}path")) for name in
                ("7", "2", "0", "1")]
    assert [round(x, 1) for x, _ in corners[:4]] == [round(float(node.get("cx")), 1) for node in expected]
    assert len(corners) == 5  # and the tight one, last: the most memory


def test_the_best_and_graphcore_s_config_are_marked_and_named(plan):
    root = ElementTree.fromstring(plan_svg(plan))
    drawn = points(root)
    assert drawn["0"].get("data-best") == "true" and drawn["0"].find(f"{SVG}polygon") is not None
    assert [group.get("data-candidate") for group in drawn.values() if group.get("data-best")] == ["0"]
    assert len(drawn["reference"].findall(f"{SVG}path")) == 1  # its diamond
    assert texts(root, "tag") == ["1", "2", "3", "4", "8", "base"]
    key = texts(root, "key")
    assert key[0] == ("the best: 4 IPUs x 4, micro-batch 2, G 64, checkpoints, state off chip: 330.2 samples a "
                      "second, the largest IPU 56% of its memory")
    assert key[-1].startswith("the base config: 4 IPUs x 4, micro-batch 2, G 16, checkpoints, state off chip: 299.3")
    assert "the base config" in texts(root, "legend")


def test_a_plan_without_a_reference_or_candidates_still_draws(plan):
    root = ElementTree.fromstring(plan_svg(dict(plan, reference=None)))
    assert "reference" not in points(root) and "base" not in texts(root, "tag")
    assert "the base config" not in texts(root, "legend")
    empty = ElementTree.fromstring(plan_svg(dict(plan, candidates=[], pareto=[], reference=None)))
    assert texts(empty, "title") == ["Plan: bert-large-uncased: BertForQuestionAnswering"] and not points(empty)
    assert empty.get("aria-label") == TITLE


def label(found):
    """The few words that name a candidate, read as a plan's reports read it."""
    return candidate_label(plan_view(dict(written_plan(), candidates=[found], pareto=[])).candidates[0])


def test_a_candidate_in_a_few_words():
    assert label(candidate(8, 2, 1, 128, 0.3, "fits", 1.0, offchip=False, sharding=True)) == \
        "8 IPUs x 2, micro-batch 1, G 128, checkpoints, RTS"
    assert label(candidate(2, 1, 4, 8, 0.3, "fits", 1.0, recompute=False, offchip=False)) == \
        "2 IPUs x 1, micro-batch 4, G 8"


def test_the_candidates_table_lists_them_best_first_then_the_reference(plan):
    headers, rows = plan_table(plan_view(plan))
    assert headers[0] == "Rank" and headers[-1] == "Frontier"
    assert [row[0] for row in rows] == ["1", "2", "3", "4", "5", "6", "7", "8", "base"]
    assert rows[0] == ["1", "4", "4", "[3, 7, 7, 7]", "2", "64", "yes", "yes", "no", "56%", "fits", "330.2",
                       "0.0969", "80.0%", "yes"]
    assert rows[5][10] == "does not run" and rows[6][11:13] == ["-", "-"] and rows[-1][-1] == ""


class Loads(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.loads = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.loads += [(tag, name) for name, value in attrs if name in ("src", "href") or "url(http" in (value or "")]


def test_the_plan_page_holds_both_pictures_and_the_tables_and_loads_nothing(plan):
    page = plan_page(plan)
    parser = Loads()
    parser.feed(page)
    assert parser.tags.count("svg") == 2 and parser.tags.count("table") == 4 and not parser.loads
    assert "script" not in parser.tags
    assert f"<title>{TITLE}</title>" in page
    assert page.count("<tr>") + page.count("<tr class=") == 10 + 5 + 6 + 5  # candidates, IPUs, stages, time parts


def test_the_plan_in_the_docs_is_the_one_drawn_now():
    drawn_now = plan_svg(documented_plan())
    assert (REPOSITORY / "docs" / "images" / "plan.svg").read_text(encoding="utf-8") == drawn_now, \
        "docs/images/plan.svg is not the picture drawn now: run `make documents`"
