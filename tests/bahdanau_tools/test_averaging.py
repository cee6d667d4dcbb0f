"""bahdanau-average-checkpoints: the mean of several checkpoints' parameters, loaded weights-only,
written as a checkpoint that fairseq's tools load."""

import errno

import shutil

import pytest
import torch
from fairseq.data import Dictionary
from fairseq.models import FairseqEncoderDecoderModel

from bahdanau_plugin import fingerprints
from bahdanau_plugin.output_folder import OutputFolderError
from bahdanau_tools.averaging import UPDATE_CHECKPOINT, last_checkpoints, main
from bahdanau_tools.errors import AveragingError

from ..support.assertions import assert_one_line_error, assert_one_line_explanation
from ..support.malicious import malicious_copy
from ..support.paths import PLUGIN
from ..support.tools import run, tool_on_bytes
from ..support.training import train

EPOCHS = 4
UPDATES_PER_EPOCH = 10


def moved(state: dict, amount: float, seed: int) -> dict:
    """The checkpoint's parameters moved at random, as training moves them (its fingerprints
    kept); its updates, recorded as fairseq records them, those of seed epochs."""
    generator = torch.Generator().manual_seed(seed)
    model = {
        name: parameter
        if name in fingerprints.KEYS
        else parameter + amount * torch.randn(parameter.shape, generator=generator)
        for name, parameter in state["model"].items()
    }
    history = [{**state["optimizer_history"][-1], "num_updates": seed * UPDATES_PER_EPOCH}]
    return {**state, "model": model, "optimizer_history": history}


@pytest.fixture(scope="module")
def save_dir(checkpoints, tmp_path_factory):
    """A --save-dir with end-of-epoch checkpoints 1 to EPOCHS of the tiny rnnsearch, each moved away
    from it by a different amount, and update checkpoints named as fairseq names them."""
    directory = tmp_path_factory.mktemp("run")
    state = torch.load(checkpoints["rnnsearch_50"], weights_only=True)
    for epoch in range(1, EPOCHS + 1):
        torch.save(moved(state, 0.1 * epoch, seed=epoch), directory / f"checkpoint{epoch}.pt")
    for name in ("checkpoint_1_100.pt", "checkpoint_2_20.pt", "checkpoint_2_300.pt"):
        (directory / name).touch()
    return directory


@pytest.fixture(scope="module")
def averaged(save_dir, tmp_path_factory):
    """The last three epochs averaged: (the checkpoints averaged, the output)."""
    output = tmp_path_factory.mktemp("average") / "average.pt"
    return main(["--inputs", str(save_dir), "--last-epochs", "3", "--output", str(output)]), output


def test_the_last_epoch_checkpoints_are_those_of_the_highest_epochs(averaged, save_dir):
    averaged_paths, _ = averaged
    assert averaged_paths == [save_dir / f"checkpoint{epoch}.pt" for epoch in (2, 3, 4)]


def test_update_checkpoints_are_ordered_by_update_number_not_by_name(save_dir):
    assert [path.name for path in last_checkpoints(save_dir, 2, UPDATE_CHECKPOINT, "update")] == [
        "checkpoint_1_100.pt",
        "checkpoint_2_300.pt",
    ]


def test_averaged_parameters_are_the_mean_of_the_checkpoints_parameters(averaged):
    averaged_paths, output = averaged
    models = [torch.load(path, weights_only=True)["model"] for path in averaged_paths]
    average = torch.load(output, weights_only=True)["model"]
    for name, parameter in average.items():
        if name in fingerprints.KEYS:
            continue
        torch.testing.assert_close(
            parameter, torch.stack([model[name] for model in models]).mean(dim=0)
        )


def test_the_average_keeps_no_optimizer_state(averaged):
    assert "last_optimizer_state" not in torch.load(averaged[1], weights_only=True)


def test_the_average_takes_the_place_in_training_of_the_newest_checkpoint_whatever_the_order(
    save_dir, tmp_path
):
    """As a shell's glob names them: checkpoint10.pt before checkpoint9.pt."""
    newest = save_dir / "checkpoint3.pt"
    average(
        newest, save_dir / "checkpoint1.pt", save_dir / "checkpoint2.pt", output=tmp_path / "a.pt"
    )
    history = torch.load(tmp_path / "a.pt", weights_only=True)["optimizer_history"]
    assert history == torch.load(newest, weights_only=True)["optimizer_history"]
    assert history[-1]["num_updates"] == 3 * UPDATES_PER_EPOCH


