"""Between settings and `poptorch.Options`, both ways: a config's options plan (`build`), the settings that rebuild
given options (`readback`, `IPUConfig.from_options`), and configs from poptorch's option files
(`option_file_import`).

May import: `settings`, `recorder`, `sdk`, `errors`, `_version`.
"""
