"""Hypothesis strategies of IPU config settings: optimum-graphcore's in every combination its build handles, and
this package's too, with the profile the property tests run under."""

from hypothesis import HealthCheck, settings, strategies as st

from optimum_ipu_ext import IPUConfig
from optimum_ipu_ext.settings.rules import derive_base_settings
from optimum_ipu_ext.settings.table import BASE_SETTINGS, POPART_KEYS_WITH_A_SETTING, POPTORCH_OPTION_KEYS

# Deterministic and bounded, so that CI runs the same examples every time in a few seconds.
PROFILE = settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

PROPORTION = st.floats(min_value=0, max_value=1, allow_nan=False).map(lambda number: round(number, 3))
NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._", min_size=1, max_size=12)
# PopART option values as poptorch's backend parses them: booleans, unsigned integers, floats, strings
OPTION_SCALAR = st.one_of(st.booleans(), st.integers(0, 10**6), PROPORTION, NAME)


@st.composite
def upstream_settings(draw) -> dict:
    """Settings of optimum-graphcore's IPUConfig, in every combination its build handles."""
    ipus = draw(st.integers(1, 4))
    counts = st.lists(st.integers(-1, 6), min_size=ipus, max_size=ipus).filter(lambda counts: -1 not in counts)
    layers = draw(st.one_of(counts, st.just([-1] * ipus)))
    generated = {
        "layers_per_ipu": layers,
        "ipus_per_replica": draw(st.sampled_from([ipus, None])) if -1 not in layers or ipus == 1 else ipus,
        "matmul_proportion": draw(st.one_of(PROPORTION, st.lists(PROPORTION, min_size=ipus, max_size=ipus))),
        "replication_factor": draw(st.integers(1, 8)),
        "inference_replication_factor": draw(st.integers(1, 8)),
        "gradient_accumulation_steps": draw(st.integers(1, 64)),
        "device_iterations": draw(st.integers(1, 16)),
        "inference_device_iterations": draw(st.integers(1, 16)),
        "output_mode": draw(st.sampled_from(["all", "sum", "final"])),  # "default": toDict() refuses to show it
        "seed": draw(st.one_of(st.none(), st.integers(0, 2**31))),
        "executable_cache_dir": draw(st.sampled_from(["", "disabled", "./exec"])),
        "optimizer_state_offchip": draw(st.booleans()),
        "replicated_tensor_sharding": draw(st.booleans()),
        "enable_half_partials": draw(st.booleans()),
        "auto_loss_scaling": draw(st.booleans()),
        "explicit_ir_inference": draw(st.booleans()),
    }
    if generated["ipus_per_replica"] is None:
        del generated["ipus_per_replica"]
    if draw(st.booleans()):
        inference_ipus = draw(st.integers(1, 4))
        generated["inference_layers_per_ipu"] = draw(st.lists(st.integers(1, 6), min_size=inference_ipus,
                                                              max_size=inference_ipus))
        # a falsy inference value (0.0) means "as in training" to both bases, as to optimum-graphcore
        proportion = PROPORTION.filter(bool)
        generated["inference_matmul_proportion"] = draw(
            st.one_of(proportion, st.lists(PROPORTION, min_size=inference_ipus, max_size=inference_ipus))
        )
    return generated


def choice_or_null(name):
    setting = IPUConfig.SETTINGS[name]
    choices = st.sampled_from(sorted(setting.choices))
    nullable = setting.default is None or "Optional" in str(setting.annotation)
    return st.one_of(st.none(), choices) if nullable else choices


