"""Rewrites what is generated from the settings table: the README's two attribute tables and the shipped JSON
Schema. Run after changing a row (`make documents`); tests fail until the files match the rows."""

from pathlib import Path

from optimum_ipu_ext.documents import SCHEMA_FILE, attribute_table, json_schema_string
from optimum_ipu_ext.settings import BASE_SETTINGS, EXTENSION_SETTINGS

ROOT = Path(__file__).resolve().parent.parent
TABLE_HEADER = "| setting | type | default | allowed | drives | what it does |\n"


def replace_tables(readme: str) -> str:
    """`readme` with its attribute tables, in order base then extension, replaced by the generated ones."""
    parts, rest = [], readme
    for table in (attribute_table(BASE_SETTINGS), attribute_table(EXTENSION_SETTINGS)):
        start = rest.index(TABLE_HEADER)
        end = rest.index("\n\n", start) + 1
        parts += [rest[:start], table]
        rest = rest[end:]
    return "".join(parts) + rest


if __name__ == "__main__":
    readme = ROOT / "README.md"
    readme.write_text(replace_tables(readme.read_text()))
    (ROOT / "optimum_ipu_ext" / SCHEMA_FILE).write_text(json_schema_string())
