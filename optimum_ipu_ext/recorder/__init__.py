"""The recorder: the package's own stand-in for the option API of `poptorch`, `popart` and `popdist` (Poplar SDK
3.4), so that a hand-written builder runs, and its options import, on a machine without the SDK.

Its `poptorch.Options` keeps the state poptorch 3.4 keeps, where poptorch keeps it (`toDict()`, the execution
strategy, the relaxed optimizer checks, ...), so `IPUConfig.from_options` reads it as it reads real options. Its
`popdist` is that of a process `poprun` did not launch. It never imports torch.

```python
from optimum_ipu_ext import PlainIPUConfig
from optimum_ipu_ext.recorder import run_builder, sdk_modules

with sdk_modules():  # the real SDK where poptorch imports, else the recorder
    options = run_builder("builders/training.py", "get_options", args={"replicas": 4})
    config = PlainIPUConfig.from_options(training=options, layers_per_ipu=[5, 7])
```

`ipu-config import` does the same from a terminal.

May import: `sdk`, `errors`, `_version`.
"""

import contextlib
import importlib
import importlib.util
import inspect
import os
import sys
from typing import Any, Dict, Iterator, List, Mapping, Optional

from ..errors import NO_SUCH_PATH, BuilderError
from .namespace import Namespace

__all__ = ["run_builder", "sdk_modules"]

_ABSENT = object()


def _recorder_modules() -> Dict[str, Any]:
    """{module name a builder imports: the recorder's module}."""
    from . import enums, options, popart, popdist, popdist_poptorch, poptorch

    popdist.poptorch = popdist_poptorch  # what `import popdist.poptorch` binds
    return {
        "poptorch": poptorch, "poptorch.enums": enums, "poptorch.options": options, "popart": popart,
        "popdist": popdist, "popdist.poptorch": popdist_poptorch,
    }


def _real_poptorch_imports() -> bool:
    if sys.modules.get("poptorch") is not None:
        return True
    if importlib.util.find_spec("poptorch") is None:
        return False
    try:
        importlib.import_module("poptorch")
    except ImportError:  # installed but unusable, e.g. the SDK not enabled
        return False
    return True


@contextlib.contextmanager
def sdk_modules() -> Iterator[bool]:
    """`poptorch`, `popart` and `popdist` for the block: the Poplar SDK's where poptorch imports (or is already
    imported), else the recorder's, put in `sys.modules` and taken out again after the block. Yields whether the
    recorder stands in.

    Run the builder and import its options in the same block: `from_options` rebuilds them with the same poptorch.
    """
    if _real_poptorch_imports():
        yield False
        return
    modules = _recorder_modules()
    saved = {name: sys.modules.get(name, _ABSENT) for name in modules}
    sys.modules.update(modules)
    try:
        yield True
    finally:
        _restore_modules(saved)


def run_builder(
    path: str, function: str, args: Optional[Mapping[str, Any]] = None, kwargs: Optional[Mapping[str, Any]] = None
) -> Any:
    """The `poptorch.Options` that the function `function` of the Python file `path` returns.

    `args` become the attributes of an `argparse.Namespace`, passed as the function's first argument (an empty one
    when `args` is `None` and the function has a first parameter without a default that `kwargs` does not give);
    `kwargs` are its keyword arguments. While the file loads and the function runs, the file's folder comes first
    on `sys.path`, so its own imports (its helper modules, its package) resolve from there; afterwards `sys.path`
    is as it was, and the modules loaded from that folder are forgotten.

    Raises:
        BuilderError: the file or function cannot be loaded, the function cannot take these arguments, raises,
            or returns something other than `poptorch.Options`. Where it raises after being given a namespace
            holding names of its parameters, the error says to pass them in `kwargs`.
    """
    builder = f"{path}:{function}"
    kwargs = dict(kwargs or {})
    with _importable_from(os.path.dirname(os.path.abspath(path))):
        call = getattr(_load(path, builder), function, None)
        if not inspect.isfunction(call):
            raise BuilderError(builder, f"cannot be called: {path} has no function {function!r}")
        positional = _positional(call, args, kwargs)
        try:
            inspect.signature(call).bind(*positional, **kwargs)
        except TypeError as error:
            raise BuilderError(builder, f"cannot take these arguments: {error}") from None
        try:
            options = call(*positional, **kwargs)
        except Exception as error:
            raise BuilderError(builder, f"raised {type(error).__name__}: {error}", _meant(call, positional)) from error
    poptorch = sys.modules.get("poptorch")
    if poptorch is None or not isinstance(options, poptorch.Options):
        raise BuilderError(builder, f"returned {type(options).__name__}, not poptorch.Options",
                           _meant(call, positional))
    return options


def _meant(call: Any, positional: List[Namespace]) -> List[str]:
    """Where `call` was given a namespace and read none of its attributes, its parameters (meant as keyword
    arguments); else none."""
    if not positional or positional[0].attributes_read:
        return []
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [name for name, parameter in inspect.signature(call).parameters.items() if parameter.kind in kinds]


def _positional(call: Any, args: Optional[Mapping[str, Any]], kwargs: Mapping[str, Any]) -> List[Namespace]:
    if args is not None:
        return [Namespace(**args)]
    first = next(iter(inspect.signature(call).parameters.values()), None)
    takes_one = (
        first is not None
        and first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD)
        and first.default is first.empty
        and first.name not in kwargs
    )
    return [Namespace()] if takes_one else []


def _load(path: str, builder: str) -> Any:
    """The module of the file `path`, executed (under its file name, as a script's sibling imports it)."""
    if not os.path.isfile(path):
        raise BuilderError(builder, f"cannot be loaded: {path}: {NO_SUCH_PATH}")
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise BuilderError(builder, f"cannot be loaded: {path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # what a dataclass or a pickle defined in it looks up while it runs
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise BuilderError(builder, f"raised {type(error).__name__} while loading: {error}") from error
    return module


@contextlib.contextmanager
def _importable_from(folder: str) -> Iterator[None]:
    """`folder` first on `sys.path` for the block; after it, `sys.path` as it was and the modules loaded from
    `folder` (the builder's own) out of `sys.modules`, any they replaced put back."""
    saved_path = list(sys.path)
    saved_modules = dict(sys.modules)
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        sys.path[:] = saved_path
        for name, module in list(sys.modules.items()):
            if saved_modules.get(name, _ABSENT) is not module and _within(module, folder):
                del sys.modules[name]
        _restore_modules({name: saved_modules.get(name, _ABSENT) for name in saved_modules if name not in sys.modules})


def _within(module: Any, folder: str) -> bool:
    location = getattr(module, "__file__", None)
    return location is not None and os.path.abspath(location).startswith(os.path.join(folder, ""))


def _restore_modules(saved: Dict[str, Any]) -> None:
    for name, module in saved.items():
        if module is _ABSENT:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = module
