"""The bundled preset, configs that set no extension setting (each built by upstream and by us), and the option
state of a build in a form two builds compare in."""


from .doubles import state

TEMP_FILE = "<temporary file>"

# Configs that set no extension attribute, each built by upstream and by us.
UPSTREAM_CONFIGS = {
    "defaults": {},
    "pipeline": {
        "layers_per_ipu": [3, 5],
        "matmul_proportion": [0.15, 0.3],
        "replication_factor": 4,
        "inference_replication_factor": 2,
        "gradient_accumulation_steps": 16,
        "device_iterations": 3,
        "inference_device_iterations": 5,
        "replicated_tensor_sharding": True,
        "optimizer_state_offchip": True,
        "output_mode": "sum",
        "seed": 42,
        "executable_cache_dir": "./cache",
        "auto_loss_scaling": True,
        "explicit_ir_inference": True,
        "enable_half_partials": False,
    },
    "inference-pipeline": {
        "layers_per_ipu": [-1, -1, -1, -1],
        "inference_layers_per_ipu": [6, 6],
        "matmul_proportion": 0.25,
        "inference_matmul_proportion": [0.1, 0.2],
        "executable_cache_dir": "disabled",
        "seed": 0,
    },
}


def comparable(opts) -> dict:
    """The option state, with the temporary initializer file name (drawn afresh by each build) masked."""
    result = state(opts)
    if "saveInitializersToFile" in result:
        result["saveInitializersToFile"] = TEMP_FILE
    return result
