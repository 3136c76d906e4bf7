"""Rewrites what is generated from the settings table: the attribute tables (docs/settings.md), the method table
(docs/methods.md) and the shipped JSON Schema; the time model's error on each measured run (docs/placement.md);
and the pictures of a placement and of a plan docs/placement.md shows (docs/images/placement.svg, plan.svg). Run
after changing a row, the drawing or the calibration (`make documents`); tests fail until the files match."""

import json
import sys
from pathlib import Path

from optimum_ipu_ext.config.calibration import errors_table
from optimum_ipu_ext.placement.calibration import SHIPPED, read_runs
from optimum_ipu_ext.settings.documents import SCHEMA_FILE, attribute_table, json_schema_string, method_table
from optimum_ipu_ext.settings.table import BASE_SETTINGS, EXTENSION_SETTINGS

ROOT = Path(__file__).resolve().parent.parent


def replace_tables(readme: str, tables) -> str:
    """`readme` with `tables`, found in order by their header line, replaced by their current text."""
    parts, rest = [], readme
    for table in tables:
        start = rest.index(table.split("\n", 1)[0] + "\n")
        end = rest.find("\n\n", start)
        end = len(rest) if end < 0 else end + 1
        parts += [rest[:start], table]
        rest = rest[end:]
    return "".join(parts) + rest


if __name__ == "__main__":
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    for page, tables in (("settings.md", [attribute_table(BASE_SETTINGS), attribute_table(EXTENSION_SETTINGS)]),
                         ("methods.md", [method_table()]),
                         ("placement.md", [errors_table(shipped, read_runs())])):
        path = ROOT / "docs" / page
        path.write_text(replace_tables(path.read_text(), tables))
    (ROOT / "optimum_ipu_ext" / SCHEMA_FILE).write_text(json_schema_string())
    sys.path.insert(0, str(ROOT / "tests"))
    from optimum_ipu_ext.placement.report.placement_picture import placement_svg
    from optimum_ipu_ext.placement.report.plan_picture import plan_svg
    from support.placement_fixtures import DOCUMENTED_CONFIG, documented_placement, documented_plan

    (ROOT / "docs" / "images").mkdir(exist_ok=True)
    (ROOT / "docs" / "images" / "placement.svg").write_text(placement_svg(documented_placement(), DOCUMENTED_CONFIG))
    (ROOT / "docs" / "images" / "plan.svg").write_text(plan_svg(documented_plan()))
