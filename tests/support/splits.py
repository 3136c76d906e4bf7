"""Every split of layers over IPUs: what the brute forces the balance is checked against go through."""

import itertools


def compositions(layers, ipus):
    """Every split of `layers` over `ipus` IPUs, each taking 0 or more."""
    return [[b - a for a, b in zip((0, *cut), (*cut, layers))]
            for cut in itertools.combinations_with_replacement(range(layers + 1), ipus - 1)]
