"""Where a model's blocks, layers and parameters go on the IPUs of a pipeline, how much memory each IPU needs and how
long a step takes, found from the model's `config.json` and its checkpoint's header, without the weights, torch or an
IPU; and the fastest config that fits, searched.

Its parts, lowest first (a part imports its own and those before it):

- `hardware`: the constants of the IPUs and of the time model, with their sources;
- `source/`: where a model comes from (a folder, the Hub, a config), read as its `config.json` and safetensors
  headers;
- `models/`: the model families, each described once (layout, parameters, costs), and their registry;
- `estimate/`: what a family's description and a config's settings give: the layout, the parameters, the costs,
  the pipeline, the memory, the time, the one cost of an IPU, the balance of a split;
- `report/`: the reports of a placement and of a plan, each format from one typed view;
- `placement`: a placement as data (`Placement`);
- `placer`: the engine that places a model under a config, any split, and balances it (`Placer`, `model_placer()`);
- `calibration`: the time model's constants fitted on measured runs, each placed by the placer (the shipped runs, or
  a user's for `ipu-config calibrate`), and the share of a step each constant's term takes;
- `planning`: the search for the fastest build (`search()`), on the placer, and the builds worth measuring
  (`choose_trials()`).

May import: `hub`, `options`, `settings`, `sdk`, `errors`, `_version`.
"""
