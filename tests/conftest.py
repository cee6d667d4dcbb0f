import os
from collections.abc import Mapping
from pathlib import Path
from typing import Iterator

import pytest
import torch

from bahdanau_plugin.speed import setting
from bench.models import MODELS

from .support.demo_data import (
    make_demo_data_bin,
    make_test_set_with_unknown_words,
    prepare_demo_with_bpe,
    prepare_demo_with_shortlist,
)
from .support.shared import made_once
from .support.training import ARCHITECTURES, train


def pytest_addoption(parser):
    parser.addoption(
        "--device",
        default="cpu",
        help="where the tests of tests/bahdanau_plugin/models and tests/bahdanau_plugin/modules "
        "build their models and batches (torch's default device): cuda on a GPU, as bench/gpu "
        "runs them",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "cpu_only: the behaviour tested exists on the CPU only")
    config.addinivalue_line("markers", "long: of a test file that takes a minute or more")
    if os.environ.get("PYTEST_XDIST_WORKER"):  # make test's workers, one per core: each worker's
        # torch on one thread, as the tools it runs (fairseq_env), not two per worker spinning
        # against each other (the plugin's model tests: 60 s against 69 to 75 s on 2 cores)
        torch.set_num_threads(1)


def pytest_collection_modifyitems(items):
    """The long files first (make test gives each worker whole files, in this order): the
    workers' last files are then short ones, and they end together."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(scope="session")
def device(request):
    return torch.device(request.config.getoption("--device"))


@pytest.fixture(autouse=True)
def on_device(request, device):
    """Tensors and models made with torch's factories land on --device."""
    if device.type == "cpu":
        yield
        return
    if request.node.get_closest_marker("cpu_only"):
        pytest.skip(f"CPU only, and --device is {device}")
    previous = torch.get_default_device()
    torch.set_default_device(device)
    try:
        yield
    finally:
        torch.set_default_device(previous)


@pytest.fixture
def fast_path_setting(monkeypatch):
    """set(mode): BAHDANAU_FAST_PATH as this process would have read it (auto or plain), for what
    the test runs after."""

    def set_mode(mode: str) -> None:
        monkeypatch.setattr(setting, "mode", lambda: mode)

    return set_mode


@pytest.fixture(params=sorted(MODELS))
def model_name(request):
    return request.param


@pytest.fixture(scope="session")
def data_bin(tmp_path_factory):
    """A small binarized demo corpus: 2,000 training pairs and 13 test sentences."""
    return made_once(tmp_path_factory, "demo", make_demo_data_bin) / "data-bin"


class Checkpoints(Mapping):
    """architecture -> a tiny model of it trained for a few updates, trained when first asked for:
    most test files ask for one or two of the four."""

    def __init__(self, data_bin, tmp_path_factory):
        self._data_bin, self._tmp_path_factory = data_bin, tmp_path_factory

    def __getitem__(self, arch: str) -> Path:
        if arch not in ARCHITECTURES:
            raise KeyError(arch)
        save_dir = made_once(
            self._tmp_path_factory,
            arch,
            lambda folder: train(self._data_bin, folder, arch, "--max-update", "4"),
        )
        return save_dir / "checkpoint_last.pt"

    def __iter__(self) -> Iterator[str]:
        return iter(ARCHITECTURES)

    def __len__(self) -> int:
        return len(ARCHITECTURES)


@pytest.fixture(scope="session")
def checkpoints(data_bin, tmp_path_factory):
    return Checkpoints(data_bin, tmp_path_factory)


@pytest.fixture(scope="session")
def bpe_prepared(data_bin, tmp_path_factory):
    """The demo corpus prepared with BPE by bahdanau-prepare-data: its output folder."""

    def prepare(folder):
        prepare_demo_with_bpe(data_bin.parent / "raw", folder / "prepared")

    return made_once(tmp_path_factory, "demo-bpe", prepare) / "prepared"


@pytest.fixture(scope="session")
def bpe_checkpoint(bpe_prepared, tmp_path_factory):
    """A tiny RNNsearch trained for a few updates on bpe_prepared's pieces (no length limit: a
    sentence of pieces is longer than its words)."""

    def train_on_pieces(save_dir):
        train(bpe_prepared / "data-bin", save_dir, "rnnsearch", "--max-update", "4")

    return made_once(tmp_path_factory, "rnnsearch-bpe", train_on_pieces) / "checkpoint_last.pt"


@pytest.fixture(scope="session")
def shortlist_prepared(data_bin, tmp_path_factory):
    """The demo corpus prepared by bahdanau-prepare-data with a shortlist of each language's 20
    most frequent words: its output folder, whose data-bin has a dictionary per language."""

    def prepare(folder):
        prepare_demo_with_shortlist(data_bin.parent / "raw", folder / "prepared")

    return made_once(tmp_path_factory, "demo-shortlist", prepare) / "prepared"


@pytest.fixture(scope="session")
def shortlist_checkpoint(shortlist_prepared, tmp_path_factory):
    """A tiny RNNsearch trained for 2 updates on shortlist_prepared."""

    def train_on_shortlist(save_dir):
        train(shortlist_prepared / "data-bin", save_dir, "rnnsearch_50", "--max-update", "2")

    save_dir = made_once(tmp_path_factory, "rnnsearch-shortlist", train_on_shortlist)
    return save_dir / "checkpoint_last.pt"


@pytest.fixture(scope="session")
def prepared_test_set(data_bin, tmp_path_factory):
    """The demo test set with words the dictionaries lack, laid out as bahdanau-prepare-data lays it
    out."""
    return made_once(
        tmp_path_factory,
        "unknown-words",
        lambda folder: make_test_set_with_unknown_words(data_bin, folder),
    )
