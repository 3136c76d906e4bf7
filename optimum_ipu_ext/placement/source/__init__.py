"""Where a model comes from: a local folder, a Hub repository (`hub_model`: `config.json` and the safetensors headers
by range requests, cached by commit), a `PretrainedConfig` or a dict (`model`), and the safetensors headers and
indexes themselves (`checkpoint`).

May import: `hub`, `settings`, `errors`.
"""
