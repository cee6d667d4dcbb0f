"""Helpers shared by the tests: tiny models, dictionaries, fairseq's command-line tools."""

import os
import shutil
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest
import torch
from fairseq.data import Dictionary

import bahdanau_plugin  # noqa: F401  (registers the models, as --user-dir does)
from bahdanau_plugin.models.rnnencdec import RNNencdecConfig, RNNencdecModel
from bahdanau_plugin.models.rnnsearch import RNNsearchConfig, RNNsearchModel
from bahdanau_plugin.unknown_words import source_text_path

REPO = Path(__file__).resolve().parents[1]
MULTI30K = REPO.parent / "shared" / "data" / "multi30k"
PLUGIN = str(REPO / "bahdanau_plugin")
ARCHITECTURES = ["rnnsearch_30", "rnnsearch_50", "rnnencdec_30", "rnnencdec_50"]
TEST_SENTENCES = 13  # not a multiple of fairseq's --required-batch-size-multiple (8)
TINY_FLAGS = {
    "rnnsearch": [
        "--encoder-embed-dim",
        "8",
        "--decoder-embed-dim",
        "8",
        "--encoder-hidden-dim",
        "8",
        "--decoder-hidden-dim",
        "8",
        "--attention-dim",
        "8",
        "--maxout-dim",
        "4",
    ],
    "rnnencdec": [
        "--encoder-embed-dim",
        "8",
        "--decoder-embed-dim",
        "8",
        "--encoder-hidden-dim",
        "8",
        "--decoder-hidden-dim",
        "8",
        "--maxout-dim",
        "4",
    ],
}

# test sentence -> a word the demo dictionaries lack, added to its source and to its reference
UNKNOWN_WORDS = {1: ("zyzzyva", ""), 4: ("", "xylophonie"), 7: ("zyzzyva", "xylophonie")}

TINY_SIZES = dict(
    encoder_embed_dim=6,
    decoder_embed_dim=5,
    encoder_hidden_dim=4,
    decoder_hidden_dim=7,
    attention_dim=3,
    maxout_dim=4,
)
MODELS = {
    "rnnsearch": (RNNsearchModel, RNNsearchConfig),
    "rnnencdec": (RNNencdecModel, RNNencdecConfig),
}


def make_dictionary(size: int) -> Dictionary:
    dictionary = Dictionary()
    for index in range(size):
        dictionary.add_symbol(f"w{index}")
    return dictionary


def build_tiny_model(name: str, vocabulary: int = 11, **overrides) -> torch.nn.Module:
    model_class, config_class = MODELS[name]
    fields = set(config_class.__dataclass_fields__)
    sizes = {key: value for key, value in {**TINY_SIZES, **overrides}.items() if key in fields}
    task = Namespace(
        source_dictionary=make_dictionary(vocabulary),
        target_dictionary=make_dictionary(vocabulary + 2),
    )
    return model_class.build_model(config_class(**sizes), task)


def randomize_(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Appendix B's start (v_a = 0, tiny W_a) makes attention uniform; tests need it to vary."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(
                torch.randn(
                    parameter.shape, generator=generator, dtype=parameter.dtype, device="cpu"
                )
            )
    return model