def test_the_average_keeps_the_fingerprints_of_the_checkpoints(averaged):
    averaged_paths, output = averaged
    newest = torch.load(averaged_paths[-1], weights_only=True)["model"]
    average = torch.load(output, weights_only=True)["model"]
    assert [key for key in fingerprints.KEYS if key in average] == list(fingerprints.KEYS)
    for key in fingerprints.KEYS:
        assert torch.equal(average[key], newest[key])


def test_checkpoints_of_one_run_are_averaged_without_a_warning(save_dir, tmp_path, capsys):
    main(["--inputs", str(save_dir), "--last-epochs", "2", "--output", str(tmp_path / "a.pt")])
    assert "warning" not in capsys.readouterr().err


def test_an_average_averaged_again_with_its_own_checkpoints_is_named_in_a_warning(
    averaged, save_dir, tmp_path, capsys
):
    """SAVE_DIR/average.pt given beside SAVE_DIR's checkpoints: those it holds would count twice."""
    averaged_paths, earlier_average = averaged
    average(averaged_paths[-1], earlier_average, output=tmp_path / "a.pt")
    (warning,) = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warning.startswith(
        f"warning: {earlier_average} is itself the average of 3 checkpoints "
        f"({', '.join(map(str, averaged_paths))})"
    )
    assert "give the checkpoints themselves" in warning


@pytest.fixture(scope="module")
def another_run(data_bin, tmp_path_factory):
    """The tiny rnnsearch of the checkpoints fixture, trained again from another seed."""
    save_dir = tmp_path_factory.mktemp("another-run")
    train(data_bin, save_dir, "rnnsearch_50", "--max-update", "4", "--seed", "4")
    return save_dir / "checkpoint_last.pt"


def test_checkpoints_of_runs_started_from_other_parameters_are_averaged_after_a_warning(
    checkpoints, another_run, tmp_path, capsys
):
    one_run = checkpoints["rnnsearch_50"]
    average(one_run, another_run, output=tmp_path / "average.pt")
    stderr = capsys.readouterr().err
    (warning,) = [line for line in stderr.splitlines() if line.startswith("warning: ")]
    assert f"{one_run} and {another_run} are not of one training run" in warning
    assert "started from other parameters" in warning
    assert (tmp_path / "average.pt").exists()


def test_checkpoints_trained_with_other_dictionaries_of_one_size_are_an_error_naming_both(
    checkpoints, tmp_path
):
    """As two corpora prepared with one --shortlist have: their sizes alike, their words not."""
    state = torch.load(checkpoints["rnnsearch_50"], weights_only=True)
    reordered = Dictionary()
    for word in ["b", "a"]:
        reordered.add_symbol(word)
    model = {
        **state["model"],
        fingerprints.TARGET_DICTIONARY: fingerprints.of_dictionary(reordered),
    }
    torch.save({**state, "model": model}, tmp_path / "other.pt")
    with pytest.raises(AveragingError) as refused:
        average(checkpoints["rnnsearch_50"], tmp_path / "other.pt", output=tmp_path / "average.pt")
    assert_one_line_explanation(
        refused.value,
        f"cannot average {checkpoints['rnnsearch_50']} and {tmp_path / 'other.pt'}",
        "other target dictionaries",
    )
    assert not (tmp_path / "average.pt").exists()


def test_checkpoints_of_the_two_directions_of_a_joined_dictionary_are_an_error_naming_both(
    checkpoints, tmp_path
):
    """The demo's data-bin has one dictionary for both languages, and a run of the same --seed
    the other way round starts from the same parameters: only the languages tell them apart. The
    tiny rnnsearch was trained without --source-lang, as en->fr, which its data-bin's files say."""
    state = moved(torch.load(checkpoints["rnnsearch_50"], weights_only=True), 0.1, seed=1)
    task = {**state["cfg"]["task"], "source_lang": "fr", "target_lang": "en"}
    torch.save({**state, "cfg": {**state["cfg"], "task": task}}, tmp_path / "fr-en.pt")
    with pytest.raises(AveragingError) as refused:
        average(checkpoints["rnnsearch_50"], tmp_path / "fr-en.pt", output=tmp_path / "average.pt")
    assert_one_line_explanation(
        refused.value,
        f"cannot average {checkpoints['rnnsearch_50']} (en->fr) and {tmp_path / 'fr-en.pt'} "
        "(fr->en): they translate in opposite directions",
    )
    assert not (tmp_path / "average.pt").exists()


