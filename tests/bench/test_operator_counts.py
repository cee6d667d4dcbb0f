"""bench/operator_counts.py: the operators each target position costs with the step compiled, as by
default, held here. A change that adds or removes any shows as a failure: update the numbers, and
docs/performance.md's table, with the reason. The written-out recurrence that the compiled modules
replaced (issue 39, at 5e2b565): rnnsearch 18, 28 and 41; rnnencdec 9, 13 and 32. What is left in
training is the compiled step's call and autograd's per position (each weight's gradient added up
over the positions); a search's step is one compiled call (on a CPU, once it has run a while: here
from its first step)."""

import pytest

from bench.operator_counts import PHASES, operators_per_target_position

from ..support.models import build_tiny_model
from ..support.speed import search_compiled_at_once

HELD = {
    "rnnsearch": {"training forward": 7, "training backward": 21, "beam step": 19},
    "rnnencdec": {"training forward": 2, "training backward": 11, "beam step": 14},
}


@pytest.mark.parametrize("name", sorted(HELD))
def test_the_operators_per_target_position_are_held(name, monkeypatch):
    search_compiled_at_once(monkeypatch)
    counts = operators_per_target_position(build_tiny_model(name), "cpu")
    assert {phase: counts[phase]["operators"] for phase in PHASES} == HELD[name]


def test_on_a_cpu_no_kernels_are_counted():
    counts = operators_per_target_position(build_tiny_model("rnnencdec"), "cpu")
    assert all(counts[phase]["kernels"] is None for phase in PHASES)
