"""The classes users hold: `IPUConfig` (`configuration`, on optimum-graphcore's class where it imports, else on the
bundled one: `base`, `bundled_base`), `PlainIPUConfig` (`plain`, without transformers), and what both share on top
of the settings (`mixin`).

May import every layer but `cli`.
"""
