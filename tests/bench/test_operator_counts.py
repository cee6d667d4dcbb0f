"""bench/operator_counts.py: the operators each target position costs, held here. A change that
adds or removes any shows as a failure: update the numbers, and docs/performance.md's table, with
the reason. Before the fused recurrence (commit 5108e09): rnnsearch 37, 87 and 68; rnnencdec 15,
40 and 44. rnnsearch's beam step went from 42 to 41 when the fused form began to read v_a as the
layer keeps it (1 x n'), flattened once in the weights' layout, not viewed at every step."""

import pytest

from bench.operator_counts import PHASES, operators_per_target_position

from ..support.models import build_tiny_model

HELD = {
    "rnnsearch": {"training forward": 18, "training backward": 28, "beam step": 41},
    "rnnencdec": {"training forward": 9, "training backward": 13, "beam step": 32},
}


@pytest.mark.parametrize("name", sorted(HELD))
def test_the_operators_per_target_position_are_held(name):
    counts = operators_per_target_position(build_tiny_model(name), "cpu")
    assert {phase: counts[phase]["operators"] for phase in PHASES} == HELD[name]


def test_on_a_cpu_no_kernels_are_counted():
    counts = operators_per_target_position(build_tiny_model("rnnencdec"), "cpu")
    assert all(counts[phase]["kernels"] is None for phase in PHASES)
