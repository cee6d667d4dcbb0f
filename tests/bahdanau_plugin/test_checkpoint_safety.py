"""fairseq checkpoints load with torch's weights-only unpickler still on; where the plugin loads,
whatever the environment says. Other models' loading in a program that imports the plugin is
fairseq's own."""

import argparse
import pickle

import pytest
import sacrebleu
import torch
from fairseq import checkpoint_utils, metrics
from fairseq.criterions.cross_entropy import CrossEntropyCriterion
from fairseq.tasks.translation import EVAL_BLEU_ORDER, TranslationConfig, TranslationTask

import bahdanau_plugin  # noqa: F401
from bahdanau_plugin import checkpoint_safety

from ..support.malicious import CreatesAFile
from ..support.tools import python_program


def test_a_checkpoint_holding_an_argparse_namespace_loads_with_weights_only(tmp_path):
    path = tmp_path / "checkpoint.pt"
    torch.save({"args": argparse.Namespace(lr=[1.0]), "model": {"w": torch.ones(2)}}, path)
    state = torch.load(path, weights_only=True)
    assert state["args"].lr == [1.0]


def validation_logged_with_bleu(hypothesis: str, reference: str) -> dict:
    """What fairseq's translation task logs for one validation sentence under --eval-bleu (its
    loss, made up: the criterion's)."""
    bleu = sacrebleu.corpus_bleu([hypothesis], [[reference]])
    logged = {"loss": 2.0, "ntokens": 4, "nsentences": 1, "sample_size": 4}
    logged.update(_bleu_sys_len=bleu.sys_len, _bleu_ref_len=bleu.ref_len)
    for n in range(EVAL_BLEU_ORDER):
        logged[f"_bleu_counts_{n}"], logged[f"_bleu_totals_{n}"] = bleu.counts[n], bleu.totals[n]
    return logged


def test_the_metrics_of_a_training_validated_by_bleu_load_with_weights_only(data_bin, tmp_path):
    """fairseq's translation task keeps --eval-bleu's n-gram counts as numpy arrays among the
    metrics that each checkpoint of the run holds: every checkpoint of such a training was refused,
    for resuming it as for translating with it."""
    task = TranslationTask.setup_task(TranslationConfig(data=str(data_bin), eval_bleu=True))
    with metrics.aggregate("valid"):
        task.reduce_metrics(
            [validation_logged_with_bleu("le chat vert", "le chat rouge")],
            CrossEntropyCriterion(task, sentence_avg=False),
        )
    path = tmp_path / "checkpoint_best.pt"
    torch.save({"model": {}, "extra_state": {"metrics": metrics.state_dict()}}, path)
    loaded = torch.load(path, weights_only=True)["extra_state"]["metrics"]["valid"]
    meters = {name: state for _, name, _, state in loaded}
    assert list(meters["_bleu_counts"]["sum"]) == [2, 1, 0, 0]  # the matched 1- to 4-grams


def test_a_pickle_that_calls_os_system_is_still_refused(tmp_path):
    path, marker = tmp_path / "evil.pt", tmp_path / "pwned"
    torch.save({"model": {}, "payload": CreatesAFile(marker)}, path)
    with pytest.raises(pickle.UnpicklingError, match="system"):
        torch.load(path)
    assert not marker.exists()


def test_fairseqs_loading_for_the_plugin_never_honours_torch_force_no_weights_only_load(
    tmp_path, monkeypatch
):
    """torch lets that variable turn safe loading off wherever weights_only is not passed, and
    fairseq passes none: the hub, fairseq's tools and the plugin's commands load through this."""
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    path, marker = tmp_path / "evil.pt", tmp_path / "pwned"
    torch.save({"model": {}, "payload": CreatesAFile(marker)}, path)
    with pytest.raises(pickle.UnpicklingError, match="system"):
        with checkpoint_safety.fairseqs_loading_weights_only():
            checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert not marker.exists()


def test_a_program_that_only_imports_the_plugin_keeps_fairseqs_own_loading():
    """Other models' checkpoints load as fairseq loads them (the variable honoured, as torch
    does), outside the plugin's commands and its hub: in a program of its own, which no other
    test's loading has run in."""
    python_program(
        "import torch\n"
        "from fairseq import checkpoint_utils\n"
        "import bahdanau_plugin\n"
        "assert checkpoint_utils.torch is torch, checkpoint_utils.torch\n"
    )
