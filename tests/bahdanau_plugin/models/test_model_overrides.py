"""Options written over a checkpoint's configuration as it is loaded (--model-overrides, the hub's
from_pretrained options): one fairseq would drop, or one that builds a model the checkpoint's
parameters do not fit, is refused in one line (bahdanau_plugin/models/model_overrides.py)."""

import pytest
import torch

from bahdanau_plugin.errors import CheckpointError, ConfigurationError
from bahdanau_plugin.models import RNNsearchModel

from ...support.assertions import assert_one_line_error
from ...support.models import TINY_SIZES
from ...support.paths import PLUGIN
from ...support.tools import run, tool_on_bytes

OTHER_ATTENTION_SIZE = TINY_SIZES["attention_dim"] + 1


# Each tool's options beside --model-overrides: fairseq-validate passes all its options to the
# loading, --model-overrides among them as text.
TOOL_OPTIONS = {
    "fairseq-generate": ["--beam", "2"],
    "fairseq-validate": ["--task", "translation", "--valid-subset", "test"],
}


def generating(data_bin, checkpoint, overrides, tool="fairseq-generate"):
    return tool_on_bytes(
        tool, data_bin, "--user-dir", PLUGIN, "--path", checkpoint, "--cpu", "--batch-size", "13",
        *TOOL_OPTIONS[tool], "--model-overrides", overrides,
    )  # fmt: skip


@pytest.mark.parametrize(
    "overrides, changed",
    [
        (f"{{'attention_dim': {OTHER_ATTENTION_SIZE}}}", "attention_dim"),
        ("{'_name': 'rnnencdec_50'}", "_name"),
    ],
    ids=["a-size", "the-architecture"],
)
def test_an_override_the_checkpoints_parameters_do_not_fit_is_one_line_naming_it(
    data_bin, checkpoints, overrides, changed
):
    """fairseq built the model under the overrides and torch refused the checkpoint's parameters
    in a traceback listing each parameter of another size."""
    returncode, stdout, stderr = generating(data_bin, checkpoints["rnnsearch_50"], overrides)
    assert_one_line_error(
        returncode,
        stderr,
        f'--model-overrides "{overrides}" changes the model\'s {changed}',
        f"drop {changed} from the overrides",
    )
    assert "H-" not in stdout


@pytest.mark.parametrize("tool", sorted(TOOL_OPTIONS))
def test_an_override_of_an_option_no_block_holds_is_one_line_naming_the_nearest(
    data_bin, checkpoints, tool
):
    """fairseq dropped a misspelt option without a word and translated (validated) without it."""
    returncode, stdout, stderr = generating(
        data_bin, checkpoints["rnnsearch_50"], "{'dropuot': 0.3}", tool
    )
    assert_one_line_error(
        returncode,
        stderr,
        """--model-overrides "{'dropuot': 0.3}": dropuot is none of the checkpoint's options""",
        "did you mean dropout?",
    )
    assert "H-" not in stdout


@pytest.fixture(scope="module")
def lstm_checkpoint(data_bin, tmp_path_factory):
    """fairseq's own lstm after one update on the demo data: a model of another family for an
    ensemble, whose configuration is a legacy Namespace."""
    save_dir = tmp_path_factory.mktemp("lstm")
    run(
        "fairseq-train", data_bin, "--arch", "lstm", "--encoder-embed-dim", "8",
        "--decoder-embed-dim", "8", "--encoder-hidden-size", "8", "--decoder-hidden-size", "8",
        "--decoder-out-embed-dim", "8", "--optimizer", "adam", "--max-update", "1",
        "--batch-size", "8", "--cpu", "--save-dir", save_dir, "--no-epoch-checkpoints",
        "--disable-validation",
    )  # fmt: skip
    return save_dir / "checkpoint_last.pt"


def test_an_override_of_another_model_of_the_ensemble_translates(
    data_bin, checkpoints, lstm_checkpoint
):
    """It was refused as none of the rnnsearch checkpoint's options, though fairseq writes it over
    every checkpoint's configuration and lstm reads it."""
    ensemble = f"{lstm_checkpoint}:{checkpoints['rnnsearch_50']}"
    returncode, stdout, stderr = generating(data_bin, ensemble, "{'decoder_dropout_out': 0.1}")
    assert returncode == 0, stderr[-3000:]
    assert stdout.count("\nH-") + stdout.startswith("H-") == 13


