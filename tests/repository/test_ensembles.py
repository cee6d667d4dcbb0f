"""Ensembles (--path A.pt:B.pt) of rnnsearch models: fairseq averages their probabilities and their
attention, so --print-alignment works with several models as with one."""

import re

import torch
from fairseq import checkpoint_utils
from fairseq.sequence_generator import EnsembleModel

from ..support.assertions import assert_one_line_error
from ..support.demo_data import TEST_SENTENCES
from ..support.paths import PLUGIN
from ..support.models import randomize_
from ..support.tools import run, tool_on_bytes

LINES = ["the dog sees a cat", "a small red car"]


def ensemble_path(checkpoints, *architectures):
    return ":".join(str(checkpoints[architecture]) for architecture in architectures)


def test_fairseq_generate_prints_an_alignment_per_sentence_for_an_ensemble(data_bin, checkpoints):
    output = run(
        "fairseq-generate",
        data_bin,
        "--user-dir",
        PLUGIN,
        "--path",
        ensemble_path(checkpoints, "rnnsearch_30", "rnnsearch_50"),
        "--print-alignment",
        "--beam",
        "3",
        "--max-len-b",
        "10",
        "--cpu",
    )
    alignments = re.findall(r"^A-\d+\t(.*)$", output, flags=re.M)
    assert len(alignments) == TEST_SENTENCES
    assert all(re.fullmatch(r"(\d+-\d+ ?)+", line.strip()) for line in alignments)


def test_fairseq_interactive_prints_an_alignment_per_line_for_an_ensemble(data_bin, checkpoints):
    output = run(
        "fairseq-interactive",
        data_bin,
        "--user-dir",
        PLUGIN,
        "--path",
        ensemble_path(checkpoints, "rnnsearch_30", "rnnsearch_50"),
        "--print-alignment",
        "--source-lang",
        "en",
        "--target-lang",
        "fr",
        "--beam",
        "3",
        "--max-len-b",
        "10",
        "--cpu",
        stdin="".join(line + "\n" for line in LINES),
    )
    assert len(re.findall(r"^A-\d+\t\d+-\d+", output, flags=re.M)) == len(LINES)


def test_the_ensembles_attention_is_the_mean_of_its_members(checkpoints):
    models, _ = checkpoint_utils.load_model_ensemble(
        [str(checkpoints["rnnsearch_30"]), str(checkpoints["rnnsearch_50"])]
    )
    models = [randomize_(model, seed).eval() for seed, model in enumerate(models)]
    dictionary = models[0].encoder.dictionary
    source = torch.tensor(
        [[dictionary.index(word) for word in LINES[0].split()] + [dictionary.eos()]]
    )
    net_input = {"src_tokens": source, "src_lengths": torch.tensor([source.size(1)])}
    previous = torch.tensor([[dictionary.eos()]])
    ensemble = EnsembleModel(models)
    _, attention = ensemble.forward_decoder(previous, ensemble.forward_encoder(net_input), [{}, {}])
    members = [
        model.decoder(previous, model.encoder(**net_input))[1]["attn"][0][:, -1, :]
        for model in models
    ]
    assert not torch.allclose(members[0], members[1])
    torch.testing.assert_close(attention, (members[0] + members[1]) / 2)


def test_an_ensemble_with_a_model_of_the_reverse_direction_is_one_line_naming_it(
    data_bin, checkpoints, tmp_path
):
    """The demo's data-bin has one dictionary for both languages, so a fr->en model of it passes
    the dictionaries' check; the tiny models were trained without --source-lang, as en->fr."""
    state = torch.load(checkpoints["rnnsearch_50"], weights_only=True)
    task = {**state["cfg"]["task"], "source_lang": "fr", "target_lang": "en"}
    torch.save({**state, "cfg": {**state["cfg"], "task": task}}, tmp_path / "fr-en.pt")
    returncode, stdout, stderr = tool_on_bytes(
        "fairseq-generate",
        data_bin,
        *("--user-dir", PLUGIN, "--cpu"),
        *("--path", f"{checkpoints['rnnsearch_30']}:{tmp_path / 'fr-en.pt'}"),
    )
    assert_one_line_error(
        returncode,
        stderr,
        f"{tmp_path / 'fr-en.pt'} translates fr->en, and this run en->fr",
        "give --source-lang fr --target-lang en, or a model trained for en->fr",
    )
    assert "H-" not in stdout


def test_an_ensemble_with_rnnencdec_refuses_print_alignment_in_one_line(data_bin, checkpoints):
    returncode, _, stderr = tool_on_bytes(
        "fairseq-generate",
        data_bin,
        "--user-dir",
        PLUGIN,
        "--path",
        ensemble_path(checkpoints, "rnnsearch_50", "rnnencdec_50"),
        "--print-alignment",
        "--cpu",
    )
    assert_one_line_error(
        returncode, stderr, "--print-alignment", "rnnencdec", "rnnsearch checkpoints only"
    )


def test_fairseq_validate_given_an_ensemble_is_one_line_naming_its_checkpoints(
    data_bin, checkpoints
):
    """fairseq-validate loads one checkpoint, and reads A.pt:B.pt as the name of one file."""
    search, encdec = checkpoints["rnnsearch_50"], checkpoints["rnnencdec_50"]
    returncode, _, stderr = tool_on_bytes(
        "fairseq-validate",
        data_bin,
        "--user-dir",
        PLUGIN,
        "--task",
        "translation",
        "--path",
        f"{search}:{encdec}",
        "--batch-size",
        "16",
        "--cpu",
    )
    assert_one_line_error(
        returncode,
        stderr,
        "fairseq-validate reads --path whole, as one checkpoint",
        f"{search} and {encdec} are an ensemble's",
        "validate each on its own",
    )
