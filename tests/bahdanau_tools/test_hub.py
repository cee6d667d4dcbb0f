"""bahdanau_tools/hub.py: the commands' translator for a checkpoint, or an ensemble written as
fairseq's --path takes it (A.pt:B.pt), whatever the folders' names hold."""

import shutil

from bahdanau_tools.hub import load_translator

SENTENCE = "the dog sees a cat"


def test_an_ensemble_of_checkpoints_in_two_folders_loads_both_models(checkpoints, data_bin):
    first, second = checkpoints["rnnsearch_30"], checkpoints["rnnsearch_50"]
    assert first.parent != second.parent
    translator = load_translator(f"{first}:{second}", data_bin)
    assert len(translator.models) == 2


def test_a_checkpoint_in_a_folder_whose_name_holds_a_colon_is_one_model(
    checkpoints, data_bin, tmp_path
):
    folder = tmp_path / "run:2026-11-29T06:02"
    folder.mkdir()
    checkpoint = folder / "checkpoint_best.pt"
    shutil.copy(checkpoints["rnnsearch_50"], checkpoint)
    translator = load_translator(checkpoint, data_bin)
    assert len(translator.models) == 1
    original = load_translator(checkpoints["rnnsearch_50"], data_bin)
    assert translator.translate(SENTENCE) == original.translate(SENTENCE)
