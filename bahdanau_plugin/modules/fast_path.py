"""Where a faster computation of the modules plugs in (the fast path: ``bahdanau_plugin/speed``).

The modules are the paper's equations written with ordinary torch layers, and that is what runs
unless a fast path is registered here. A fast path can offer two kinds of thing:

- a **leaf layer** that computes the same function as a torch layer: once a model is built, its
  build calls ``use_faster_layers_``, which puts the registered subclass in place of each such
  torch layer, holding the same parameters (as torch.ao.quantization swaps modules), as fairseq's
  ``LayerNorm`` gives apex's fused layer where apex is installed;
- a **fused form** of a module's own computation (``form``), given to the module when it is built
  and called through ``run``: ``run(form, plain, *inputs)`` is ``plain(*inputs)``, the module's
  own code, except where the form ``takes`` those inputs, and then the form computes it instead.
  A form takes nothing before it has checked that it computes what ``plain`` computes, so a
  change to the modules is never ignored: where the form no longer matches, it steps aside.

A fast path is asked when each model is built; set to plain, it offers nothing, and the model is
built of torch layers and the modules' code only.
"""

from dataclasses import dataclass
from typing import Callable, Dict, Optional

from torch import nn

# The fused forms a module may ask for.
RECURRENCE_WITH_ATTENTION = "recurrence with attention"  # ConditionalGRUDecoder.recur, RNNsearch
RECURRENCE_WITH_FIXED_CONTEXT = "recurrence with a fixed context"  # the same, RNNencdec
DEEP_OUTPUT = "deep output"  # MaxoutOutput.forward


@dataclass(frozen=True)
class FastPath:
    """What a fast path offers: leaf layers by the torch class whose function they compute (each
    with a ``holding(layer)`` that makes one holding that torch layer's parameters), fused forms by
    name (each a factory of ``nn.Module`` with ``takes`` and ``forward``), and whether it offers
    anything at all (asked at every build)."""

    layers: Dict[type, type]
    forms: Dict[str, Callable[[], nn.Module]]
    enabled: Callable[[], bool]


_registered: Optional[FastPath] = None


def register(fast_path: FastPath) -> None:
    global _registered
    _registered = fast_path


def _offered() -> Optional[FastPath]:
    return _registered if _registered is not None and _registered.enabled() else None


def use_faster_layers_(model: nn.Module) -> None:
    """Where a fast path is on, each torch layer of ``model`` whose class it offers a subclass for
    (the exact class: not a subclass of it) is replaced by one holding the same parameters: the
    same function, parameter names and state dict."""
    offered = _offered()
    if offered is None:
        return
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            faster = offered.layers.get(type(child))
            if faster is not None:
                setattr(parent, name, faster.holding(child))


def form(name: Optional[str]) -> Optional[nn.Module]:
    """A new fused form of that name for one module, or None where no fast path offers it."""
    offered = _offered()
    if name is None or offered is None or name not in offered.forms:
        return None
    return offered.forms[name]()


def run(fused: Optional[nn.Module], plain: Callable, *inputs):
    """``plain(*inputs)``, computed by ``fused`` where one is given and takes these inputs.
    ``plain`` is the module's own computation (one of its bound methods, or the module itself):
    what the form checks itself against, and where it reads the module's parameters."""
    if fused is not None and fused.takes(plain, *inputs):
        return fused(plain, *inputs)
    return plain(*inputs)