@pytest.mark.parametrize("tool", ["fairseq-generate", "fairseq-interactive"])
def test_the_average_translates_in_fairseqs_tools(averaged, data_bin, tool):
    output = run(
        tool,
        data_bin,
        "--user-dir",
        PLUGIN,
        "--path",
        averaged[1],
        "--beam",
        "2",
        "--max-len-b",
        "5",
        "--source-lang",
        "en",
        "--target-lang",
        "fr",
        "--cpu",
        stdin="the dog sees a cat\n",
    )
    assert "H-0\t" in output


def test_the_average_translates_through_the_hub_interface(averaged, data_bin):
    path = averaged[1]
    translator = FairseqEncoderDecoderModel.from_pretrained(
        str(path.parent), checkpoint_file=path.name, data_name_or_path=str(data_bin)
    )
    assert isinstance(translator.translate("the dog sees a cat", beam=2, max_len_b=5), str)


def test_checkpoints_of_different_architectures_are_a_one_line_error_naming_both(
    checkpoints, tmp_path
):
    """Run as the user runs the command: how its errors reach the user (one line, no traceback,
    an exit status that says it failed); the other refusals run its main here."""
    search, encdec = checkpoints["rnnsearch_50"], checkpoints["rnnencdec_50"]
    returncode, _, stderr = tool_on_bytes(
        "bahdanau-average-checkpoints",
        "--inputs",
        search,
        encdec,
        "--output",
        tmp_path / "average.pt",
    )
    assert_one_line_error(returncode, stderr, str(search), str(encdec), "different architectures")
    assert not (tmp_path / "average.pt").exists()


def test_checkpoints_with_different_dictionaries_are_an_error_naming_the_side(
    checkpoints, tmp_path
):
    state = torch.load(checkpoints["rnnsearch_50"], weights_only=True)
    embeddings = state["model"]["decoder.embed_tokens.weight"]
    bigger = {
        **state,
        "model": {
            **state["model"],
            "decoder.embed_tokens.weight": torch.cat([embeddings, embeddings]),
        },
    }
    torch.save(bigger, tmp_path / "bigger.pt")
    with pytest.raises(AveragingError, match="their decoder dictionaries have"):
        main(
            [
                "--inputs",
                str(checkpoints["rnnsearch_50"]),
                str(tmp_path / "bigger.pt"),
                "--output",
                str(tmp_path / "average.pt"),
            ]
        )


def test_asking_for_more_checkpoints_than_the_folder_holds_is_an_error(save_dir, tmp_path):
    with pytest.raises(
        AveragingError, match=f"holds {EPOCHS} end-of-epoch checkpoints, fewer than the 9"
    ):
        main(
            [
                "--inputs",
                str(save_dir),
                "--last-epochs",
                "9",
                "--output",
                str(tmp_path / "average.pt"),
            ]
        )


@pytest.mark.parametrize("last", ["--last-epochs", "--last-updates"])
def test_a_save_dir_that_does_not_exist_is_named_and_not_created(tmp_path, last):
    """decoding.md's command with a misspelt folder, the output inside it: the folder stays
    absent, and the line says it was not found, not that it holds no checkpoint."""
    misspelt = tmp_path / "chekpoints"
    with pytest.raises(AveragingError, match=f"--inputs {misspelt} not found: give the --save-dir"):
        main(["--inputs", str(misspelt), last, "5", "--output", str(misspelt / "average.pt")])
    assert not misspelt.exists()


@pytest.mark.parametrize(
    "environment", [{}, {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}], ids=["", "unsafe-loading-set"]
)
def test_a_checkpoint_whose_pickle_would_run_code_is_refused(
    checkpoints, tmp_path, monkeypatch, environment
):
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    marker = tmp_path / "pwned"
    malicious = malicious_copy(checkpoints["rnnsearch_50"], tmp_path / "malicious.pt", marker)
    with pytest.raises(AveragingError, match="could run code"):
        main(
            [
                "--inputs",
                str(checkpoints["rnnsearch_50"]),
                str(malicious),
                "--output",
                str(tmp_path / "average.pt"),
            ]
        )
    assert not marker.exists() and not (tmp_path / "average.pt").exists()


def average(*inputs, output):
    return main(["--inputs", *map(str, inputs), "--output", str(output)])


