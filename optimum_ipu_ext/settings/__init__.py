"""What an IPU config holds: one row per setting (`table`; a row is a `Setting` with its `Call`, in `schema`), the
keys of earlier releases (`legacy`) and the reading of any earlier release's file in 0.7.1's terms (`migration`), the
two builds and the settings each reads (`mode`), the rules between settings (`rules`), where a named config is
(`sources`: a local path, a preset, the Hub), the JSON file (`files`) and what is generated from the table
(`documents`: the JSON Schema and the reference tables).

Plain Python: no transformers, torch or Hub. May import: `sdk`, `errors`, `_version`.
"""
