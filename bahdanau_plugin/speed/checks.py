"""A fused form computes in a module's place only where it computes what the module's own code
computes: checked once per model (and training mode), on the model's device, on random inputs and
parameters of the model's sizes, values and gradients.

The module's code is what a researcher edits (``bahdanau_plugin/modules``). The check runs that
code, as the model's class defines it when the check runs, and the fused form, on a copy of the
module whose parameters are random (drawn with a generator of its own: the process's random
stream is untouched), and compares every result with ``measured_choice.first_difference``. Where
they differ, or the form fails on the module, one warning names the part of the paper that no
longer matches and says that it runs as plain PyTorch, and the form steps aside for that model.
Random parameters, not the model's: at the paper's initialization v_a = 0 and attention is uniform,
so an edit to the energies would not show in the model's own values until it had trained.

A fused form does not call the modules it computes for, so their forward hooks would not run:
where one of them has a hook (a researcher recording or changing the attention, say), the form
steps aside while it is there, with a warning too (``FusedForm``).
"""

import copy
import logging
from typing import Callable, Iterable, Optional, Sequence, Set, Tuple

import torch
from torch import Tensor, nn

from ..modules.beam_rows import SENTENCES
from .cpu.measured_choice import CHOOSER, RELATIVE_TOLERANCE, first_difference
from .cuda.graphs import tf32_in_products

logger = logging.getLogger(__name__)

# Each random draw of a check has a seed of its own, so that no two tensors share values.
PARAMETERS, INPUTS, DRIVES, WEIGHTING = range(4)
# The probe batch: sentences, source positions (the first sentence left-padded by one), target
# positions. Small: the check compares formulas, which do not depend on the batch's size.
SENTENCES_PER_PROBE, SOURCE_POSITIONS, TARGET_POSITIONS = 2, 4, 3
# A module's hooks, which a copy made for a check does without: they are the user's, on the model.
HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")

# What a comparison gives: (label, the fused form's result, the module's result, the tolerance
# relative to the result's scale: ``first_difference``), in the order they are computed, so that
# the first difference names where the two part.
Comparison = Iterable[Tuple[str, Optional[Tensor], Optional[Tensor], float]]
# In half precision (and float32 products in TF32) two computations of one formula differ by a few
# roundings: a few of its steps (2^-7 in bfloat16, 2^-10 in TF32), where an edit to a formula
# differs by its own size.
ROUNDINGS = 16
TF32_STEP = 2.0**-10


def tolerance(dtype: torch.dtype, device: torch.device = torch.device("cpu")) -> float:
    """How far apart two results computed in ``dtype`` on ``device`` may be, relative to their
    scale."""
    if dtype == torch.float32 and device.type == "cuda" and tf32_in_products():
        return ROUNDINGS * TF32_STEP
    if dtype in (torch.float32, torch.float64):
        return RELATIVE_TOLERANCE
    return ROUNDINGS * torch.finfo(dtype).eps


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(
    *shape: int,
    generator: torch.Generator,
    like: Optional[Tensor] = None,
    requires_grad: bool = False,
) -> Tensor:
    """A check's random tensor, drawn on the CPU (the same values on any device, whatever torch's
    default), on the device and in the precision of ``like`` if given."""
    tensor = torch.randn(*shape, generator=generator, device="cpu")
    if like is not None:
        tensor = tensor.to(device=like.device, dtype=like.dtype)
    return tensor.requires_grad_(requires_grad)


def random_copy(
    module: nn.Module, shared: Iterable[str] = (), dtype: Optional[torch.dtype] = None
) -> nn.Module:
    """A copy of ``module`` whose parameters are random, each weight scaled by its fan-in so that
    every pre-activation is of order 1 (neither saturated nor vanishing), each bias half of that,
    and which has none of the module's hooks; converted to ``dtype`` if given (as the model's
    own conversions do: the alignment model stays float32 in half precision). The submodules named
    in ``shared`` (large layers the check does not read) and those without parameters (the fused
    forms) are the module's own, not copied."""
    kept = {name: getattr(module, name) for name in shared if hasattr(module, name)}
    kept.update(
        (name, child)
        for name, child in module.named_children()
        if next(child.parameters(), None) is None
    )
    copied = copy.deepcopy(module, memo={id(child): child for child in kept.values()})
    shared = {id(m) for child in kept.values() for m in child.modules()}
    for copied_module in copied.modules():
        if id(copied_module) not in shared:
            for hooks in HOOKS:
                getattr(copied_module, hooks).clear()
    if dtype is not None:
        for name, child in copied.named_children():
            if name not in kept:
                child.to(dtype)
    own = {id(p) for child in kept.values() for p in child.parameters()}
    draw = generator(PARAMETERS)
    with torch.no_grad():
        for parameter in copied.parameters():
            if id(parameter) not in own:
                fan_in = parameter.size(-1) if parameter.dim() > 1 else 4
                parameter.copy_(randn(*parameter.shape, generator=draw) / fan_in**0.5)
    return copied


