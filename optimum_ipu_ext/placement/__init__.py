"""Where a model's blocks, layers and parameters go on the IPUs of a pipeline, and how much memory each IPU needs,
found from the model's `config.json` and its checkpoint's header, without the weights, torch or an IPU.

The rules of optimum-graphcore's `parallelize()` as data (`rules`, `architectures`, and each family's parameters as
formulas of `config.json`: `bodies`), one generic layout over them (`layout`), the parameters (`parameters`), their
memory (`memory`), the balance of a pipeline (`balance`), the placement and its report (`placement`, `report`), its
JSON drawn as an SVG picture and an HTML page (`pictures`, `page`); the model read from a folder, the Hub or a config
(`sources`, `checkpoint`, `hub_model`).

May import: `hub`, `options`, `settings`, `sdk`, `errors`, `_version`.
"""
