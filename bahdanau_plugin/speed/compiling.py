"""A module's own method compiled by torch.compile: the decoder's step, and a search's step.

- **Regional, symbolic.** The step, called once per target position, compiled once per grad mode
  (``dynamic=True``; a size of 1 apart), whatever the length (unrolled: pytorch/pytorch#97155).
- **The code as it is now.** torch guards the tensors a compilation read, not the methods it
  called: the classes of the module and its submodules, what each defines and its functions' code
  (``code_of``: edited in place too), key a compilation, compiled afresh from a copy of the code.
- **Cost shown, and paid where it pays.** Each compilation is logged at INFO with its time,
  cached on disk. A CPU search compiles once it has run eagerly a while (``setting.py``).
- **Where nothing compiles** (no C++ compiler, no Triton, no cache folder), compiling fails (a
  graph break too), under autocast, a hook, a mode, a function for a method: eager, one warning.
"""

import contextlib
import contextvars
import functools
import logging
import operator
import platform
import shutil
import sys
import time
import types
import weakref
from typing import Callable, Dict, Optional

import torch
from torch import nn
from torch.utils import _python_dispatch
from torch.utils._device import DeviceContext

from . import setting

logger = logging.getLogger(__name__)
QUIETED = ("torch._subclasses.fake_tensor", "torch._dynamo.convert_frame")  # _settings: why
_EAGER = contextvars.ContextVar("within a method run eagerly first", default=False)
warn_once = functools.lru_cache(maxsize=None)(logger.warning)  # each reason once per process
_COMPILATIONS: Dict[tuple, "Compilation"] = {}  # by method, ``code_of`` its module, weights
NOT_A_METHOD = "{} runs eagerly: no method of its module (types.MethodType(f, module) compiles)"


class Identical(tuple):
    """Objects compared by identity, and held: a freed edit's function leaves no id to reuse."""

    def __hash__(self):
        return hash(tuple(map(id, self)))

    def __eq__(self, other):
        return len(self) == len(other) and all(map(operator.is_, self, other))


def code_of(module: nn.Module) -> tuple:
    """What compiled code of ``module``'s methods depends on besides its inputs: the class of each
    module it holds, each function (or other attribute) those classes define; its mode and its
    parameters' kinds, frozen too: torch would otherwise compile one code anew up to its limit."""
    classes = dict.fromkeys(c for m in module.modules() for c in type(m).__mro__[:-1])  # no object
    parameters = module.parameters()  # frozen or not: a recording differentiates those that are not
    kinds = (module.training, *((p.dtype, p.device, p.shape, p.requires_grad) for p in parameters))
    return (kinds, *((c, Identical(definitions(c))) for c in classes if c is not nn.Module))


def definitions(c: type) -> list:
    """What class ``c`` defines, and the code of each function (a property's, a static or class
    method's), which an edit in place replaces, keeping the function (IPython's autoreload)."""
    functions = [getattr(v, "fget", None) or getattr(v, "__func__", v) for v in vars(c).values()]
    return [*vars(c).values(), *(getattr(f, "__code__", None) for f in functions)]


def interposed(module: nn.Module) -> Optional[str]:
    """What would miss ``module``'s operations in compiled code or a replay, while it is there: a
    hook on a module of it, a function or dispatch mode (not torch's), a torch.func transform."""
    kinds = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
    named = module.named_modules()
    hooked = ["every module"] * any(getattr(nn.modules.module, "_global" + k) for k in kinds)
    hooked += [n or type(m).__name__ for n, m in named if any(map(vars(m).get, kinds))]
    if hooked:
        return f"a hook is on {hooked[0]} (while it is there)"
    functions = torch.overrides._get_current_function_mode_stack()
    dispatches = _python_dispatch._get_current_dispatch_mode_stack()
    modes = [type(m).__name__ for m in functions if not isinstance(m, DeviceContext)]
    modes += [type(m).__name__ for m in dispatches if not m.is_infra_mode()]
    transform = torch._C._functorch.peek_interpreter_stack()  # grad, vmap: torch compiles none
    modes += [f"torch.func.{transform.key().name.lower()}"] if transform else []
    return f"a mode is on ({modes[-1]}; while it is, as for a hook)" if modes else None


@functools.lru_cache(maxsize=None)
def missing_compiler(device_type: str) -> Optional[str]:
    """Why nothing can compile for this kind of device here, if so."""
    try:  # importing torch's compiler makes its cache folder (TORCHINDUCTOR_CACHE_DIR)
        if not torch._dynamo.is_dynamo_supported():
            return f"torch.compile does not support Python {platform.python_version()}"
    except OSError as error:
        return f"no cache folder for torch's compiler ({error}): set TORCHINDUCTOR_CACHE_DIR to one"
    if device_type == "cuda":
        from torch.utils._triton import has_triton

        return None if has_triton() else "Triton, which torch.compile needs on a GPU, is missing"
    if device_type == "cpu":
        from torch._inductor import config

        compiler = config.cpp.cxx[-1]
        return None if shutil.which(compiler) else f"no C++ compiler ({compiler}) is installed"
    return f"torch.compile is not used on {device_type}"


