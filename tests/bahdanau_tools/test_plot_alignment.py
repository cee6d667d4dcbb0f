"""bahdanau-plot-alignment, run as typed: every path it is given is read from where the user
stands, and BPE codes are taken for data in BPE units only."""

import os
import shutil
from pathlib import Path

import torch

from bahdanau_tools.evaluation.command_line import evaluation_parser
from bahdanau_tools.heatmaps import translation_text
from bahdanau_tools.hub import load_translator
from bahdanau_tools.plot_alignment import argument_parser, main, more_than_one_model

from ..support.png import assert_png
from ..support.tools import command_in_this_process, run, tool_on_bytes

SEARCH = ("beam", "max_len_b", "lenpen")


def test_paths_are_read_from_the_current_directory_also_those_that_start_with_dot_dot(
    checkpoints, data_bin, tmp_path
):
    work = tmp_path / "work"
    (work / "checkpoints").mkdir(parents=True)
    shutil.copy(checkpoints["rnnsearch_50"], work / "checkpoints" / "checkpoint_last.pt")
    data = os.path.relpath(data_bin, work)
    assert data.startswith("..")
    output = run(
        "bahdanau-plot-alignment",
        "--checkpoint",
        "checkpoints/checkpoint_last.pt",
        "--data",
        data,
        "--out-dir",
        "figures",
        "the dog sees a cat",
        cwd=work,
    )
    assert "figures/alignment_1.png\t" in output
    assert (work / "figures" / "alignment_1.png").stat().st_size > 0


def last_line_here(*arguments) -> str:
    """The last line bahdanau-plot-alignment's main, run here (command_in_this_process), ends
    with: an error, as it fails."""
    completed = command_in_this_process(main, *arguments)
    assert completed.returncode != 0
    return (completed.stdout + completed.stderr).strip().splitlines()[-1]


def refusal(checkpoint, data, tmp_path, *options) -> str:
    """The last line bahdanau-plot-alignment ends with, which must be an error."""
    line = last_line_here(
        *("--checkpoint", checkpoint, "--data", data, "--out-dir", tmp_path / "figures"),
        *options,
        "the dog sees a cat",
    )
    assert not (tmp_path / "figures").exists()
    return line


def test_data_in_bpe_units_without_bpe_codes_is_refused_before_the_model_is_loaded(
    bpe_prepared, tmp_path
):
    """The sentence's words would reach the model as <unk>, under heatmap labels that say the
    words."""
    data, checkpoint = bpe_prepared / "data-bin", tmp_path / "checkpoint.pt"
    checkpoint.touch()  # not read
    assert refusal(checkpoint, data, tmp_path).endswith(
        f"error: the data-bin {data} holds BPE units (entries of {data / 'dict.en.txt'} end in "
        "@@), and no BPE codes were given: give the codes it was segmented with, --bpe-codes "
        "(bahdanau-prepare-data writes OUT/bpe.codes)"
    )


def test_bpe_codes_given_for_data_in_words_are_refused(
    checkpoints, bpe_prepared, data_bin, tmp_path
):
    codes = bpe_prepared / "bpe.codes"
    line = refusal(checkpoints["rnnsearch_50"], data_bin, tmp_path, "--bpe-codes", codes)
    assert line.endswith(
        f"error: --bpe-codes {codes} given, but the data-bin {data_bin} holds no BPE units (no "
        f"entry of {data_bin / 'dict.en.txt'} ends in @@): give the --data segmented with those "
        "codes, or no --bpe-codes"
    )


def test_a_second_checkpoint_is_refused_where_only_the_last_would_be_drawn(
    checkpoints, data_bin, tmp_path
):
    first, second = checkpoints["rnnsearch_50"], checkpoints["rnnsearch_30"]
    line = refusal(first, data_bin, tmp_path, "--checkpoint", second)
    assert line.endswith(
        f"error: --checkpoint names more than one model ({first}, {second}): a heatmap draws one "
        "model's alignments; give one checkpoint, and run the command again for each other"
    )


