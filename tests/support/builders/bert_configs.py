"""Two configurations of Graphcore's BERT application as its command line parses them (one memory proportion per
IPU): pre-training BERT-Large at sequence length 128, and SQuAD with BERT-Base at 384. Plain data, for
`bert_options.get_options`; it imports nothing of the SDK."""

PRETRAINING_LARGE_128 = dict(
    use_popdist=False, compile_only=False, replication_factor=4, ipus_per_replica=4, device_iterations=1,
    gradient_accumulation=2048, auto_loss_scaling=False, random_seed=5, optimizer_state_offchip=True,
    replicated_tensor_sharding=True, matmul_proportion=[0.15, 0.25, 0.25, 0.25], executable_cache_dir="",
    enable_half_partials=True, synthetic_data=False, profile_dir=None,
)
LAYERS_PER_IPU_LARGE = [3, 7, 7, 7]

SQUAD_BASE_384 = dict(
    PRETRAINING_LARGE_128, device_iterations=2, gradient_accumulation=8, random_seed=1984,
    optimizer_state_offchip=False, matmul_proportion=[0.25] * 4, executable_cache_dir="./exe_cache",
)
LAYERS_PER_IPU_BASE = [0, 4, 4, 4]