def test_a_checkpoint_named_twice_is_refused_naming_it(save_dir, tmp_path):
    """Averaged once (the other times dropped), it would not be the average asked for."""
    first, second = save_dir / "checkpoint1.pt", save_dir / "checkpoint2.pt"
    with pytest.raises(
        AveragingError, match=f"--inputs names checkpoint {second} 2 times: name each checkpoint"
    ):
        average(first, second, second, output=tmp_path / "average.pt")
    assert list(tmp_path.iterdir()) == []


def test_a_checkpoint_named_twice_by_two_paths_to_one_file_is_refused_naming_both(
    save_dir, tmp_path
):
    second = save_dir / "checkpoint2.pt"
    roundabout = save_dir / ".." / save_dir.name / "checkpoint2.pt"
    with pytest.raises(
        AveragingError, match=f"names checkpoint {second} more than once \\(as {second} and "
    ) as refusal:
        average(second, save_dir / "checkpoint1.pt", roundabout, output=tmp_path / "average.pt")
    assert str(roundabout) in str(refusal.value)
    assert list(tmp_path.iterdir()) == []


def test_one_checkpoint_under_two_names_is_refused_naming_both(save_dir, tmp_path):
    """fairseq's checkpoint_last.pt is a copy of the newest numbered one: a glob of the folder
    would count that checkpoint twice."""
    second, copy = save_dir / "checkpoint2.pt", tmp_path / "checkpoint_last.pt"
    shutil.copy(second, copy)
    with pytest.raises(
        AveragingError, match=f"{second} and {copy} hold the same parameters \\(update "
    ):
        average(save_dir / "checkpoint1.pt", second, copy, output=tmp_path / "average.pt")
    assert list(tmp_path.iterdir()) == [copy]


def test_an_output_that_is_a_folder_is_refused_before_any_checkpoint_is_read(tmp_path):
    """The inputs named do not exist: the output is refused first."""
    with pytest.raises(
        OutputFolderError,
        match=f"--output {tmp_path} is a folder: name the file to write in it, such as "
        f"{tmp_path / 'average.pt'}",
    ):
        average(tmp_path / "a.pt", tmp_path / "b.pt", output=tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert not tmp_path.with_name(tmp_path.name + ".part").exists()


def test_an_output_that_is_one_of_the_inputs_is_refused_leaving_it_as_it_was(save_dir):
    first, second = save_dir / "checkpoint1.pt", save_dir / "checkpoint2.pt"
    before = second.read_bytes()
    with pytest.raises(OutputFolderError, match=f"--output {second} is one of the checkpoints"):
        average(first, second, output=second)
    assert second.read_bytes() == before


def test_an_output_under_a_file_is_refused_naming_the_file(save_dir, tmp_path):
    (tmp_path / "notes").touch()
    with pytest.raises(OutputFolderError, match=f"{tmp_path / 'notes'} is a file, not a folder"):
        average(*sorted(save_dir.glob("checkpoint?.pt")), output=tmp_path / "notes" / "a.pt")


def save_on_a_full_disk(checkpoint, file):
    """torch.save on a disk that fills: some bytes written, then torch's error, whose context is
    the file's."""
    file.write(b"PK\x03\x04 cut short")
    raise RuntimeError("unexpected pos 704 vs 598") from OSError(
        errno.ENOSPC, "No space left on device"
    )


def test_a_write_that_fails_leaves_no_partial_file_and_is_one_line(save_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(torch, "save", save_on_a_full_disk)
    output = tmp_path / "average.pt"
    with pytest.raises(
        AveragingError, match=f"writing {output} failed: no space left on device; free some space"
    ):
        average(*sorted(save_dir.glob("checkpoint?.pt")), output=output)
    assert list(tmp_path.iterdir()) == []


def test_a_file_that_is_not_a_fairseq_checkpoint_is_refused_naming_it(checkpoints, tmp_path):
    """A model's state_dict, as torch.save(model.state_dict(), ...) writes it."""
    state_dict = tmp_path / "state_dict.pt"
    torch.save(torch.load(checkpoints["rnnsearch_50"], weights_only=True)["model"], state_dict)
    with pytest.raises(
        AveragingError,
        match=f'{state_dict} is not a fairseq checkpoint: it has no "model" and "cfg" entries',
    ):
        average(checkpoints["rnnsearch_50"], state_dict, output=tmp_path / "average.pt")
    assert not (tmp_path / "average.pt").exists()
