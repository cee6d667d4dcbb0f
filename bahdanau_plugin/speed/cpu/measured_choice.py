"""The fast path's one rule for its choices: time both computations here, keep the faster.

Each choice the fast path makes (oneDNN or ATen products, the Python GRU loop or nn.GRU, the sigmoid
identity or torch.tanh for the energies, weights packed for generation or not) has a winner that
depends on the CPU, the libraries, the thread count and the shapes, and CPU flags do not predict it:
on the machines measured, oneDNN's float32 products ran slower than MKL's on a real AVX2-only AMD
EPYC and faster on an AMD EPYC with AVX-512, capped at AVX2 or not (docs/performance-log.md,
2026-11-24, issue 19). So each choice is made by timing both computations, once per process, at
the shapes and thread count it is asked for:

- both run once untimed (oneDNN builds its kernel for a shape on its first call), and their
  results (values, and gradients where the choice is for training) are compared: the fast
  computation is taken only where they agree (``first_difference``), else the choice is plain and
  a warning says what differs;
- then both run in alternating order for up to ``ROUNDS`` rounds, two once one is ``DECISIVE``
  times faster; each keeps its best time (interference from other work only ever adds time);
- the fast computation is kept only if its best time is at least ``MARGIN`` below the plain
  one's: on a tie the plain computation, PyTorch's own, wins;
- all measurements of a process share ``BUDGET_SECONDS``: once it is spent, a choice not yet made
  is plain, unmeasured;
- a fast computation that fails (a kernel this build or CPU lacks) makes the choice plain;
- each choice is logged once, when it is made, with both times and the budget used, at debug
  level (``LOGLEVEL=DEBUG`` shows them in fairseq's tools): a choice changes no result.

The fast path's setting (``setting.py``: ``BAHDANAU_FAST_PATH``) sets the rule: ``auto`` (the
default) measures as above, ``fast`` takes every fast computation that agrees with the plain one,
untimed, ``plain`` turns the whole fast path off. Under ``auto`` two processes may choose
differently where both computations take about the same time, and their results then differ within
float32 rounding; ``fast`` or ``plain`` make runs bitwise repeatable.

While a fused form is checked against the modules (``checks.py``), the choices met inside it are
plain and not remembered: the check compares formulas, at shapes of its own.
"""

import contextlib
import logging
import math
import time
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from .. import setting

BUDGET_SECONDS = 0.2
ROUNDS = 3
MARGIN = 0.05
DECISIVE = 1.5
# Two results agree where they differ by at most this much of the larger of 1 and the plain
# result's largest magnitude: float32 rounding at the paper's sizes stays two orders below, an edit
# to a formula shows orders above.
RELATIVE_TOLERANCE = 1e-4

logger = logging.getLogger(__name__)

# What a probe returns: its output, and where it runs backward the gradients, in a fixed order.
Results = List[Tensor]


