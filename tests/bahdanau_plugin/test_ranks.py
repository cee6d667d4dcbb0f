"""The processes of a distributed fairseq-train compared before the first update
(bahdanau_plugin/ranks.py): what they must share, and the line for the first thing that differs.
Two processes that differ in --seed: tests/repository/test_distributed.py."""

import functools

import pytest

from bahdanau_plugin import ranks

from ..repository.test_configs import flags_configuration
from ..support.paths import PLUGIN

SHARED = ["--user-dir", PLUGIN, "--arch", "rnnsearch_50", "--optimizer", "adadelta", "--cpu"]
# What a process of one training may be given of its own, beside its data folder (a copy).
OWN = ["--distributed-rank", "1", "--device-id", "1", "--save-dir", "b", "--log-file", "b.log"]


@functools.lru_cache
def _shared(*flags, data="data-bin"):
    """The options shared of a run of rnnsearch_50 (each parsed once: some 0.6 s)."""
    return ranks.shared_options(flags_configuration([data, *SHARED, *flags]))


def _record(**facts):
    """A process's record: --seed 1, then the facts, each 'same' unless given."""
    every = [ranks.DICTIONARIES, ranks.START, ranks.BATCHES, ranks.PARAMETERS]
    return {"--seed": facts.pop("seed", "1"), **{fact: facts.get(fact, "same") for fact in every}}


def test_processes_given_their_own_rank_device_save_dir_logs_and_data_copy_share_every_option():
    assert _shared(*OWN, "--num-workers", "2", data="copy/data-bin") == _shared()


@pytest.mark.parametrize(
    "flags, option",
    [
        (["--seed", "2"], "--seed"),
        (["--update-freq", "2"], "--update-freq"),
        (["--max-tokens", "900"], "--max-tokens"),
        (["--encoder-hidden-dim", "8"], "--encoder-hidden-dim"),
        (["--adadelta-rho", "0.5"], "--adadelta-rho"),  # a legacy optimizer's
        (["--bf16"], "--bf16"),
        (["--save-interval-updates", "5"], "--save-interval-updates"),  # validates at each save
        (["--patience", "3"], "--patience"),
    ],
)
def test_an_option_that_shapes_the_model_its_optimization_or_batches_is_shared(flags, option):
    assert _shared(*flags)[option] != _shared()[option]


def test_processes_that_agree_have_no_difference():
    assert ranks.first_difference([_record(), _record(), _record()]) is None


DIGEST = "0123456789abcdef"  # a fingerprint, shown by its first 8 digits


@pytest.mark.parametrize(
    "fact, value, shown, advice",
    [
        (ranks.DICTIONARIES, DIGEST, "01234567", ranks.SAME_DATA),
        (ranks.BATCHES, DIGEST, "01234567", ranks.SAME_DATA),
        (
            ranks.START,
            "epoch 2 batch 0 (9 updates)",
            "epoch 2 batch 0 (9 updates)",
            ranks.SAME_CHECKPOINT,
        ),
        (ranks.PARAMETERS, DIGEST, "01234567", ranks.SAME_CHECKPOINT),
    ],
)
def test_a_fact_that_differs_is_named_with_its_ranks_and_what_to_do(fact, value, shown, advice):
    line = ranks.first_difference([_record(), _record(**{fact: value})])
    assert line.startswith(
        f"the 2 processes of this distributed training differ in {fact}: same in rank 0, "
        f"{shown} in rank 1, and would not train one model together"
    )
    assert line.endswith(advice)


def test_an_option_that_differs_is_named_before_what_it_changes_with_every_rank_holding_each():
    records = [_record(), _record(seed="2", **{ranks.PARAMETERS: "other"}), _record()]
    line = ranks.first_difference(records)
    assert "differ in --seed: 1 in ranks 0 and 2, 2 in rank 1, and would not" in line
    assert line.endswith(ranks.SAME_OPTIONS)
    assert "\n" not in line
