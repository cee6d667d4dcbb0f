"""A module's own method compiled by torch.compile: the decoder's step, and a search's step.

- **Regional.** The loop of ``recur`` calls the compiled step once per target position, so
  compiling takes the same seconds whatever the sentences' length (compiling the unrolled loop
  grows with it: pytorch/pytorch#97155).
- **Shapes are symbolic** (``dynamic=True``): every batch's rows and source positions, and a
  search's as its sentences finish, share one compilation (torch compiles a size of 1, and grad
  mode on or off, apart).
- **The code as it is now.** torch guards the tensors a compilation read, not the methods of the
  classes it called, so an edit made after compiling would go unseen: the classes of the module
  and its submodules, with the functions each defines, key a compilation (``code_of``), and an
  edit is compiled afresh from a copy of the method's code (torch keeps compiled code per code
  object). While a forward hook is on any of the modules, the method runs eagerly.
- **Cost shown.** Each compilation is logged once at INFO with its time; inductor caches its work
  on disk (``TORCHINDUCTOR_CACHE_DIR``), so a later run of the same sizes takes a fraction of it.
- **Where nothing compiles** (no C++ compiler on a CPU, no Triton on a GPU, a Python torch cannot
  compile for), a compilation fails or autocast is on, the method runs eagerly after one warning
  that says why.
"""

import contextlib
import functools
import logging
import shutil
import sys
import time
import types
from typing import Callable, Dict, Optional, Set

import torch
from torch import nn

from . import setting

logger = logging.getLogger(__name__)


def code_of(module: nn.Module) -> tuple:
    """What compiled code of ``module``'s methods depends on besides its inputs: the class of each
    module it holds, and each function (or other attribute) those classes define."""
    classes = dict.fromkeys(
        cls
        for submodule in module.modules()
        for cls in type(submodule).__mro__
        if cls not in (nn.Module, object)
    )
    return tuple((cls, tuple(map(id, vars(cls).values()))) for cls in classes)


def hooked(module: nn.Module) -> Optional[str]:
    """The name of a submodule of ``module`` with a forward hook, if any ("" for itself)."""
    if nn.modules.module._global_forward_hooks or nn.modules.module._global_forward_pre_hooks:
        return "every module"
    return next(
        (
            name
            for name, submodule in module.named_modules()
            if submodule._forward_hooks or submodule._forward_pre_hooks
        ),
        None,
    )


@functools.lru_cache(maxsize=None)
def missing_compiler(device_type: str) -> Optional[str]:
    """Why nothing can compile for this kind of device here, if so."""
    if not torch._dynamo.is_dynamo_supported():
        return f"torch.compile does not support Python {sys.version_info[0]}.{sys.version_info[1]}"
    if device_type == "cuda":
        from torch.utils._triton import has_triton

        return None if has_triton() else "Triton, which torch.compile needs on a GPU, is missing"
    if device_type == "cpu":
        from torch._inductor import config

        compiler = config.cpp.cxx[-1]
        return None if shutil.which(compiler) else f"no C++ compiler ({compiler}) is installed"
    return f"torch.compile is not used on {device_type}"


def compiling_errors() -> tuple:
    """What torch raises where compiling (not the compiled code) fails; imported when needed."""
    import torch._inductor.exc

    return (torch._dynamo.exc.TorchDynamoException, torch._inductor.exc.InductorError)


def _graphs() -> int:
    """Graphs compiled in this process so far."""
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


class Compilation:
    """One method compiled, for one ``code_of`` its module."""

    _warned: Set[str] = set()  # the reasons to run eagerly already given, once each per process

    def __init__(self, function: Callable, constant_weights: bool):
        self.function = function
        copy = types.FunctionType(
            function.__code__.replace(),  # a code object of its own: compiled afresh
            function.__globals__,
            function.__name__,
            function.__defaults__,
            function.__closure__,
        )
        self.compiled = torch.compile(copy, dynamic=True)
        self.constant_weights = constant_weights
        self.failure: Optional[str] = None

    def __call__(self, module: nn.Module, *inputs):
        name = f"{type(module).__name__}.{self.function.__name__}"
        reason = self._eager_reason(module, inputs[0])
        if reason is not None:
            self._warn_once(f"{name} runs eagerly: {reason}")
            return self.function(module, *inputs)
        graphs, start = _graphs(), time.perf_counter()
        try:
            with self._settings():
                result = self.compiled(module, *inputs)
        except compiling_errors() as error:
            cause = getattr(error, "inner_exception", None) or error
            first = (str(cause).strip().splitlines() or [""])[0]
            self.failure = f"compiling it failed ({type(cause).__name__}: {first})"
            self._warn_once(f"{name} runs eagerly: {self.failure}")
            return self.function(module, *inputs)
        if _graphs() != graphs:
            what = ("with" if torch.is_grad_enabled() else "without") + " gradients"
            what += ", weights as constants" if self.constant_weights else ""
            seconds, rows = time.perf_counter() - start, inputs[0].size(0)
            logger.info("compiled %s (%s, first for %d rows) in %.1f s", name, what, rows, seconds)
        return result

    def _settings(self):
        """What torch reads as it traces, so held through the call: sizes that happen to be equal
        (the rows and the source positions of a batch, say) are not taken for one symbol, which
        the next batch would compile again ("duck sizing"); with the weights as constants,
        inductor's freezing, which folds them in and lays a product's weight out once for its
        library (oneDNN's on a CPU), in graphs without gradients."""
        from torch._inductor import config
        from torch.fx.experimental import _config as shapes

        settings = contextlib.ExitStack()
        settings.enter_context(shapes.patch(use_duck_shape=False))
        settings.enter_context(torch._dynamo.config.patch(specialize_float=True))
        if self.constant_weights:
            settings.enter_context(config.patch(freezing=True))
        return settings

    def _eager_reason(self, module: nn.Module, first_input: torch.Tensor) -> Optional[str]:
        hook = hooked(module)
        if hook is not None:
            return f"a forward hook is on {hook or type(module).__name__} (while it is there)"
        if torch.is_autocast_enabled(first_input.device.type):  # traced, the backward pass keeps
            # autocast where the alignment model turns it off: v_a's gradient underflows to 0
            return "under autocast (--amp) the alignment model's gradients would lose float32"
        return self.failure or missing_compiler(first_input.device.type)

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            logger.warning(message)


_COMPILATIONS: Dict[tuple, Compilation] = {}


def weights_of(module: nn.Module) -> tuple:
    """Where each parameter is and how often it was changed in place (constants hold old values)."""
    return tuple((p.data_ptr(), p._version) for p in module.parameters())


def compiled(method: Callable, constant_weights: bool = False) -> Callable:
    """``method``, a bound method of a module, compiled as its class defines it now, with its
    module's weights as constants if ``constant_weights`` (for a module that only infers: a
    weight changed since is compiled anew); the method itself where the fast path is plain, and
    within code being compiled (which holds it)."""
    if torch.compiler.is_compiling() or setting.eager():
        return method
    module, function = method.__self__, method.__func__
    key = (function, code_of(module), constant_weights and weights_of(module))
    compilation = _COMPILATIONS.get(key)
    if compilation is None:
        for stale in [k for k in _COMPILATIONS if k[:2] == key[:2] and k[2] and constant_weights]:
            del _COMPILATIONS[stale]  # with the constants of weights changed since
        compilation = _COMPILATIONS[key] = Compilation(function, constant_weights)
    return functools.partial(compilation, module)
