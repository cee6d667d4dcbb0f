"""bahdanau-evaluate run again into the same --out-dir: a run's results are all its own, whether it
ends or fails part way; a run that fails its checks changes nothing; files it did not write stay."""

import pytest

from bahdanau_plugin.errors import CheckpointError
from bahdanau_tools.errors import EvaluationError
from bahdanau_tools.evaluation import command_line
from bahdanau_tools.evaluation.command_line import (
    evaluate,
    evaluation_parser,
    remove_previous_results,
)

THE_RUN_BEFORE = [  # what a run of model m on the test split wrote
    "bleu.json",
    "bleu.txt",
    "bleu_by_length.csv",
    "bleu_by_length.png",
    "heatmaps/m/sentence_0.png",
    "heatmaps/m/sentence_7.png",
    "m/generate-test.no-unk.txt",
    "m/generate-test.txt",
    "m/test.hyp",
    "m/test.no-unk.hyp",
    "m/test.no-unk.tok.hyp",
    "m/test.tok.hyp",
]
NOT_THE_TOOLS = [  # files the tool did not write, or not for model m and the test split
    "heatmaps/m/mine.png",
    "heatmaps/other/sentence_0.png",
    "m/generate-valid.txt",
    "m/notes.txt",
    "m/valid.hyp",
    "notes.txt",
    "other/test.hyp",
]


def out_dir_holding(tmp_path, files):
    out = tmp_path / "out"
    for file in files:
        (out / file).parent.mkdir(parents=True, exist_ok=True)
        (out / file).write_text("before\n", encoding="utf-8")
    return out


def files_in(out):
    return sorted(path.relative_to(out).as_posix() for path in out.rglob("*") if path.is_file())


def evaluation_arguments(data, out, **models):
    return evaluation_parser().parse_args(
        ["--data", str(data), "--out-dir", str(out), "--beam", "2", "--max-len-b", "8"]
        + [argument for name, path in models.items() for argument in ("--model", f"{name}={path}")]
    )


def test_a_rerun_removes_what_the_run_before_wrote_for_its_models_heatmap_folders_too(tmp_path):
    out = out_dir_holding(tmp_path, THE_RUN_BEFORE)
    remove_previous_results(evaluation_arguments(tmp_path, out, m=tmp_path / "m.pt"))
    assert files_in(out) == []
    assert not (out / "heatmaps").exists()


def test_a_rerun_keeps_the_files_the_tool_did_not_write(tmp_path):
    out = out_dir_holding(tmp_path, THE_RUN_BEFORE + NOT_THE_TOOLS)
    remove_previous_results(evaluation_arguments(tmp_path, out, m=tmp_path / "m.pt"))
    assert files_in(out) == NOT_THE_TOOLS


def test_a_checkpoint_that_cannot_be_loaded_is_an_error_before_any_model_is_translated(
    prepared_test_set, checkpoints, tmp_path
):
    intact = checkpoints["rnnsearch_50"]
    broken = tmp_path / "broken.pt"
    broken.write_bytes(intact.read_bytes()[: intact.stat().st_size // 2])
    out = out_dir_holding(tmp_path, THE_RUN_BEFORE)
    arguments = evaluation_arguments(prepared_test_set / "data-bin", out, m=intact, b=broken)
    with pytest.raises(CheckpointError, match=r"cannot read checkpoint \S*broken\.pt: "):
        evaluate(arguments)
    assert files_in(out) == THE_RUN_BEFORE
    assert {(out / file).read_text(encoding="utf-8") for file in THE_RUN_BEFORE} == {"before\n"}


def test_a_rerun_that_fails_part_way_leaves_no_results_of_the_run_before(
    prepared_test_set, checkpoints, tmp_path, monkeypatch
):
    def generate_fails(*_):
        raise EvaluationError("fairseq-generate failed")

    monkeypatch.setattr(command_line, "run_generate", generate_fails)
    out = out_dir_holding(tmp_path, THE_RUN_BEFORE)
    arguments = evaluation_arguments(
        prepared_test_set / "data-bin", out, m=checkpoints["rnnsearch_50"]
    )
    with pytest.raises(EvaluationError, match="fairseq-generate failed"):
        evaluate(arguments)
    assert files_in(out) == []
