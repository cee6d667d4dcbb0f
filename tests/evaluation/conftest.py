"""One evaluation run on a test set with unknown words, shared by the evaluation tests."""

import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import REPO, fairseq_env, run

# test sentence -> a word the demo dictionaries lack, added to its source and to its reference
UNKNOWN_WORDS = {1: ("zyzzyva", ""), 4: ("", "xylophonie"), 7: ("zyzzyva", "xylophonie")}
HEATMAP_SENTENCES = [0, 7]
MODELS = {"rnnsearch": "rnnsearch_50", "rnnencdec": "rnnencdec_30"}  # name -> architecture
BUCKET_WIDTH = 3
MIN_BUCKET_SENTENCES = 2


def with_unknown_words(lines, side):
    return [f"{line} {UNKNOWN_WORDS[index][side]}".rstrip() if index in UNKNOWN_WORDS else line
            for index, line in enumerate(lines)]


@pytest.fixture(scope="session")
def prepared_test_set(data_bin, tmp_path_factory) -> Path:
    """The demo test set with unknown words, laid out as scripts/prepare_*.py do: raw/ (the
    references) beside data-bin/ (binarized with the dictionaries the models were trained with)."""
    root = tmp_path_factory.mktemp("unknown-words")
    (root / "raw").mkdir()
    for side, language in enumerate(("en", "fr")):
        lines = (data_bin.parent / "raw" / f"test.{language}").read_text(encoding="utf-8").splitlines()
        (root / "raw" / f"test.{language}").write_text("\n".join(with_unknown_words(lines, side)) + "\n",
                                                       encoding="utf-8")
    run("fairseq-preprocess", "--source-lang", "en", "--target-lang", "fr", "--testpref", root / "raw/test",
        "--srcdict", data_bin / "dict.en.txt", "--tgtdict", data_bin / "dict.fr.txt", "--destdir", root / "data-bin")
    return root


def run_evaluate(*arguments) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "evaluate.py"), *map(str, arguments)],
                          cwd=REPO, env=fairseq_env(), capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="session")
def evaluation(prepared_test_set, checkpoints, tmp_path_factory) -> Path:
    """scripts/evaluate.py on two tiny models: its output folder."""
    out = tmp_path_factory.mktemp("evaluation")
    models = [argument for name, arch in MODELS.items() for argument in ("--model", f"{name}={checkpoints[arch]}")]
    completed = run_evaluate("--data", prepared_test_set / "data-bin", "--out-dir", out, *models,
                             "--beam", 3, "--max-len-b", 12, "--bucket-width", BUCKET_WIDTH,
                             "--min-bucket-sentences", MIN_BUCKET_SENTENCES, "--heatmaps", *HEATMAP_SENTENCES)
    assert completed.returncode == 0, completed.stderr[-3000:]
    (out / "stdout.txt").write_text(completed.stdout, encoding="utf-8")
    return out
