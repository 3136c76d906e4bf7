"""The main job: load the seed's pipelined build as a config, save it, and show the options it builds.

Runs anywhere; where the Poplar SDK is installed it also builds the real `poptorch.Options`.

    python examples/quickstart.py [--replication-factor 4] [--out out/]
"""

import argparse
from pathlib import Path

from optimum_ipu_ext import IPUConfig, PoplarSDKNotFoundError

PRESET = Path(__file__).resolve().parents[1] / "configs" / "pipelined-2ipu.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replication-factor", type=int, default=4)
    parser.add_argument("--optimizer-state-offchip", action="store_true")
    parser.add_argument("--out", default="out")
    args = parser.parse_args()

    config = IPUConfig.from_pretrained(
        str(PRESET),
        replication_factor=args.replication_factor,
        optimizer_state_offchip=args.optimizer_state_offchip,
    )
    config.save_pretrained(args.out)
    print(f"Saved {Path(args.out) / IPUConfig.CONFIG_NAME}")
    print(f"Combined batch size = micro batch size x {config.batch_size_factor()}\n")
    print(config.options_plan())
    try:
        options = config.to_options()
    except PoplarSDKNotFoundError:
        print("\n(no Poplar SDK here: the plan above is what to_options() builds on an IPU host)")
    else:
        print(f"\nBuilt {type(options).__name__} for {options.replication_factor} replicas")


if __name__ == "__main__":
    main()
