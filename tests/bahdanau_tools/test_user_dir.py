"""--user-dir DIR of the tools that load a model (bahdanau_tools/user_dir.py): a checkpoint of a
model of one's own folder (docs/model.md, "A model of your own") is evaluated, drawn, served and
read for an unk dictionary, as fairseq-generate --user-dir DIR translates it; a folder that is not
there, or does not import, is one line naming it."""

import json
import textwrap

import pytest
import torch

from bahdanau_tools import plot_alignment, unk_dictionary
from bahdanau_tools.evaluation import command_line as evaluation

from ..support.assertions import assert_one_line_error
from ..support.tools import command_in_this_process
from .serving.conftest import Server

# a name of its own, not test_unregistered_model's rnnsearch_mine: the tools here import the folder
# into the tests' process, which then registers it
OWN_MODEL = "model_of_my_own"
OWN_USER_DIR = f"""
from fairseq.models import register_model

from bahdanau_plugin.models.rnnsearch import RNNsearchConfig, RNNsearchModel


@register_model("{OWN_MODEL}", dataclass=RNNsearchConfig)
class MyRNNsearch(RNNsearchModel):
    pass
"""


@pytest.fixture(autouse=True)
def eager(fast_path_setting):
    """The models run eagerly in this process, as in the tools the tests start: what is tested is
    that they load, and compiling their step for each would take seconds."""
    fast_path_setting("plain")


@pytest.fixture(scope="module")
def shortlist_data(shortlist_prepared):
    """The data-bin of own_checkpoint."""
    return shortlist_prepared / "data-bin"


@pytest.fixture(scope="module")
def own_user_dir(tmp_path_factory):
    """A researcher's --user-dir, my_models: RNNsearch subclassed and registered as OWN_MODEL."""
    user_dir = tmp_path_factory.mktemp("own") / "my_models"
    user_dir.mkdir()
    (user_dir / "__init__.py").write_text(textwrap.dedent(OWN_USER_DIR))
    return user_dir


@pytest.fixture(scope="module")
def own_checkpoint(shortlist_checkpoint, tmp_path_factory):
    """A checkpoint of OWN_MODEL, as fairseq-train --user-dir my_models --arch OWN_MODEL saves it;
    of the shortlist's data, in whose test set every sentence has a word outside the vocabulary,
    so that bahdanau-evaluate translates it once (no No UNK sentences to translate again)."""
    state = torch.load(shortlist_checkpoint, weights_only=False)
    state["cfg"]["model"]["_name"] = OWN_MODEL
    path = tmp_path_factory.mktemp("own-checkpoint") / "checkpoint_last.pt"
    torch.save(state, path)
    return path


def test_bahdanau_evaluate_scores_and_draws_a_model_of_ones_own_user_dir(
    shortlist_data, own_checkpoint, own_user_dir, tmp_path
):
    """Loaded here for its checks and heatmaps, and translated by fairseq-generate, which is given
    the folder as its --user-dir."""
    evaluated = command_in_this_process(
        evaluation.main,
        "--data", shortlist_data, "--model", f"mine={own_checkpoint}",
        "--user-dir", own_user_dir, "--out-dir", tmp_path, "--beam", 2, "--max-len-b", 5,
        "--heatmaps", 0,
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    scores = json.loads((tmp_path / "bleu.json").read_text(encoding="utf-8"))["models"]["mine"]
    assert scores["all"]["sentences"] == 13
    assert (tmp_path / "heatmaps" / "mine" / "sentence_0.png").is_file()


def test_bahdanau_plot_alignment_draws_a_model_of_ones_own_user_dir(
    shortlist_data, own_checkpoint, own_user_dir, tmp_path
):
    drawn = command_in_this_process(
        plot_alignment.main,
        "--checkpoint", own_checkpoint, "--user-dir", own_user_dir, "--data", shortlist_data,
        "--out-dir", tmp_path, "--beam", 2, "--max-len-b", 5, "a man .",
    )  # fmt: skip
    assert drawn.returncode == 0, drawn.stderr[-3000:]
    assert (tmp_path / "alignment_1.png").is_file()


def test_bahdanau_unk_dictionary_reads_a_model_of_ones_own_user_dir(
    shortlist_data, own_checkpoint, own_user_dir, tmp_path
):
    tok = shortlist_data.parent / "tok"
    written = command_in_this_process(
        unk_dictionary.main,
        "--checkpoint", own_checkpoint, "--user-dir", own_user_dir, "--data", shortlist_data,
        "--source", tok / "test.en", "--target", tok / "test.fr",
        "--output", tmp_path / "unk-dictionary.txt",
    )  # fmt: skip
    assert written.returncode == 0, written.stderr[-3000:]
    assert (tmp_path / "unk-dictionary.txt").read_text().startswith("#languages en->fr")


def test_bahdanau_serve_serves_a_model_of_ones_own_user_dir(
    shortlist_data, own_checkpoint, own_user_dir, tmp_path
):
    server = Server(
        own_checkpoint, shortlist_data, tmp_path / "server.log", "--user-dir", own_user_dir
    )
    try:
        assert len(server.translate({"text": "a man ."})) == 1
    finally:
        server.stop()
    assert f"bahdanau-serve: {OWN_MODEL} on cpu" in server.output()


def test_a_user_dir_that_is_not_there_is_one_line_naming_it(
    shortlist_data, own_checkpoint, tmp_path
):
    refused = command_in_this_process(
        plot_alignment.main,
        "--checkpoint", own_checkpoint, "--user-dir", tmp_path / "my_modles",
        "--data", shortlist_data, "--out-dir", tmp_path / "figures", "a man .",
    )  # fmt: skip
    assert_one_line_error(
        refused.returncode,
        refused.stderr,
        f"--user-dir {tmp_path / 'my_modles'} not found",
        "give the folder that registers your model",
    )
    assert not (tmp_path / "figures").exists()


def test_a_user_dir_that_fails_to_import_is_one_line_naming_it_and_the_line_that_failed(
    shortlist_data, own_checkpoint, tmp_path
):
    """fairseq's own tools end in the import's traceback."""
    broken = tmp_path / "broken_models"
    broken.mkdir()
    (broken / "__init__.py").write_text("import fairseq\nMyDecoder.decoder_class\n")
    refused = command_in_this_process(
        evaluation.main,
        "--data", shortlist_data, "--model", f"mine={own_checkpoint}", "--user-dir", broken,
        "--out-dir", tmp_path / "out",
    )  # fmt: skip
    assert_one_line_error(
        refused.returncode,
        refused.stderr,
        f"--user-dir {broken} failed to import: NameError: name 'MyDecoder' is not defined "
        f"({broken / '__init__.py'}, line 2)",
        "correct it",
    )
    assert not (tmp_path / "out").exists()
