"""A model that no module loaded registers (a checkpoint of one's own --user-dir's model loaded
without it, a misspelt model._name) is one line naming it and the --user-dir to give, not
fairseq's traceback of KeyError: "'_name'" (bahdanau_plugin/models/unregistered_model.py)."""

import textwrap

import pytest
import torch
from fairseq import models
from omegaconf import OmegaConf

from bahdanau_plugin.errors import CheckpointError
from bahdanau_plugin.models import RNNsearchModel

from ...support.assertions import assert_one_line_error, assert_one_line_explanation
from ...support.paths import PLUGIN
from ...support.tools import python_program, tool_on_bytes

OWN_MODEL = "rnnsearch_mine"

# A researcher's --user-dir: RNNsearch subclassed and registered under a name of its own, as
# docs/model.md describes.
OWN_USER_DIR = f"""
from fairseq.models import register_model

from bahdanau_plugin.models.rnnsearch import RNNsearchConfig, RNNsearchModel


@register_model("{OWN_MODEL}", dataclass=RNNsearchConfig)
class MyRNNsearch(RNNsearchModel):
    pass
"""


@pytest.fixture
def own_checkpoint(checkpoints, tmp_path):
    """A checkpoint of the model OWN_MODEL, as one's own --user-dir's training saves it."""
    state = torch.load(checkpoints["rnnsearch_30"], weights_only=False)
    state["cfg"]["model"]["_name"] = OWN_MODEL
    path = tmp_path / "mine" / "checkpoint_last.pt"
    path.parent.mkdir()
    torch.save(state, path)
    return path


def generating(data_bin, checkpoint, user_dir):
    return tool_on_bytes(
        "fairseq-generate", data_bin, "--user-dir", user_dir, "--path", checkpoint,
        "--cpu", "--beam", "2", "--batch-size", "13",
    )  # fmt: skip


def test_fairseq_generate_of_a_checkpoint_of_a_model_the_user_dir_lacks_is_one_line(
    data_bin, own_checkpoint
):
    returncode, stdout, stderr = generating(data_bin, own_checkpoint, PLUGIN)
    assert_one_line_error(
        returncode,
        stderr,
        f"checkpoint {own_checkpoint} is of the model {OWN_MODEL}, which no module loaded "
        "registers",
        "give the --user-dir that registers it",
    )
    assert "H-" not in stdout


def test_fairseq_generate_with_the_user_dir_that_registers_it_translates(
    data_bin, own_checkpoint, tmp_path
):
    user_dir = tmp_path / "my_models"
    user_dir.mkdir()
    (user_dir / "__init__.py").write_text(textwrap.dedent(OWN_USER_DIR))
    returncode, stdout, stderr = generating(data_bin, own_checkpoint, user_dir)
    assert returncode == 0, stderr[-3000:]
    assert stdout.count("\nH-") + stdout.startswith("H-") == 13


def test_the_hub_loading_a_checkpoint_of_a_model_not_imported_is_one_line(data_bin, own_checkpoint):
    with pytest.raises(CheckpointError, match=f"is of the model {OWN_MODEL}, which no module"):
        RNNsearchModel.from_pretrained(
            str(own_checkpoint.parent), "checkpoint_last.pt", str(data_bin)
        )


def test_the_hub_loads_it_once_the_module_that_registers_it_is_imported(
    data_bin, own_checkpoint, tmp_path
):
    (tmp_path / "my_models.py").write_text(textwrap.dedent(OWN_USER_DIR))
    loaded = python_program(
        "import sys\n"
        "import my_models\n"
        "from bahdanau_plugin.models import RNNsearchModel\n"
        "hub = RNNsearchModel.from_pretrained(sys.argv[1], 'checkpoint_last.pt', sys.argv[2])\n"
        "print(type(hub.models[0]).__name__)\n",
        own_checkpoint.parent,
        data_bin,
        cwd=tmp_path,
    )
    assert loaded.stdout.strip().splitlines()[-1] == "MyRNNsearch"


def test_a_misspelt_model_name_is_one_line_naming_the_registered_names_near_it():
    """fairseq-hydra-train model._name=rnnsearch_5O ended in the same KeyError."""
    with pytest.raises(KeyError) as refused:
        models.build_model(OmegaConf.create({"_name": "rnnsearch_5O"}), task=None)
    assert_one_line_explanation(
        refused.value,
        "model rnnsearch_5O is registered by no module loaded (registered names near it: "
        "rnnsearch_50",
        "correct model._name",
    )
