"""Rewrites what is generated from the settings table: the README's attribute tables and method table, and the
shipped JSON Schema. Run after changing a row (`make documents`); tests fail until the files match the rows."""

from pathlib import Path

from optimum_ipu_ext.documents import SCHEMA_FILE, attribute_table, json_schema_string, method_table
from optimum_ipu_ext.settings import BASE_SETTINGS, EXTENSION_SETTINGS

ROOT = Path(__file__).resolve().parent.parent


def replace_tables(readme: str, tables) -> str:
    """`readme` with `tables`, found in order by their header line, replaced by their current text."""
    parts, rest = [], readme
    for table in tables:
        start = rest.index(table.split("\n", 1)[0] + "\n")
        end = rest.index("\n\n", start) + 1
        parts += [rest[:start], table]
        rest = rest[end:]
    return "".join(parts) + rest


if __name__ == "__main__":
    readme = ROOT / "README.md"
    text = replace_tables(readme.read_text(), [method_table()])
    readme.write_text(replace_tables(text, [attribute_table(BASE_SETTINGS), attribute_table(EXTENSION_SETTINGS)]))
    (ROOT / "optimum_ipu_ext" / SCHEMA_FILE).write_text(json_schema_string())