@st.composite
def full_settings(draw) -> dict:
    """Upstream's settings and this package's, any of them left out."""
    generated = draw(upstream_settings())
    ipus = generated.get("ipus_per_replica") or len(generated["layers_per_ipu"])
    extension = {
        "auto_round_num_ipus": st.booleans(),
        "stochastic_rounding": st.booleans(),
        "save_initializers_to_file": st.booleans(),
        "accumulation_and_replication_reduction_type": st.sampled_from(["sum", "mean"]),
        "recomputation_mode": choice_or_null("recomputation_mode"),
        "accumulate_outer_fragment_schedule": choice_or_null("accumulate_outer_fragment_schedule"),
        "subgraph_copying_strategy": choice_or_null("subgraph_copying_strategy"),
        "disable_grad_accumulation_tensor_streams": st.one_of(st.none(), st.booleans()),
        "schedule_non_weight_update_gradient_consumers_early": st.one_of(st.none(), st.booleans()),
        "accumulate_outer_fragment_excluded_virtual_graphs": st.one_of(
            st.none(), st.lists(st.integers(0, ipus - 1), max_size=ipus, unique=True)
        ),
        "outline_threshold": st.one_of(st.none(), st.floats(-100, 100, allow_nan=False)),
        "popart_patterns": st.one_of(st.none(), st.dictionaries(NAME, st.booleans(), max_size=3)),
        "engine_options": st.one_of(st.none(), st.dictionaries(NAME, NAME, max_size=3)),
        "popart_options": st.dictionaries(
            NAME.filter(lambda key: key not in POPART_KEYS_WITH_A_SETTING and key not in POPTORCH_OPTION_KEYS),
            st.one_of(OPTION_SCALAR, st.lists(NAME, max_size=3)),
            max_size=3,
        ),
        "inference_output_mode": st.sampled_from(["all", "sum", "final"]),
        "inference_stochastic_rounding": st.one_of(st.none(), st.booleans()),
        "zero_seed": st.booleans(),
        "activation_location": LOCATION,
        "weight_location": LOCATION,
        "accumulator_location": LOCATION,
        "num_io_tiles": st.one_of(st.none(), st.integers(16, 96).map(lambda half: 2 * half)),
        "broadcast_buffers": st.one_of(st.none(), st.booleans()),
        "input_replica_grouping": st.one_of(st.none(), st.fixed_dictionaries({
            "size": st.sampled_from([size for size in (1, 2, 4) if generated["replication_factor"] % size == 0]),
            "type": st.sampled_from(["consecutive", "orthogonal"]),
        })),
        "connection_type": choice_or_null("connection_type"),
        "sync_pattern": choice_or_null("sync_pattern"),
        "mean_reduction_strategy": choice_or_null("mean_reduction_strategy"),
        "relax_optimizer_attributes_checks": st.one_of(st.none(), st.booleans()),
        "disable_module_namescope": st.booleans(),
    }
    for name in draw(st.sets(st.sampled_from(sorted(extension)))):
        generated[name] = draw(extension[name])
    for name in draw(st.sets(st.sampled_from(NULLABLE_BASE_SETTINGS))):
        generated[name] = None  # no call
    if generated.get("optimizer_state_offchip", False) is None:
        generated["replicated_tensor_sharding"] = False
        generated["optimizer_location"] = draw(LOCATION)
    if generated.get("seed"):
        generated["zero_seed"] = False
    if draw(st.booleans()):
        generated.update(draw(strategy_settings()))
    if not reserves_what_it_asks(generated):
        # poptorch refuses the others to run (tests/config/test_core.py pins the rule)
        generated["auto_round_num_ipus"] = True
    return generated


def reserves_what_it_asks(generated: dict) -> bool:
    """Whether poptorch runs both builds of `generated` as they ask: it rounds IPUs up, or each build's replicas x
    IPUs per replica is a power of two."""
    if generated.get("auto_round_num_ipus", True) or generated.get("connection_type") == "never":
        return True
    given = {name: value for name, value in generated.items() if name in BASE_SETTINGS}
    values = derive_base_settings({name: value for name, value in given.items() if value is not None})
    counts = [values[f"{mode}replication_factor"] * values[f"{mode}ipus_per_replica"] for mode in ("", "inference_")]
    return all(count & (count - 1) == 0 for count in counts)


STRATEGY = choice_or_null("execution_strategy")


@st.composite
def stages(draw, count: int) -> list:
    """`count` stages, of one or two blocks each, each block in one stage, some placed on an IPU."""
    blocks = iter(draw(st.permutations("abcdefgh")))
    made = []
    for _ in range(count):
        stage = {"blocks": [next(blocks) for _ in range(draw(st.integers(1, 2)))]}
        if draw(st.booleans()):
            stage["ipu"] = draw(st.integers(0, 3))
        made.append(stage)
    return made


@st.composite
def strategy_settings(draw) -> dict:
    """The execution strategy settings, in the combinations the rules between them allow."""
    generated = {"execution_strategy": draw(STRATEGY), "inference_execution_strategy": draw(STRATEGY)}
    chosen = set(generated.values())
    generated["auto_stage"] = draw(choice_or_null("auto_stage"))
    if chosen & {"pipelined", "sharded"}:
        generated["execution_stages"] = draw(st.one_of(st.none(), st.integers(1, 3).flatmap(stages)))
    if chosen & {"serial_phased", "parallel_phased"}:
        sizes = draw(st.lists(st.integers(1, 2), min_size=1, max_size=2))
        flat = iter(draw(stages(sum(sizes))))
        generated["execution_phases"] = [[next(flat) for _ in range(size)] for size in sizes]
        generated["separate_backward_phase"] = draw(st.one_of(st.none(), st.booleans()))
        liveness = choice_or_null("tensors_liveness")
        if "parallel_phased" in chosen:
            liveness = st.sampled_from([None, "always_live", "off_chip_after_fwd"])
        generated["tensors_liveness"] = draw(liveness)
    return generated


LOCATION = st.one_of(st.none(), st.fixed_dictionaries({}, optional={
    "useOnChipStorage": st.booleans(),
    "useReplicatedTensorSharding": st.booleans(),
    "useIOTilesToLoad": st.booleans(),
    "useIOTilesToStore": st.booleans(),
    "minElementsForOffChip": st.integers(0, 10**6),
    "minElementsForReplicatedTensorSharding": st.integers(0, 10**6),
}))
# optimum-graphcore's settings that make a call, as `null` (no call) takes them
NULLABLE_BASE_SETTINGS = ["matmul_proportion", "optimizer_state_offchip", "enable_half_partials", "output_mode",
                          "auto_loss_scaling", "executable_cache_dir", "explicit_ir_inference"]
