"""bench/profile_step.py: how it profiles (its numbers are the benchmark's split, not held here)."""

import sys

from bench import profile_step


def test_steps_are_profiled_with_freed_memory_kept_for_reuse_as_fairseq_train_keeps_it(
    monkeypatch, capsys
):
    calls = []
    monkeypatch.setattr(profile_step, "keep_freed_memory_for_reuse", lambda: calls.append("kept"))
    monkeypatch.setattr(
        profile_step, "outside_products", lambda sizes, task: calls.append("profiled") or {}
    )
    monkeypatch.setattr(sys, "argv", ["profile_step", "--json"])
    profile_step.main()
    assert calls == ["kept", "profiled"]
