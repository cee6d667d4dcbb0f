"""What a checkpoint records of the code that trained it (bahdanau_plugin/provenance.py): each
run's plugin version and commit, its dependencies' versions, fast path, device and precision."""

import platform
import shutil
import subprocess
from importlib import metadata
from types import SimpleNamespace

import fairseq
import pytest
import torch
from omegaconf import OmegaConf

from bahdanau_plugin import provenance

from ..support.paths import REPO


def _git(folder, *arguments) -> str:
    return subprocess.run(
        ["git", "-C", str(folder), *arguments], check=True, capture_output=True, text=True
    ).stdout.strip()


def _trainer(**common):
    """What of_this_run reads of fairseq's trainer."""
    return SimpleNamespace(device=torch.device("cpu"), cfg=OmegaConf.create({"common": common}))


def test_a_run_records_the_plugin_s_version_and_commit_its_dependencies_device_and_precision(
    fast_path_setting,
):
    fast_path_setting("plain")
    run = provenance.of_this_run(_trainer(bf16=True))
    assert run == {
        "bahdanau_fairseq": metadata.version("bahdanau-fairseq"),
        "git_commit": _git(REPO, "rev-parse", "HEAD"),
        "git_work_tree": run["git_work_tree"],  # that of the tree the tests run in
        "fairseq": fairseq.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "fast_path": "plain",
        "device": "cpu",
        "precision": "--bf16",
    }
    assert run["git_work_tree"] in ("clean", "uncommitted changes")


def test_the_record_holds_plain_strings_only():
    """torch.__version__ is a str of torch's own class, which a weights-only load refuses, and
    with it the checkpoint: the run that resumes it."""
    assert {type(value) for value in provenance.of_this_run(_trainer()).values()} == {str}


@pytest.fixture
def checkout(tmp_path):
    """A git work tree of one commit, its branch's ref in packed-refs only."""
    _git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "code.py").write_text("x = 1\n")
    _git(tmp_path, "add", "code.py")
    _git(tmp_path, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", "first")
    _git(tmp_path, "pack-refs", "--all")
    assert not (tmp_path / ".git" / "refs" / "heads" / "main").exists()
    return tmp_path


def test_a_checkout_s_commit_is_read_without_git_and_its_changes_with_it(checkout, monkeypatch):
    commit = _git(checkout, "rev-parse", "HEAD")
    assert provenance.of_checkout(checkout) == {"git_commit": commit, "git_work_tree": "clean"}
    (checkout / "code.py").write_text("x = 2\n")
    changed = {"git_commit": commit, "git_work_tree": "uncommitted changes"}
    assert provenance.of_checkout(checkout) == changed
    monkeypatch.setenv("PATH", "")  # no git to run: the commit is still read
    assert provenance.of_checkout(checkout) == {"git_commit": commit, "git_work_tree": "unknown"}


def test_a_git_that_takes_too_long_leaves_the_work_tree_unknown(checkout, monkeypatch, tmp_path):
    """A git waiting on a slow or locked disk, say: the run saves its checkpoints on time."""
    slow = tmp_path / "bin" / "git"
    slow.parent.mkdir()
    slow.write_text(f"#!/bin/sh\nexec {shutil.which('sleep')} 5\n")
    slow.chmod(0o755)
    monkeypatch.setenv("PATH", str(slow.parent))
    monkeypatch.setattr(provenance, "GIT_SECONDS", 0.2)
    assert provenance.of_checkout(checkout)["git_work_tree"] == "unknown"


def test_a_linked_work_tree_records_its_own_commit(checkout, tmp_path_factory):
    """Its .git is a file naming its git directory, whose refs are the main one's."""
    linked = tmp_path_factory.mktemp("linked") / "tree"
    _git(checkout, "worktree", "add", "-q", "--detach", str(linked), "HEAD")
    commit = _git(checkout, "rev-parse", "HEAD")
    assert provenance.of_checkout(linked)["git_commit"] == commit
    _git(linked, "checkout", "-q", "-b", "other")  # the branch's own ref, in the main refs/
    assert provenance.of_checkout(linked)["git_commit"] == commit


def test_an_installed_package_records_no_commit(tmp_path):
    assert provenance.of_checkout(tmp_path) == {}


A, B = {"bahdanau_fairseq": "0.1.0"}, {"bahdanau_fairseq": "0.2.0"}


def test_a_checkpoint_resumed_by_another_version_records_both():
    assert provenance.runs_after([A], B) == [A, B]


def test_a_checkpoint_resumed_by_the_same_code_records_it_once():
    assert provenance.runs_after([A, B], B) == [A, B]


def test_a_checkpoint_resumed_many_times_keeps_its_first_and_latest_runs():
    runs = [{"run": str(number)} for number in range(20)]
    kept = provenance.runs_after(runs[:-1], runs[-1])
    assert kept == runs[:1] + runs[-(provenance.MOST_RUNS - 1) :]


def test_a_checkpoint_saved_before_reads_as_unknown(tmp_path):
    path = tmp_path / "checkpoint_old.pt"
    torch.save({"model": {}, "extra_state": {"train_iterator": {"epoch": 2}}}, path)
    assert provenance.recorded(path) == "unknown"
