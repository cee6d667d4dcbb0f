"""What code trained a checkpoint of these models: each run's provenance.

A checkpoint records its options (``cfg``) and its data and first parameters (fingerprints.py),
but not the code that trained it: of two checkpoints that behave differently, or of a reported
score, nobody could tell which version of the plugin, fairseq or torch made them. Every checkpoint
of these models that fairseq-train saves now holds, in ``extra_state["bahdanau_provenance"]``, a
list of the runs that wrote to it, each a small dict of strings (``of_this_run``): the plugin's
version, its git commit and whether the work tree had uncommitted changes (where it runs from a
git checkout), fairseq's, torch's and Python's versions, the fast path's setting, the device and
the precision. A resumed training adds its own run where the latest recorded one differs
(``runs_after``), so that a checkpoint trained by two versions lists both.

Why ``extra_state``: fairseq's trainer saves it whole, beside its own keys, and hands it back
whole to the run that resumes (which reads only the keys it knows), where the list is carried on
(``carry_on``); both averagings keep the extra_state of one of the checkpoints they average (the
plugin's the newest's, fairseq's script the first's, the newest of a save folder); lists, dicts
and strings load weights-only. Among the parameters (``model``), where the fingerprints are,
averaging would sum them; ``cfg`` is the resuming run's own, written anew at each save, and
fairseq rebuilds it into its dataclasses as it loads.

The code's part is read once per process (``of_the_code``): the commit from the files under .git
(HEAD, the branch's ref, packed-refs), without git; the state of the work tree from ``git
status``, with a short timeout, "unknown" where git cannot tell. A checkpoint saved before records
nothing, and reads as "unknown" (``recorded``).
"""

import functools
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Dict, List, Optional, Union

import fairseq
import torch

from .checkpoint_safety import saved_state
from .resuming import precision_flag
from .speed import setting

KEY = "bahdanau_provenance"
UNKNOWN = "unknown"
DISTRIBUTION = "bahdanau-fairseq"
# The first run and the latest ones: enough to tell which code trained a checkpoint, however
# often a training resumes.
MOST_RUNS = 8
GIT_SECONDS = 5  # git status of a large work tree on a slow disk, read once per process
# The folder that holds the plugin's package: a git checkout's work tree where it has .git (an
# installed package's site-packages has none).
SOURCE_ROOT = Path(__file__).resolve().parent.parent

Run = Dict[str, str]


def _git_dir(root: Path) -> Optional[Path]:
    """The git directory of a work tree: root/.git, or the one a .git file names (a linked
    work tree's, a submodule's); None where root is no work tree."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():
        text = dot_git.read_text(encoding="utf-8").strip()
        if text.startswith("gitdir:"):
            return (root / text[len("gitdir:") :].strip()).resolve()
    return None


def _common_dir(git_dir: Path) -> Path:
    """Where a git directory's refs are: its own, or, for a linked work tree, the main one's."""
    common = git_dir / "commondir"
    if common.is_file():
        return (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
    return git_dir


def head_commit(git_dir: Path) -> str:
    """The commit HEAD names, read from the files git keeps (no git run): a detached HEAD's
    own, or its branch's, from the branch's file or packed-refs; UNKNOWN where none is found."""
    head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    if not head.startswith("ref:"):
        return head
    ref = head[len("ref:") :].strip()
    common = _common_dir(git_dir)
    for folder in (git_dir, common):
        if (folder / ref).is_file():
            return (folder / ref).read_text(encoding="utf-8").strip()
    packed = common / "packed-refs"
    lines = packed.read_text(encoding="utf-8").splitlines() if packed.is_file() else []
    return next((line.split()[0] for line in lines if line.endswith(" " + ref)), UNKNOWN)


def work_tree_state(root: Path) -> str:
    """Whether the work tree's tracked files differ from its commit: "clean", "uncommitted
    changes", or UNKNOWN where git is missing, fails or takes too long. GIT_OPTIONAL_LOCKS=0: git
    status does not write the index while a user's git may."""
    try:
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            timeout=GIT_SECONDS,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return UNKNOWN
    if status.returncode != 0:
        return UNKNOWN
    return "uncommitted changes" if status.stdout.strip() else "clean"


def of_checkout(root: Path) -> Run:
    """The commit and the work tree's state where root is a git checkout; nothing elsewhere."""
    git_dir = _git_dir(root)
    if git_dir is None:
        return {}
    try:
        commit = head_commit(git_dir)
    except OSError:
        commit = UNKNOWN
    return {"git_commit": commit, "git_work_tree": work_tree_state(root)}


def plugin_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # --user-dir of a checkout never installed
        return UNKNOWN


@functools.lru_cache(maxsize=None)
def of_the_code() -> Run:
    """The plugin's version (and commit), fairseq's, torch's and Python's, read once per
    process. Plain strings: torch.__version__ is a str of torch's own class, which a weights-only
    load refuses (and with it the checkpoint)."""
    return {
        "bahdanau_fairseq": plugin_version(),
        **of_checkout(SOURCE_ROOT),
        "fairseq": str(fairseq.__version__),
        "torch": str(torch.__version__),
        "python": platform.python_version(),
    }


def device_name(device: torch.device) -> str:
    """cpu, or cuda and the GPU's name."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return device.type


def of_this_run(trainer) -> Run:
    """The provenance of the run that fairseq's trainer trains: the code, the fast path's setting
    (BAHDANAU_FAST_PATH), the device and the precision."""
    return {
        **of_the_code(),
        "fast_path": setting.mode(),
        "device": device_name(trainer.device),
        "precision": precision_flag(trainer.cfg.common),
    }


def runs_after(recorded_runs: List[Run], run: Run) -> List[Run]:
    """The runs a checkpoint records once run writes to it: run added, unless it is the latest
    already (the same code resumed); the first and the MOST_RUNS - 1 latest kept."""
    runs = list(recorded_runs)
    if not runs or runs[-1] != run:
        runs.append(run)
    return runs if len(runs) <= MOST_RUNS else runs[:1] + runs[-(MOST_RUNS - 1) :]


# The runs the checkpoints this process's training saves record, set as the training loads.
_training_runs: List[Run] = []


def carry_on(trainer, extra_state: Optional[dict]) -> None:
    """As fairseq-train loads (extra_state: the checkpoint it resumes, None where it starts
    afresh): the runs its checkpoints will record, those of the checkpoint and this one."""
    _training_runs[:] = runs_after((extra_state or {}).get(KEY) or [], of_this_run(trainer))


class RecordingProvenance:
    """fairseq's trainer as save_checkpoint calls it, whose saves add the runs that trained the
    checkpoint (carry_on's) to fairseq's extra_state."""

    def __init__(self, trainer):
        self._trainer = trainer

    def __getattr__(self, name):
        return getattr(self._trainer, name)

    def save_checkpoint(self, filename, extra_state):
        runs = list(_training_runs) or [of_this_run(self._trainer)]
        return self._trainer.save_checkpoint(filename, {**extra_state, KEY: runs})


def recorded(path: Union[str, Path]) -> Union[List[Run], str]:
    """The runs a checkpoint file records (read memory-mapped: its weights stay on disk), UNKNOWN
    for one saved before they were recorded."""
    return (saved_state(str(path)).get("extra_state") or {}).get(KEY) or UNKNOWN
