"""speed/cpu/measured_choice.py: each choice is made by comparing and timing both computations
once, with a fake clock here (a computation's time is what it adds to the clock)."""

import logging

import pytest
import torch

from bahdanau_plugin.speed.cpu import measured_choice
from bahdanau_plugin.speed.cpu.measured_choice import MARGIN, Chooser

# The CPU fast path: on a GPU none of it runs.
pytestmark = pytest.mark.cpu_only


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def chooser(budget=0.2, setting="auto"):
    clock = FakeClock()
    return Chooser(clock=clock, budget=budget, setting=setting), clock


def probes(clock, fast_seconds, plain_seconds, runs=None, fast_results=(1.0,)):
    """Computations that take these times (lists: one time per run, the last repeated); the plain
    one's result is 1, the fast one's ``fast_results``."""

    def computation(name, seconds, results):
        seconds = list(seconds) if isinstance(seconds, (list, tuple)) else [seconds]

        def run():
            clock.now += seconds.pop(0) if len(seconds) > 1 else seconds[0]
            if runs is not None:
                runs.append(name)
            return [torch.tensor(result) for result in results]

        return run

    return lambda: (
        computation("fast", fast_seconds, fast_results),
        computation("plain", plain_seconds, (1.0,)),
    )


def test_the_fast_computation_is_kept_where_it_is_measured_faster():
    rule, clock = chooser()
    assert rule.fast(("a choice",), probes(clock, 0.001, 0.002))


def test_the_plain_computation_is_kept_where_it_is_measured_faster():
    rule, clock = chooser()
    assert not rule.fast(("a choice",), probes(clock, 0.002, 0.001))


def test_a_lead_within_the_margin_keeps_the_plain_computation():
    rule, clock = chooser()
    assert not rule.fast(("a choice",), probes(clock, 0.001 * (1 - MARGIN / 2), 0.001))


def test_each_computation_keeps_its_best_time_so_that_interference_does_not_decide():
    rule, clock = chooser()
    # the fast computation's first timed run was interrupted by other work
    assert rule.fast(("a choice",), probes(clock, [0.001, 0.009, 0.001], 0.002))


def test_a_choice_is_measured_once_per_thread_count():
    rule, clock = chooser()
    runs = []
    for _ in range(3):
        rule.fast(("a choice",), probes(clock, 0.001, 0.002, runs))
    measured_once = len(runs)
    assert measured_once > 0
    threads = torch.get_num_threads()
    torch.set_num_threads(threads + 1)
    try:
        rule.fast(("a choice",), probes(clock, 0.001, 0.002, runs))
    finally:
        torch.set_num_threads(threads)
    assert len(runs) == 2 * measured_once


def test_once_the_budget_is_spent_a_new_choice_is_plain_unmeasured():
    rule, clock = chooser(budget=0.05)
    assert rule.fast(("first",), probes(clock, 0.01, 0.02))
    runs = []
    assert not rule.fast(("second",), probes(clock, 0.001, 0.002, runs))
    assert runs == []


def test_the_rounds_stop_when_the_budget_is_spent():
    rule, clock = chooser(budget=0.015)
    runs = []
    rule.fast(("a choice",), probes(clock, 0.005, 0.0051, runs))
    assert runs.count("fast") == 2  # the untimed first run and one round
    assert rule.spent == pytest.approx(0.0202)


def test_a_measurement_made_inside_another_is_counted_once():
    rule, clock = chooser()

    def outer_probes():
        fast, plain = probes(clock, 0.002, 0.004)()

        def fast_with_an_inner_choice():
            rule.fast(("inner",), probes(clock, 0.001, 0.002))
            return fast()

        return fast_with_an_inner_choice, plain

    rule.fast(("outer",), outer_probes)
    assert rule.spent == pytest.approx(clock.now)


def test_a_fast_computation_that_fails_makes_the_choice_plain():
    rule, clock = chooser()

    def failing():
        raise RuntimeError("could not create a primitive")

    assert not rule.fast(("a choice",), lambda: (failing, lambda: []))


@pytest.mark.parametrize("setting", ["auto", "fast"])
def test_a_fast_computation_whose_results_differ_makes_the_choice_plain_with_a_warning(
    setting, caplog
):
    rule, clock = chooser(setting=setting)
    with caplog.at_level(logging.WARNING, logger=measured_choice.__name__):
        assert not rule.fast(
            ("a choice",), probes(clock, 0.001, 0.002, fast_results=(1.5,)), ("A", "B")
        )
    assert [record.getMessage() for record in caplog.records] == [
        "a choice: A no longer computes what B computes (result 1 off by 0.5): B runs"
    ]


def test_results_within_float32_rounding_agree():
    rule, clock = chooser()
    assert rule.fast(("a choice",), probes(clock, 0.001, 0.002, fast_results=(1.0 + 1e-6,)))


def test_the_fast_setting_compares_both_and_times_neither():
    rule, clock = chooser(setting="fast")
    runs = []
    assert rule.fast(("a choice",), probes(clock, 0.002, 0.001, runs))
    assert runs == ["fast", "plain"]


def test_the_plain_setting_runs_neither():
    rule, clock = chooser(setting="plain")
    runs = []
    assert not rule.fast(("a choice",), probes(clock, 0.001, 0.002, runs))
    assert runs == []


def test_while_a_fused_form_is_checked_every_choice_is_plain_and_not_remembered():
    rule, clock = chooser()
    runs = []
    with rule.checking():
        assert not rule.fast(("a choice",), probes(clock, 0.001, 0.002, runs))
    assert runs == [] and rule.choices == {}


def test_the_setting_is_the_fast_path_s(monkeypatch):
    monkeypatch.setenv("BAHDANAU_FAST_PATH", "plain")
    assert Chooser().setting == "plain"


def test_each_choice_is_logged_once_at_debug_level_with_both_times_and_the_budget_used(caplog):
    rule, clock = chooser()
    with caplog.at_level(logging.DEBUG, logger=measured_choice.__name__):
        for _ in range(2):
            rule.fast(("products", 256, "->", 768), probes(clock, 0.001, 0.002), ("A", "B"))
    assert [record.levelno for record in caplog.records] == [logging.DEBUG]
    assert [record.getMessage() for record in caplog.records] == [
        "products 256 -> 768: A 1.000 ms, B 2.000 ms: A (9 of the 200 ms measuring budget used)"
    ]