def test_an_override_no_model_of_the_ensemble_holds_is_one_line_naming_the_nearest(
    data_bin, checkpoints, lstm_checkpoint
):
    ensemble = f"{checkpoints['rnnsearch_50']}:{lstm_checkpoint}"
    returncode, stdout, stderr = generating(data_bin, ensemble, "{'decoder_dropout_ot': 0.1}")
    assert_one_line_error(
        returncode,
        stderr,
        """--model-overrides "{'decoder_dropout_ot': 0.1}": decoder_dropout_ot is none of the """
        "ensemble's checkpoints' options",
        "did you mean decoder_dropout_out?",
    )
    assert "H-" not in stdout


def test_an_override_of_an_option_the_parameters_fit_translates(data_bin, checkpoints):
    returncode, stdout, stderr = generating(
        data_bin, checkpoints["rnnsearch_50"], "{'dropout': 0.3, 'max_train_length': 5}"
    )
    assert returncode == 0, stderr[-3000:]
    assert stdout.count("\nH-") + stdout.startswith("H-") == 13


def test_a_size_given_to_the_hub_that_the_parameters_do_not_fit_is_one_line_naming_it(
    data_bin, checkpoints
):
    checkpoint = checkpoints["rnnsearch_50"]
    with pytest.raises(CheckpointError) as refused:
        RNNsearchModel.from_pretrained(
            str(checkpoint.parent),
            checkpoint_file=checkpoint.name,
            data_name_or_path=str(data_bin),
            attention_dim=OTHER_ATTENTION_SIZE,
        )
    assert str(refused.value).startswith(
        f"from_pretrained(attention_dim={OTHER_ATTENTION_SIZE}) changes the model's attention_dim"
    )


@pytest.fixture(scope="module")
def saved_without_dropout(checkpoints, tmp_path_factory):
    """rnnsearch_50's checkpoint as if saved before its model had the option dropout."""
    state = torch.load(checkpoints["rnnsearch_50"], weights_only=True)
    del state["cfg"]["model"]["dropout"]
    path = tmp_path_factory.mktemp("older") / "checkpoint.pt"
    torch.save(state, path)
    return path


def test_an_override_of_a_model_option_the_saved_configuration_lacks_is_one_line(
    data_bin, saved_without_dropout
):
    """fairseq writes an override only over an option the checkpoint's configuration holds: the
    model was built with dropout's default, 0, and --retain-dropout was refused as of a model
    trained without dropout, telling the user to give the override they had given."""
    returncode, stdout, stderr = generating(
        data_bin, saved_without_dropout, "{'dropout': 0.3}", "fairseq-generate"
    )
    assert_one_line_error(
        returncode,
        stderr,
        """--model-overrides "{'dropout': 0.3}": the configuration that """
        f"{saved_without_dropout} was saved with has no dropout (saved before its model had it), "
        "and fairseq would drop "
        "the override and build the model with the default, dropout=0.0",
    )
    assert "H-" not in stdout


def test_the_hub_given_a_model_option_the_saved_configuration_lacks_refuses_it(
    data_bin, saved_without_dropout
):
    with pytest.raises(ConfigurationError, match=r"from_pretrained\(dropout=0.3\): the config"):
        RNNsearchModel.from_pretrained(
            saved_without_dropout.parent,
            checkpoint_file=saved_without_dropout.name,
            data_name_or_path=str(data_bin),
            dropout=0.3,
        )


def test_a_checkpoint_in_torchs_format_before_1_6_loads_unmapped(checkpoints, data_bin, tmp_path):
    """The plugin reads the checkpoint again where an override needs it as saved (a model option,
    the languages), memory-mapped, which torch cannot do for that format."""
    state = torch.load(checkpoints["rnnsearch_50"], weights_only=True)
    torch.save(state, tmp_path / "checkpoint.pt", _use_new_zipfile_serialization=False)
    hub = RNNsearchModel.from_pretrained(
        tmp_path, "checkpoint.pt", str(data_bin), dropout=0.3, source_lang="en", target_lang="fr"
    )
    assert hub.models[0].cfg.dropout == 0.3