def fairseq_env() -> dict:
    """Environment for fairseq's command-line tools of the Python running the tests."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def fairseq_tool(name: str) -> str:
    found = shutil.which(name, path=fairseq_env()["PATH"])
    if found is None:
        pytest.fail(f"{name} is not installed next to {sys.executable}")
    return found


def run(tool, *args, stdin=None, cwd=None, timeout=300, check=True):
    """Run one of fairseq's tools; its stdout and stderr together."""
    command = [fairseq_tool(tool), *map(str, args)]
    result = subprocess.run(
        command,
        input=stdin,
        capture_output=True,
        text=True,
        env=fairseq_env(),
        cwd=cwd,
        timeout=timeout,
    )
    if check and result.returncode != 0:
        pytest.fail(f"{tool} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result.stdout + result.stderr


def tool_on_bytes(name, *args, stdin=None, env=None):
    """Run a fairseq tool on bytes; (return code, stdout, stderr) as text."""
    result = subprocess.run(
        [fairseq_tool(name), *map(str, args)],
        input=stdin,
        capture_output=True,
        env=env or fairseq_env(),
        timeout=300,
    )
    return (
        result.returncode,
        result.stdout.decode("utf-8", "replace"),
        result.stderr.decode("utf-8", "replace"),
    )


def assert_one_line_error(returncode, stderr, *expected):
    """The command failed, and the last line of its stderr, with no traceback before it, is
    `error: ...` holding each of expected."""
    assert returncode != 0
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: ")
    for text in expected:
        assert text in last, last


def train_command(data_bin, save_dir, arch, *extra):
    """fairseq-train with the paper's optimizer and clipping, at tiny sizes (later flags win)."""
    return [
        data_bin,
        "--user-dir",
        PLUGIN,
        "--arch",
        arch,
        *TINY_FLAGS[arch.split("_")[0]],
        "--cpu",
        "--optimizer",
        "adadelta",
        "--adadelta-rho",
        "0.95",
        "--adadelta-eps",
        "1e-6",
        "--lr",
        "1.0",
        "--clip-norm",
        "1.0",
        "--batch-size",
        "80",
        "--save-dir",
        save_dir,
        "--no-epoch-checkpoints",
        "--log-format",
        "simple",
        "--log-interval",
        "1",
        "--seed",
        "3",
        *extra,
    ]


def train(data_bin, save_dir, arch, *extra):
    return run("fairseq-train", *train_command(data_bin, save_dir, arch, *extra))


def make_demo_data_bin(root: Path, train_pairs: int = 2000) -> Path:
    subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "make_demo_corpus.py"),
            "--out",
            str(root / "raw"),
            "--train",
            str(train_pairs),
            "--valid",
            "40",
            "--test",
            str(TEST_SENTENCES),
        ],
        check=True,
        capture_output=True,
    )
    run(
        "fairseq-preprocess",
        "--source-lang",
        "en",
        "--target-lang",
        "fr",
        "--trainpref",
        root / "raw/train",
        "--validpref",
        root / "raw/valid",
        "--testpref",
        root / "raw/test",
        "--destdir",
        root / "data-bin",
        "--joined-dictionary",
    )
    return root / "data-bin"


def with_unknown_words(lines, side):
    return [
        f"{line} {UNKNOWN_WORDS[index][side]}".rstrip() if index in UNKNOWN_WORDS else line
        for index, line in enumerate(lines)
    ]


def make_test_set_with_unknown_words(data_bin: Path, root: Path) -> Path:
    """The demo test set with UNKNOWN_WORDS, laid out as bahdanau-prepare-data does: raw/ and tok/
    (the references, untokenized and tokenized: the demo text is both) beside data-bin/, binarized
    with the dictionaries the models were trained with, and the source text beside the binaries."""
    for folder in ("raw", "tok"):
        (root / folder).mkdir()
        for side, language in enumerate(("en", "fr")):
            lines = (
                (data_bin.parent / "raw" / f"test.{language}")
                .read_text(encoding="utf-8")
                .splitlines()
            )
            (root / folder / f"test.{language}").write_text(
                "\n".join(with_unknown_words(lines, side)) + "\n", encoding="utf-8"
            )
    run(
        "fairseq-preprocess",
        "--source-lang",
        "en",
        "--target-lang",
        "fr",
        "--testpref",
        root / "tok/test",
        "--srcdict",
        data_bin / "dict.en.txt",
        "--tgtdict",
        data_bin / "dict.fr.txt",
        "--destdir",
        root / "data-bin",
    )
    shutil.copyfile(root / "tok/test.en", source_text_path(root / "data-bin", "test", "en", "fr"))
    return root
