"""The No UNK column of Table 1 as the paper's footnote has it: "We disallowed the models to
generate [UNK] tokens when only the sentences having no unknown words were evaluated". Its
sentences are translated a second time with <unk> disallowed; All and Figure 2 keep the ordinary
translations."""

import json
from dataclasses import asdict

import pytest
import torch
from fairseq.data import Dictionary

from bahdanau_tools.evaluation import command_line
from bahdanau_tools.evaluation.binarized_split import BinarizedSplit, Side
from bahdanau_tools.evaluation.bleu import corpus_bleu, subset
from bahdanau_tools.evaluation.command_line import (
    ORDINARY,
    WITHOUT_UNK,
    evaluation_parser,
    model_scores,
    translate_all,
    write_figure2,
)
from bahdanau_tools.evaluation.generate import Generation
from bahdanau_tools.evaluation.length_buckets import read_csv

from .conftest import run_evaluate

pytestmark = pytest.mark.long  # run first: tests/conftest.py


@pytest.fixture(scope="module")
def evaluation_preferring_unk(prepared_test_set, checkpoint_preferring_unk, tmp_path_factory):
    """bahdanau-evaluate on a model that writes <unk> wherever it may: its output folder."""
    out = tmp_path_factory.mktemp("prefers-unk")
    completed = run_evaluate(
        *("--data", prepared_test_set / "data-bin", "--out-dir", out),
        *("--model", f"m={checkpoint_preferring_unk}", "--beam", 2, "--max-len-b", 6),
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return out


def lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def test_the_ordinary_translations_of_a_model_preferring_unk_hold_it(evaluation_preferring_unk):
    assert all("<unk>" in line for line in lines(evaluation_preferring_unk / "m" / "test.tok.hyp"))


def test_translations_decoded_with_unk_disallowed_hold_none(evaluation_preferring_unk):
    translations = lines(evaluation_preferring_unk / "m" / "test.no-unk.tok.hyp")
    assert translations and not any("<unk>" in line for line in translations)


def test_all_and_no_unk_are_scored_on_the_files_of_their_translations(
    evaluation_preferring_unk, prepared_test_set
):
    report = json.loads((evaluation_preferring_unk / "bleu.json").read_text(encoding="utf-8"))
    for scores, references, hypotheses, tokenize in [
        (report["models"]["m"], "raw", "hyp", "13a"),
        (report["models"]["m"]["tokenized"], "tok", "tok.hyp", "none"),
    ]:
        known = scores["no_unk"]["sentence_ids"]
        reference_lines = lines(prepared_test_set / references / "test.fr")
        ordinary = lines(evaluation_preferring_unk / "m" / f"test.{hypotheses}")
        without_unk = lines(evaluation_preferring_unk / "m" / f"test.no-unk.{hypotheses}")
        assert scores["all"] == asdict(corpus_bleu(ordinary, reference_lines, tokenize))
        no_unk = corpus_bleu(subset(without_unk, known), subset(reference_lines, known), tokenize)
        assert scores["no_unk"] == {**asdict(no_unk), "sentence_ids": known}


# three sentences, the second with an unknown word; the ordinary translations are the references,
# those without <unk> none of their words
REFERENCES = ["un chat noir dort ici", "un chien blanc court vite", "deux oiseaux chantent fort"]
KNOWN = [0, 2]
TRANSLATIONS = {
    ORDINARY: {"detokenized": REFERENCES, "tokenized": REFERENCES},
    WITHOUT_UNK: {"detokenized": ["x"] * 3, "tokenized": ["x"] * 3},
}


def test_all_is_scored_on_the_ordinary_translations_and_no_unk_on_those_without_unk():
    references = {"detokenized": REFERENCES, "tokenized": REFERENCES}
    scores = model_scores(TRANSLATIONS, references, KNOWN)
    for table in (scores, scores["tokenized"]):
        assert table["all"]["bleu"] == pytest.approx(100)
        assert table["no_unk"]["bleu"] == 0 and table["no_unk"]["sentences"] == len(KNOWN)


def arguments_of_model_m(tmp_path):
    """bahdanau-evaluate's arguments for a model m, everything in tmp_path."""
    return evaluation_parser().parse_args(
        ["--data", str(tmp_path), "--out-dir", str(tmp_path), "--model", f"m={tmp_path}/m.pt"]
    )


def test_figure_2_is_scored_on_the_ordinary_translations(tmp_path):
    source = Dictionary()
    split = BinarizedSplit(Side(source, [torch.tensor([source.eos()])] * 3), Side(source, []))
    write_figure2(
        arguments_of_model_m(tmp_path), split, {"m": TRANSLATIONS}, {"detokenized": REFERENCES}
    )
    [row] = read_csv(tmp_path / "bleu_by_length.csv")
    assert row.sentences == 3 and row.detokenized_sacrebleu == pytest.approx(100)


def translations_made(tmp_path, monkeypatch, known):
    """The decodings translate_all makes of each model for these No UNK sentences."""
    made = []

    def translate(arguments, generation, sentences, name, checkpoint, decoding, scored):
        made.append(decoding)
        return {"detokenized": ["x"] * sentences, "tokenized": ["x"] * sentences}

    monkeypatch.setattr(command_line, "translate", translate)
    generation = Generation("test", "en", "fr", 2, 8, 1.0, 32, None)
    return made, translate_all(arguments_of_model_m(tmp_path), generation, 3, known)["m"]


def test_the_split_is_translated_again_without_unk_when_a_sentence_is_in_no_unk(
    tmp_path, monkeypatch
):
    made, _ = translations_made(tmp_path, monkeypatch, known=[1])
    assert made == [ORDINARY, WITHOUT_UNK]


def test_the_split_is_not_translated_again_when_no_sentence_is_in_no_unk(tmp_path, monkeypatch):
    made, translations = translations_made(tmp_path, monkeypatch, known=[])
    assert made == [ORDINARY]
    assert translations[WITHOUT_UNK] == {"detokenized": [], "tokenized": []}
