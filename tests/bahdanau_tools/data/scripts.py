"""Running the data commands as a user does: a separate process, from the repository root."""

import json
import re
import subprocess
from pathlib import Path
from typing import List

from fairseq.data import Dictionary, data_utils

from ...support.paths import REPO
from ...support.tools import fairseq_env, fairseq_tool

PROGRESS_BAR = re.compile(r"\d+%\|")  # tqdm's, as it draws itself: "  5%|▌    | 2000/40000"


def run_command(command: str, *arguments) -> subprocess.CompletedProcess:
    """One of the project's console commands (bahdanau-prepare-data, ...)."""
    return subprocess.run(
        [fairseq_tool(command), *map(str, arguments)],
        cwd=REPO,
        env=fairseq_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def run_preset(preset: str, *arguments) -> subprocess.CompletedProcess:
    """bahdanau-prepare-data with one of its presets (multi30k, wmt14)."""
    return run_command("bahdanau-prepare-data", preset, *arguments)


def run_pipeline(preset: str, out: Path, *arguments) -> dict:
    """Run a preset that must succeed; return the summary.json it wrote."""
    completed = run_preset(preset, "--out", out, "--workers", 2, *arguments)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    return read_summary(out)


def message_lines(stderr: str) -> List[str]:
    """What a run said on stderr, less the INFO lines fairseq logs while it is imported and the
    progress bars (each redrawing is a line of its own: splitlines splits at carriage returns)."""
    return [
        line
        for line in stderr.splitlines()
        if line and not line.startswith("INFO:") and not PROGRESS_BAR.search(line)
    ]


def error_lines(completed: subprocess.CompletedProcess) -> List[str]:
    """What a failed run said on stderr (message_lines)."""
    assert completed.returncode != 0
    return message_lines(completed.stderr)


def read_summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def text_lines(path: Path) -> List[str]:
    return path.read_text(encoding="utf-8").splitlines()


def binarized_sentences(out: Path, split: str, language: str, pair: str = "en-fr") -> int:
    """How many sentences fairseq loads from a split's binaries."""
    data_bin = out / "data-bin"
    dictionary = Dictionary.load(str(data_bin / f"dict.{language}.txt"))
    return len(
        data_utils.load_indexed_dataset(str(data_bin / f"{split}.{pair}.{language}"), dictionary)
    )