class Compilation:
    """One method compiled, for one ``code_of`` its module."""

    def __init__(self, function: Callable, constant_weights: bool, eager_first_on_cpu: bool):
        self.function, self.constant_weights = function, constant_weights
        self.eager_first_on_cpu, self.eager_seconds = eager_first_on_cpu, 0.0  # eagerly, first
        self.compiled = self.failure = None  # the compiled method; why compiling it failed
        f = function  # its code copied: what torch compiles from it is kept as long as the code is
        self.copy = types.FunctionType(
            f.__code__.replace(), f.__globals__, f.__name__, f.__defaults__, f.__closure__
        )

    def __call__(self, module: nn.Module, *inputs):
        cpu_search = self.eager_first_on_cpu and inputs[0].device.type == "cpu"
        if cpu_search and self.eager_seconds < setting.cpu_search_compile_after():
            start, eager = time.perf_counter(), _EAGER.set(True)  # the steps it calls too
            try:
                return self.function(module, *inputs)
            finally:
                _EAGER.reset(eager)
                self.eager_seconds += time.perf_counter() - start
        name, start = f"{type(module).__name__}.{self.function.__name__}", time.perf_counter()
        if (reason := self._eager_reason(module, inputs[0])) is None:
            import torch._inductor.exc  # where compiling fails, not the code: a graph break too
            from torch._inductor.codecache import PyCodeCache

            graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]  # compiled so far
            modules = len(PyCodeCache.modules)  # inductor's generated modules, loaded so far
            exc, InductorError = torch._dynamo.exc, torch._inductor.exc.InductorError
            try:
                with self._settings():
                    result = self.run_compiled(module, *inputs)
            except (exc.TorchDynamoException, exc.FailOnRecompileLimitHit, InductorError) as error:
                cause = getattr(error, "inner_exception", None) or error.__cause__ or error
                first = (str(cause).strip().splitlines() or [""])[0]
                reason = self.failure = f"compiling it failed ({type(cause).__name__}: {first})"
        if reason is not None:  # outside the handler, then warned: a bug in an edit raises alone
            result = self.function(module, *inputs)
            warn_once(f"{name} runs eagerly: {reason}")
        elif torch._dynamo.utils.counters["stats"]["unique_graphs"] != graphs:
            while self.constant_weights and len(PyCodeCache.modules) > modules:  # those it made,
                sys.modules.pop(PyCodeCache.modules.pop().__name__, None)  # with the weights: freed
            seconds, rows = time.perf_counter() - start, inputs[0].size(0)
            what = ("with" if torch.is_grad_enabled() else "without") + " gradients"
            what += ", weights as constants" * self.constant_weights + f", first for {rows} row"
            logger.info("compiled %s (%s%s) in %.1f s", name, what, "s" * (rows != 1), seconds)
        return result

    def run_compiled(self, module: nn.Module, *inputs):
        """The compiled method, made at its first call from a code object of its own."""
        if self.compiled is None:
            self.compiled = torch.compile(self.copy, dynamic=True, fullgraph=True)
        return self.compiled(module, *inputs)

    def _settings(self):
        """No "duck sizing"; inductor's freezing (oneDNN's layout) for constant weights alone."""
        from torch._inductor import config
        from torch.fx.experimental import _config as shapes

        settings = contextlib.ExitStack()  # kept out: fake tensors' traceback of a bug in an edit
        for quieted in map(logging.getLogger, QUIETED):  # (the eager run after the failure raises
            settings.callback(setattr, quieted, "disabled", quieted.disabled)  # it alone), dynamo's
            quieted.disabled = True  # lines as it hits its recompile limit (the warning says it)
        settings.enter_context(shapes.patch(use_duck_shape=False))
        settings.enter_context(torch._dynamo.config.patch(specialize_float=True))
        settings.enter_context(config.patch(freezing=self.constant_weights))
        return settings

    def _eager_reason(self, module: nn.Module, first_input: torch.Tensor) -> Optional[str]:
        if (reason := interposed(module)) is not None:
            return reason
        if torch.is_autocast_enabled(first_input.device.type):  # on in a traced backward pass
            return "under autocast (--amp) the alignment model's gradients would lose float32"
        return self.failure or missing_compiler(first_input.device.type)


def compiled(method: Callable, constant_weights=False, eager_first_on_cpu=False) -> Callable:
    """``method``, a bound method of a module, compiled as its class defines it now; with its
    module's weights as constants if ``constant_weights`` (compiled anew where one changed); on a
    CPU, if ``eager_first_on_cpu``, once it has run eagerly a while. The method itself where the
    fast path is plain, within code being compiled, and within a search run eagerly first."""
    if torch.compiler.is_compiling() or setting.eager() or _EAGER.get():
        return method
    if not isinstance(getattr(method, "__self__", None), nn.Module):  # a function set on a module
        warn_once(NOT_A_METHOD.format(getattr(method, "__qualname__", type(method).__name__)))
        return method
    module, function = method.__self__, method.__func__
    # weights as constants: its own (a weak reference equals another to its module while it lives),
    # each one's place and version; none under torch.func's transforms (wrapped: no place)
    constant_weights = constant_weights and torch._C._functorch.peek_interpreter_stack() is None
    tensors = constant_weights and (*module.parameters(), *module.buffers())  # buffers too
    places = constant_weights and tuple((t.data_ptr(), t._version) for t in tensors)
    weights = constant_weights and (weakref.ref(module), places)
    key = (function, code_of(module), weights)
    if key not in _COMPILATIONS:
        # dropped with what torch compiled of it: this module's before a change, a freed one's
        for stale in [k for k in _COMPILATIONS if weights and k[2] and k[2][0]() in (module, None)]:
            torch._dynamo.eval_frame.remove_from_cache(_COMPILATIONS.pop(stale).copy)
        _COMPILATIONS[key] = Compilation(function, constant_weights, eager_first_on_cpu)
    return functools.partial(_COMPILATIONS[key], module)
