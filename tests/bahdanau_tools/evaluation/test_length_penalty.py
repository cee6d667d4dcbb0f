"""--lenpen, fairseq's length penalty, with which bahdanau-evaluate's searches rank translations:
the summed log-probability (0, the default of the paper's code) or the log-probability per token
(1, fairseq's default), given to every fairseq-generate run and to the heatmaps' search, and
recorded with the other generation settings."""

import contextlib
import io
import json

import pytest

from bahdanau_tools import heatmaps
from bahdanau_tools.evaluation.command_line import evaluate, evaluation_parser

pytestmark = pytest.mark.long  # run first: tests/conftest.py

SUMMED, PER_TOKEN = "0", None  # --lenpen 0, and no --lenpen: fairseq's 1
HEATMAP_SENTENCE = 0


@pytest.fixture(scope="module")
def evaluations(prepared_test_set, checkpoint_preferring_one_more_word, tmp_path_factory):
    """--lenpen (None: not given) -> (bahdanau-evaluate's output folder, what it wrote to stderr,
    the target labels of its heatmap) for a model that prefers one more word at every step."""
    runs = {}
    for lenpen in (SUMMED, PER_TOKEN):
        out = tmp_path_factory.mktemp("lenpen")
        arguments = evaluation_parser().parse_args(
            [
                *("--data", str(prepared_test_set / "data-bin"), "--out-dir", str(out)),
                *("--model", f"m={checkpoint_preferring_one_more_word}"),
                *("--beam", "3", "--max-len-b", "6", "--heatmaps", str(HEATMAP_SENTENCE)),
                *(() if lenpen is None else ("--lenpen", lenpen)),
            ]
        )
        drawn, stderr = [], io.StringIO()
        draw_alignment = heatmaps.draw_alignment

        def record(source, target, alpha):
            drawn.append(target)
            return draw_alignment(source, target, alpha)

        with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(stderr):
            patch.setattr(heatmaps, "draw_alignment", record)
            evaluate(arguments)
        runs[lenpen] = (out, stderr.getvalue(), drawn[0])
    return runs


def translations(out):
    return (out / "m" / "test.tok.hyp").read_text(encoding="utf-8").splitlines()


def test_the_summed_log_probability_chooses_shorter_translations_than_the_mean_per_token(
    evaluations,
):
    summed, per_token = (translations(evaluations[lenpen][0]) for lenpen in (SUMMED, PER_TOKEN))
    assert all(len(line.split()) == 1 for line in summed)  # the shortest: one word, then the end
    assert all(len(line.split()) > 1 for line in per_token)


@pytest.mark.parametrize("lenpen, recorded", [(SUMMED, 0), (PER_TOKEN, 1)])
def test_the_length_penalty_is_recorded_beside_the_beam(evaluations, lenpen, recorded):
    out, _, _ = evaluations[lenpen]
    report = json.loads((out / "bleu.json").read_text(encoding="utf-8"))
    assert report["beam"] == 3 and report["lenpen"] == recorded


@pytest.mark.parametrize("lenpen, said", [(SUMMED, "lenpen 0.0"), (PER_TOKEN, "lenpen 1.0")])
def test_each_fairseq_generate_run_is_announced_with_its_length_penalty(evaluations, lenpen, said):
    _, stderr, _ = evaluations[lenpen]
    announced = [line for line in stderr.splitlines() if line.startswith("== m")]
    assert len(announced) == 2 and all(f"beam 3, {said}, " in line for line in announced)


@pytest.mark.parametrize("lenpen", [SUMMED, PER_TOKEN])
def test_the_heatmap_draws_the_translation_that_the_length_penalty_chose(evaluations, lenpen):
    out, _, target = evaluations[lenpen]
    assert target == translations(out)[HEATMAP_SENTENCE].split() + ["<end>"]


@pytest.mark.parametrize("lenpen", ["nan", "inf", "-inf"])
def test_a_length_penalty_that_is_not_a_finite_number_is_refused(lenpen, capsys):
    with pytest.raises(SystemExit):
        evaluation_parser().parse_args(
            ["--data", "d", "--out-dir", "o", "--model", "m=m.pt", f"--lenpen={lenpen}"]
        )  # with "=": argparse reads a value starting with "-" as an option
    assert f"argument --lenpen: {lenpen} is not a finite number" in capsys.readouterr().err
