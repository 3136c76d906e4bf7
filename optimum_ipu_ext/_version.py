"""The package's version, in a module of its own: the modules that write it (option files) import it from here, not
from the package, which imports them."""

__version__ = "0.1.0"