class Chooser:
    """Makes and remembers the choices of one process (``CHOOSER``; tests make their own, with a
    fake clock)."""

    def __init__(
        self,
        clock: Callable[[], float] = time.perf_counter,
        budget: float = BUDGET_SECONDS,
        setting: Optional[str] = None,
    ):
        self.clock = clock
        self.budget = budget
        self.spent = 0.0
        self.choices: Dict[Tuple, bool] = {}
        self._setting = setting
        self._checks = 0  # fused forms being checked (``checking``)

    @property
    def setting(self) -> str:
        """auto, fast or plain: the fast path's setting as the process first read it
        (``setting.py``)."""
        if self._setting is None:
            self._setting = setting.from_environment()
        return self._setting

    def fast(
        self,
        choice: Tuple,
        probes: Callable[[], Tuple[Callable[[], Results], Callable[[], Results]]],
        names: Tuple[str, str] = ("fast", "plain"),
    ) -> bool:
        """Whether to take the fast computation for ``choice``, a tuple that names what is chosen
        and the shapes it is chosen for (one choice per thread count). ``probes`` makes, when a
        choice is to be made, the two computations to compare and time: each runs the fast or the
        plain computation once on data of those shapes and returns its results (``probe``).
        ``names`` name them in the log."""
        if self.setting == "plain" or self._checks:
            return False
        key = (choice, torch.get_num_threads())
        chosen = self.choices.get(key)
        if chosen is None:
            chosen = self.choices[key] = self._choose(" ".join(map(str, choice)), probes, names)
        return chosen

    @contextlib.contextmanager
    def checking(self):
        """While a fused form is checked: every choice is plain, unmeasured, unremembered."""
        self._checks += 1
        try:
            yield
        finally:
            self._checks -= 1

    def _choose(self, choice, probes, names) -> bool:
        if self.setting == "auto" and self.spent >= self.budget:
            logger.debug(
                "%s: %s (the %.0f ms measuring budget is spent)",
                choice,
                names[1],
                1e3 * self.budget,
            )
            return False
        spent_before, start = self.spent, self.clock()
        fast, plain = probes()
        try:
            fast_results = fast()  # untimed: oneDNN builds its kernel for a shape on its first call
        except RuntimeError as error:
            self.spent = spent_before + self.clock() - start
            logger.debug("%s: %s (%s failed: %s)", choice, names[1], names[0], error)
            return False
        difference = first_difference(fast_results, plain())
        self.spent = spent_before + self.clock() - start
        if difference is not None:
            logger.warning(
                "%s: %s no longer computes what %s computes (%s %s): %s runs",
                choice,
                names[0],
                names[1],
                *difference,
                names[1],
            )
            return False
        if self.setting == "fast":
            return True
        best = {fast: float("inf"), plain: float("inf")}
        for round in range(ROUNDS):
            for computation in (fast, plain) if round % 2 == 0 else (plain, fast):
                began = self.clock()
                computation()
                best[computation] = min(best[computation], self.clock() - began)
            over_budget = spent_before + self.clock() - start >= self.budget
            if over_budget or (round > 0 and _decided(best[fast], best[plain])):
                break
        # Measurements made inside this one (a loop's products) are counted once, in this one.
        self.spent = spent_before + self.clock() - start
        chosen = best[fast] < (1 - MARGIN) * best[plain]
        logger.debug(
            "%s: %s %.3f ms, %s %.3f ms: %s (%.0f of the %.0f ms measuring budget used)",
            choice,
            names[0],
            1e3 * best[fast],
            names[1],
            1e3 * best[plain],
            names[0] if chosen else names[1],
            1e3 * self.spent,
            1e3 * self.budget,
        )
        return chosen


def probe(
    compute: Callable[[], Tensor], wrt, training: bool, upstream: Optional[Tensor] = None
) -> Callable[[], Results]:
    """One computation to compare and time for a choice: ``compute()`` without gradients, or
    where ``training`` with its backward pass to ``wrt`` (from its sum, each output weighted by
    ``upstream`` if given); returns the output and the gradients."""

    def forward_and_backward():
        # a choice may be made where gradients are off, or in inference mode
        with torch.inference_mode(False), torch.enable_grad():
            output = compute()
            weighted = output if upstream is None else output * upstream
            # a scalar, not grad_outputs, whose first use in a process imports sympy: longer than
            # the whole measuring budget (docs/performance-log.md, 2026-11-24, issue 19)
            return [output.detach(), *torch.autograd.grad(weighted.sum(), wrt)]

    def forward():
        with torch.no_grad():
            return [compute()]

    return forward_and_backward if training else forward


def first_difference(
    fast: Sequence[Optional[Tensor]],
    plain: Sequence[Optional[Tensor]],
    labels: Optional[Iterable[str]] = None,
    tolerances: Optional[Iterable[float]] = None,
) -> Optional[Tuple[str, str]]:
    """None where each result of ``fast`` agrees with the same of ``plain`` (within its tolerance,
    RELATIVE_TOLERANCE unless given, of the larger of 1 and the plain result's largest magnitude);
    else the first that does not (its label, or its place) and how it differs."""
    labels = list(labels) if labels is not None else [f"result {i + 1}" for i in range(len(plain))]
    tolerances = list(tolerances) if tolerances is not None else [RELATIVE_TOLERANCE] * len(plain)
    if len(fast) != len(plain):
        return "the results", f"{len(fast)} against {len(plain)}"
    for label, ours, reference, tolerance in zip(labels, fast, plain, tolerances):
        if ours is None and reference is None:
            continue
        if ours is None or reference is None or ours.shape != reference.shape:
            return label, f"of shape {_shape(ours)} against {_shape(reference)}"
        error = (ours.double() - reference.double()).abs().max().item() if ours.numel() else 0.0
        scale = max(1.0, reference.abs().max().item() if reference.numel() else 0.0)
        if not error <= tolerance * scale:  # also where either is not a number
            return label, f"off by {error:.3g}" if math.isfinite(error) else f"off by {error}"
    return None


def _shape(tensor: Optional[Tensor]) -> str:
    return "none" if tensor is None else "x".join(map(str, tensor.shape)) or "a scalar"


def _decided(fast: float, plain: float) -> bool:
    """Whether one is so far ahead (DECISIVE) that more rounds could not change the choice."""
    return max(fast, plain) > DECISIVE * min(fast, plain)


CHOOSER = Chooser()