def test_an_ensemble_of_checkpoints_is_refused_saying_a_heatmap_is_one_models(
    checkpoints, data_bin, tmp_path
):
    ensemble = f"{checkpoints['rnnsearch_50']}:{checkpoints['rnnsearch_30']}"
    line = refusal(ensemble, data_bin, tmp_path)
    assert line.endswith(
        f"error: --checkpoint names more than one model (an ensemble, {ensemble}): a heatmap "
        "draws one model's alignments; give one checkpoint, and run the command again for each "
        "other"
    )


def test_a_folder_where_a_heatmap_goes_is_refused_before_any_sentence_is_translated(
    checkpoints, data_bin, tmp_path
):
    """One that --out-dir FIGURES/alignment_2.png made, say: saving that heatmap ended the run in
    a traceback, after the sentences before it were drawn."""
    figures = tmp_path / "figures"
    in_the_way = figures / "alignment_2.png"
    in_the_way.mkdir(parents=True)
    last_line = last_line_here(
        *("--checkpoint", checkpoints["rnnsearch_50"], "--data", data_bin, "--out-dir", figures),
        *("the dog sees a cat", "a cat"),
    )
    assert last_line.endswith(
        f"error: {in_the_way} is a folder, where the heatmap of sentence 2 goes: move it aside, "
        "or give another --out-dir"
    )
    assert not (figures / "alignment_1.png").exists()


def test_the_heatmaps_an_earlier_run_drew_for_more_sentences_are_removed_once_these_are_drawn(
    checkpoints, data_bin, tmp_path
):
    """They passed for this run's, numbered after its own; files under other names stay."""
    figures = tmp_path / "figures"
    figures.mkdir()
    earlier = ["alignment_1.png", "alignment_2.png", "alignment_10.png"]
    others = ["alignment_02.png", "notes.png"]
    for name in earlier + others:
        (figures / name).write_bytes(b"an earlier run's")
    run(
        "bahdanau-plot-alignment",
        *("--checkpoint", checkpoints["rnnsearch_50"], "--data", data_bin, "--out-dir", figures),
        "the dog sees a cat",
    )
    assert sorted(path.name for path in figures.iterdir()) == sorted(["alignment_1.png"] + others)
    assert_png(figures / "alignment_1.png")


def test_an_rnnencdec_checkpoint_is_refused_as_it_is_loaded_saying_to_give_an_rnnsearch_one(
    checkpoints, data_bin, tmp_path
):
    """It has no attention to draw: refused once a sentence was translated, in a line that did not
    say what to do. Run as the user runs the command: how its errors reach the user (one line, no
    traceback, an exit status that says it failed); the other refusals run its main here."""
    checkpoint = checkpoints["rnnencdec_30"]
    returncode, stdout, stderr = tool_on_bytes(
        "bahdanau-plot-alignment",
        *("--checkpoint", checkpoint, "--data", data_bin, "--out-dir", tmp_path / "figures"),
        "the dog sees a cat",
    )
    assert returncode != 0 and "Traceback" not in stderr
    assert (stdout + stderr).strip().splitlines()[-1] == (
        f"error: --checkpoint {checkpoint} holds an rnnencdec model, which has no attention to "
        "draw (it translates from one fixed context): give an RNNsearch checkpoint"
    )


def test_a_checkpoint_whose_name_holds_a_colon_is_one_model(tmp_path, monkeypatch):
    """fairseq's ensemble separator, in a file's own name: the file is the model asked for."""
    monkeypatch.chdir(tmp_path)
    for name in ("a", "b.pt", "a:b.pt"):
        Path(name).touch()
    assert more_than_one_model([Path("a:b.pt")]) is None
    Path("a:b.pt").unlink()
    assert more_than_one_model([Path("a:b.pt")]).startswith(
        "--checkpoint names more than one model (an ensemble, a:b.pt)"
    )


