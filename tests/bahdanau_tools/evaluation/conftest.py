"""One evaluation run on a test set with unknown words, shared by the evaluation tests."""

import subprocess
from pathlib import Path

import pytest

from ...support.paths import REPO
from ...support.tools import fairseq_env, fairseq_tool

HEATMAP_SENTENCES = [0, 7]
MODELS = {"rnnsearch": "rnnsearch_50", "rnnencdec": "rnnencdec_30"}  # name -> architecture
BUCKET_WIDTH = 3
MIN_BUCKET_SENTENCES = 2


def run_evaluate(*arguments) -> subprocess.CompletedProcess:
    return subprocess.run(
        [fairseq_tool("bahdanau-evaluate"), *map(str, arguments)],
        cwd=REPO,
        env=fairseq_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="session")
def evaluation(prepared_test_set, checkpoints, tmp_path_factory) -> Path:
    """bahdanau-evaluate on two tiny models: its output folder."""
    out = tmp_path_factory.mktemp("evaluation")
    models = [
        argument
        for name, arch in MODELS.items()
        for argument in ("--model", f"{name}={checkpoints[arch]}")
    ]
    completed = run_evaluate(
        "--data",
        prepared_test_set / "data-bin",
        "--out-dir",
        out,
        *models,
        "--beam",
        3,
        "--max-len-b",
        12,
        "--bucket-width",
        BUCKET_WIDTH,
        "--min-bucket-sentences",
        MIN_BUCKET_SENTENCES,
        "--heatmaps",
        *HEATMAP_SENTENCES,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    (out / "stdout.txt").write_text(completed.stdout, encoding="utf-8")
    (out / "stderr.txt").write_text(completed.stderr, encoding="utf-8")
    return out
