"""The option store behind every ``poptorch`` options object.

Behaviour kept from poptorch 3.4's ``OptionsDict``: the keys given to the
constructor are the only public options; ``set`` rejects unknown keys and values
whose type differs from the current one (``AssertionError``); ``createOrSet`` may
add keys; public attributes read and write options; private attributes must all
exist before the option values do; ``toDict`` merges the values into one dict.
Once ``_freeze()`` has run (poptorch's ``PoplarExecutor`` freezes the options a model
is built with, ``_poplar_executor.py``), every change raises
``AttributeError("Can't modify frozen Options")``; a deep copy (``clone()``) is not frozen.
"""
import copy

# the frames left out of source locations when the IR is printed, as poptorch 3.4 starts them
default_source_location_excludes = ["install/poptorch", "site-packages/torch", "site-packages/poptorch"]


class OptionsDict:
    """Options with a fixed set of keys, type-checked against their current values."""

    def __init__(self, **default_values):
        self._is_frozen = False
        self._values = default_values

    def set(self, **kwargs):
        self.checkIsFrozen()
        for option, value in kwargs.items():
            if option not in self._values:
                raise AssertionError(
                    f"Invalid option {option!r} (value {value!r}) for {type(self).__name__}; "
                    f"valid options are {sorted(self._values)}"
                )
            expected = type(self._values[option])
            if not isinstance(value, expected):
                raise AssertionError(
                    f"Option {option!r} of {type(self).__name__} got {value!r} of type "
                    f"{type(value).__name__}; expected {expected.__name__}"
                )
            self._values[option] = value

    def createOrSet(self, **kwargs):
        self.checkIsFrozen()
        for option, value in kwargs.items():
            if option in self._values:
                self.set(**{option: value})
            else:
                self._values[option] = value

    def exists(self, option):
        return option in self._values

    def deleteIfExists(self, option):
        self._values.pop(option, None)

    def checkIsFrozen(self, option=None):
        if option != "_is_frozen" and self.__dict__.get("_is_frozen"):
            raise AttributeError("Can't modify frozen Options")

    def _changeFreezeState(self, new_state):
        self._is_frozen = new_state
        for value in list(self.__dict__.values()):
            if hasattr(value, "_is_frozen"):
                value._is_frozen = new_state

    def _freeze(self):
        self._changeFreezeState(True)

    def _unfreeze(self):
        self._changeFreezeState(False)

    def __deepcopy__(self, memory):
        copied = type(self).__new__(type(self))
        memory[id(self)] = copied
        for key, value in self.__dict__.items():
            object.__setattr__(copied, key, False if key == "_is_frozen" else copy.deepcopy(value, memory))
        return copied

    def update(self, other):
        shared = set(self._values).intersection(other)
        if shared:
            raise AssertionError(
                f"Can't merge dictionaries, they have keys in common: {sorted(shared, key=str)}"
            )
        other.update(self._values)
        return other

    def toDict(self):
        return self.update({})

    def __call__(self, option):
        return getattr(self, option)

    def __setattr__(self, name, value):
        self.checkIsFrozen(name)
        if not name.startswith("_"):
            self.set(**{name: value})
            return
        if "_values" in self.__dict__ and name not in self.__dict__:
            raise AttributeError(
                f"Invalid private attribute {name!r} for {type(self).__name__}: private attributes "
                f"must be created before the option values; existing ones are {list(self.__dict__)}"
            )
        object.__setattr__(self, name, value)

    def __getattr__(self, name):
        values = self.__dict__.get("_values", {})
        if name.startswith("_") or name not in values:
            raise AttributeError(
                f"{type(self).__name__} has no attribute or option {name!r}; options are {sorted(values)}"
            )
        return values[name]


class ProgressBar:
    """Stands in for the compilation progress callback that ``Options.toDict`` hands to the compiler."""

    def __call__(self, progress: int, total: int) -> None:
        """Called by the compiler as compilation progresses; the double draws nothing."""