def refusal_once_loaded(checkpoint, prepared, tmp_path, *options) -> str:
    """The last line bahdanau-plot-alignment ends with on prepared's BPE data, which must be an
    error given before any heatmap is drawn."""
    figures = tmp_path / "figures"
    line = last_line_here(
        *("--checkpoint", checkpoint, "--data", prepared / "data-bin", "--out-dir", figures),
        *("--bpe-codes", prepared / "bpe.codes", *options, "the dog sees a cat"),
    )
    assert not (figures / "alignment_1.png").exists()
    return line


def test_sentences_given_in_the_other_direction_than_the_model_s_are_refused_with_one_dictionary(
    bpe_prepared, bpe_checkpoint, tmp_path
):
    """With joint BPE both languages share one dictionary, which nothing else tells apart: the
    en->fr model read the French sentence as English, under a heatmap labelled fr->en."""
    line = refusal_once_loaded(
        bpe_checkpoint, bpe_prepared, tmp_path, "--source-lang", "fr", "--target-lang", "en"
    )
    assert line == (
        f"error: {bpe_checkpoint} translates en->fr, and this run fr->en (one dictionary serves "
        "both languages, so nothing else tells them apart): give --source-lang en --target-lang "
        "fr, or a model trained for fr->en"
    )


def test_the_direction_a_checkpoint_records_is_the_one_its_model_translates(
    bpe_prepared, bpe_checkpoint, tmp_path
):
    """fairseq-train given --source-lang fr --target-lang en on a data-bin binarized en-fr."""
    state = torch.load(bpe_checkpoint, weights_only=False)
    state["cfg"]["task"].update(source_lang="fr", target_lang="en")
    checkpoint = tmp_path / "fr-en.pt"
    torch.save(state, checkpoint)
    line = refusal_once_loaded(checkpoint, bpe_prepared, tmp_path)
    assert line.startswith(f"error: {checkpoint} translates fr->en, and this run en->fr ")


def test_the_translation_printed_beside_a_heatmap_is_detokenized_as_the_hub_prints_it(
    checkpoints, data_bin
):
    """It was the heatmap's labels joined by spaces, "l' eau ." where fairseq-interactive,
    bahdanau-serve and the hub's translate() print "l'eau."."""
    translator = load_translator(
        checkpoints["rnnsearch_50"], data_bin, tokenizer="moses", source_lang="en", target_lang="fr"
    )
    tokens = ["Un", "homme", "sur", "l&apos;", "herbe", ".", "<end>"]
    assert translation_text(translator, tokens) == "Un homme sur l'herbe."


def test_a_sentence_is_translated_with_the_length_penalty_given(
    checkpoint_preferring_one_more_word, data_bin, tmp_path
):
    """A model whose every step prefers one more word: ranked by the sum (--lenpen 0), the
    translation drawn is the shortest the search finishes, one word, where fairseq's default
    ranking keeps a longer one (tests/bahdanau_tools/evaluation/test_length_penalty.py)."""
    output = run(
        "bahdanau-plot-alignment",
        *("--checkpoint", checkpoint_preferring_one_more_word, "--data", data_bin),
        *("--out-dir", tmp_path / "figures", "--beam", "3", "--lenpen", "0"),
        "the dog sees a cat",
    )
    [(path, translation)] = [line.split("\t") for line in output.splitlines() if "\t" in line]
    assert path.endswith("alignment_1.png") and len(translation.split()) == 1


def test_its_search_is_bahdanau_evaluate_s_by_default():
    """A heatmap drawn here is then that of the translation bahdanau-evaluate scores."""
    ours = vars(
        argument_parser().parse_args(["--checkpoint", "c", "--data", "d", "--out-dir", "o", "s"])
    )
    theirs = vars(
        evaluation_parser().parse_args(["--data", "d", "--out-dir", "o", "--model", "m=c"])
    )
    assert [ours[name] for name in SEARCH] == [theirs[name] for name in SEARCH]
