"""Keys that earlier optimum-graphcore releases wrote to `ipu_config.json` and 0.7.1 no longer accepts.

A config carrying one still loads: the key is dropped with a warning saying what replaced it.
"""

LEGACY_KEYS = {
    "random_seed": "renamed `seed` in optimum-graphcore 0.2.1.",
    "compile_only": "since optimum-graphcore 0.2.1 it is the `compile_only` argument of `to_options()`.",
    "synthetic_data": "removed in optimum-graphcore 0.2.2; nothing replaces it.",
    "use_popdist": "removed in optimum-graphcore 0.4.0; a launch under poprun is detected by PopDist itself.",
    "profile_dir": "removed in optimum-graphcore 0.4.0; set `autoReport.directory` in the POPLAR_ENGINE_OPTIONS "
    "environment variable instead.",
    "decompose_grad_sum": "removed in optimum-graphcore 0.4.0, leaving PopART's default; "
    '`popart_options={"decomposeGradSum": true}` sets it.',
    "enable_half_first_order_momentum": "deprecated in optimum-graphcore 0.4.0; the trainer accumulates momentum "
    "in float16 unless the `--fp32` training argument is given.",
    "sharded_execution_for_inference": "deprecated in optimum-graphcore 0.4.0; inference uses "
    "`inference_execution_strategy` (default: sharded).",
    "_mode": "written by optimum-graphcore 0.6.1; `train()` and `eval()` choose the mode.",
}
