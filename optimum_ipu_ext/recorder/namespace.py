"""The namespace a builder is given as its first argument (`ipu-config import --arg`)."""

import argparse


class Namespace(argparse.Namespace):
    """An `argparse.Namespace` that notes whether the builder read any of its attributes, that is, took it for
    the parsed arguments of a script; a builder that did not (`def get_options(replicas)`) wanted its parameters
    as keyword arguments."""

    __slots__ = ("attributes_read",)  # a slot, not an attribute: `vars(namespace)` holds the arguments only

    def __init__(self, **arguments):
        super().__init__(**arguments)
        self.attributes_read = False

    def __getattribute__(self, name: str):
        if not name.startswith("_") and name != "attributes_read":
            object.__setattr__(self, "attributes_read", True)
        return super().__getattribute__(name)