def probe_encoder_out(encoder_out, like: Optional[Tensor] = None) -> dict:
    """Random annotations h_j and summary, of the sizes of ``encoder_out``'s, for the probe
    batch (on the device and in the precision of ``like``, else of ``encoder_out``'s); fairseq's
    left padding in the first sentence."""
    like = encoder_out["annotations"] if like is None else like
    draw = generator(INPUTS)
    padding_mask = torch.zeros(
        SENTENCES_PER_PROBE, SOURCE_POSITIONS, dtype=torch.bool, device=like.device
    )
    padding_mask[0, 0] = True
    shape = (SENTENCES_PER_PROBE, SOURCE_POSITIONS, encoder_out["annotations"].size(-1))
    summary_size = encoder_out["summary"].size(-1)
    return {
        "annotations": randn(*shape, generator=draw, like=like, requires_grad=True),
        "padding_mask": padding_mask,
        "summary": randn(
            SENTENCES_PER_PROBE, summary_size, generator=draw, like=like, requires_grad=True
        ),
        SENTENCES: torch.arange(SENTENCES_PER_PROBE, device=like.device),
    }


def matches(subject: str, fused_form: str, compare: Callable[[], Comparison], part_of) -> bool:
    """Whether ``compare()``'s results agree; if not, the warning: ``subject`` (the module), the
    part where they first differ (``part_of(label)``), and that ``fused_form`` steps aside."""
    try:
        with CHOOSER.checking(), torch.inference_mode(False):
            labels, fused, plain, tolerances = zip(*compare())
    except Exception as error:  # the module no longer has what the form reads, say
        logger.warning(
            "%s: the fast path's %s fails on it (%s: %s): it runs as plain PyTorch",
            subject,
            fused_form,
            type(error).__name__,
            error,
        )
        return False
    difference = first_difference(fused, plain, labels, tolerances)
    if difference is None:
        return True
    label, how = difference
    logger.warning(
        "%s: %s no longer matches the fast path's %s (%s %s): it runs as plain PyTorch",
        subject,
        part_of(label),
        fused_form,
        label,
        how,
    )
    return False


class FusedForm(nn.Module):
    """What every fused form shares: for a module, it steps aside while a module whose calls it
    computes (``bypassed``, dotted names; "" for the module itself) has a forward hook, and for
    good once its check against the module's own code fails. A module without parameters: the
    model's state dict is unchanged."""

    name = "fused form"
    bypassed: Sequence[str] = ()

    def __init__(self):
        super().__init__()
        self._checked: Set[bool] = set()  # the training modes its checks passed in
        self._failed = False
        self._warned_of_hooks = False

    def allowed(self, module: nn.Module, compare: Callable[[], Comparison], part_of) -> bool:
        """Whether the form may compute for ``module`` now; the check, with ``compare`` and
        ``part_of`` (``matches``), is made at the first call in each training mode (a module's own
        dropout, say, runs only in one)."""
        if self._failed:
            return False
        hooked = next((name for name in self.bypassed if _has_hooks(module, name)), None)
        if hooked is not None:
            if not self._warned_of_hooks:
                logger.warning(
                    "%s: the fast path's %s does not call %s, which has a forward hook: it runs "
                    "as plain PyTorch while the hook is there",
                    type(module).__name__,
                    self.name,
                    hooked or type(module).__name__,
                )
                self._warned_of_hooks = True
            return False
        if module.training not in self._checked:
            if not matches(type(module).__name__, self.name, compare, part_of):
                self._failed = True
                return False
            self._checked.add(module.training)
        return True


def _has_hooks(module: nn.Module, name: str) -> bool:
    submodule = module.get_submodule(name)
    return bool(submodule._forward_hooks or submodule._forward_pre_hooks)


def gradients(outputs, wrt) -> Tuple[Optional[Tensor], ...]:
    """The gradients of a fixed random weighting of ``outputs`` (None where one does not reach)."""
    draw = generator(WEIGHTING)
    loss = sum(
        (output * randn(*output.shape, generator=draw, like=output)).sum() for output in outputs
    )
    return torch.autograd.grad(loss, wrt, allow_unused=True)
