"""The fast path's one rule for its choices: time both computations here, keep the faster.

Each choice the fast path makes (oneDNN or ATen products, the Python GRU loop or nn.GRU, the
sigmoid identity or torch.tanh for the energies, weights packed for generation or not) has a
winner that depends on the CPU, the libraries, the thread count and the shapes, and CPU flags do
not predict it: on a real AVX2-only AMD EPYC oneDNN's float32 product ran at 136 GFLOP/s against
MKL's 178, on an AVX-512 EPYC capped at AVX2 it ran at 206 to 223 against 182 to 196, and uncapped
at twice MKL's rate (docs/performance.md). So each choice is made by timing both computations, once
per process, at the shapes and thread count it is asked for:

- both run once untimed (oneDNN builds its kernel for a shape on its first call), then in
  alternating order for up to ``ROUNDS`` rounds, two once one is ``DECISIVE`` times faster;
  each keeps its best time (interference from other work only ever adds time);
- the fast computation is kept only if its best time is at least ``MARGIN`` below the plain
  one's: on a tie the plain computation, PyTorch's own, wins;
- all measurements of a process share ``BUDGET_SECONDS``: once it is spent, a choice not yet made
  is plain, unmeasured;
- a fast computation that fails (a kernel this build or CPU lacks) makes the choice plain;
- each choice is logged once, when it is made, with both times and the budget used.

``BAHDANAU_CPU_FAST_PATH``, read once per process, sets the rule: ``auto`` (the default)
measures as above, ``fast`` takes every fast computation unmeasured, ``plain`` turns the whole fast
path off (the model then computes with the modules' own PyTorch code,
``onednn_linear.runs_in_cpu_float32``). Under ``auto`` two
processes may choose differently where both computations take about the same time, and their
results then differ within float32 rounding; ``fast`` or ``plain`` make runs bitwise repeatable.
"""

import logging
import os
import time
from typing import Callable, Dict, Optional, Tuple

import torch
from torch import Tensor

from ..errors import ConfigurationError

SETTING = "BAHDANAU_CPU_FAST_PATH"
MODES = ("auto", "fast", "plain")
BUDGET_SECONDS = 0.2
ROUNDS = 3
MARGIN = 0.05
DECISIVE = 1.5

logger = logging.getLogger(__name__)


def setting_from_environment() -> str:
    value = os.environ.get(SETTING, "auto").strip().lower() or "auto"
    if value not in MODES:
        raise ConfigurationError(f"{SETTING}={value}: use auto, fast or plain")
    return value


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

    @property
    def setting(self) -> str:
        """auto, fast or plain: ``BAHDANAU_CPU_FAST_PATH`` as the process first read it."""
        if self._setting is None:
            self._setting = setting_from_environment()
        return self._setting

    def fast(
        self,
        choice: Tuple,
        probes: Callable[[], Tuple[Callable[[], object], Callable[[], object]]],
        names: Tuple[str, str] = ("fast", "plain"),
    ) -> bool:
        """Whether to take the fast computation for ``choice``, a tuple that names what is chosen
        and the shapes it is chosen for (one measurement per choice and thread count). ``probes``
        makes, when a measurement is needed, the two computations to time: each runs the fast or
        the plain computation once on data of those shapes. ``names`` name them in the log."""
        if self.setting != "auto":
            return self.setting == "fast"
        key = (choice, torch.get_num_threads())
        chosen = self.choices.get(key)
        if chosen is None:
            chosen = self.choices[key] = self._measure(" ".join(map(str, choice)), probes, names)
        return chosen

    def _measure(self, choice, probes, names) -> bool:
        if self.spent >= self.budget:
            logger.info(
                "%s: %s (the %.0f ms measuring budget is spent)",
                choice,
                names[1],
                1e3 * self.budget,
            )
            return False
        spent_before, start = self.spent, self.clock()
        fast, plain = probes()
        try:
            fast()  # untimed: oneDNN builds its kernel for a shape on its first call
        except RuntimeError as error:
            self.spent = spent_before + self.clock() - start
            logger.info("%s: %s (%s failed: %s)", choice, names[1], names[0], error)
            return False
        plain()
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
        logger.info(
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
) -> Callable[[], None]:
    """One computation to time for a choice: ``compute()`` without gradients, or where
    ``training`` with its backward pass to ``wrt`` (from its sum, each output weighted by
    ``upstream`` if given)."""

    def forward_and_backward():
        with torch.enable_grad():  # a choice may be made where gradients are off
            output = compute() if upstream is None else compute() * upstream
            # a scalar, not grad_outputs, whose first use in a process imports sympy (0.3 s)
            torch.autograd.grad(output.sum(), wrt)

    def forward():
        with torch.no_grad():
            compute()

    return forward_and_backward if training else forward


def _decided(fast: float, plain: float) -> bool:
    """Whether one is so far ahead (DECISIVE) that more rounds could not change the choice."""
    return max(fast, plain) > DECISIVE * min(fast, plain)


CHOOSER = Chooser()
