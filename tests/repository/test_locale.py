"""The locale changes nothing: under C (without Python's UTF-8 mode) and under a Latin-1 locale,
bahdanau-prepare-data writes the same bytes, and fairseq-interactive with the plugin's task, the
hub interface and bahdanau-serve's translator read UTF-8 and give the same translations as under
C.UTF-8."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

from ..support.locales import LATIN1, REFERENCE
from ..support.paths import PLUGIN, REPO
from ..support.tools import fairseq_tool
from ..support.training import train

pytestmark = pytest.mark.long  # run first: tests/conftest.py

OTHER_LOCALES = ["C", LATIN1]
# English with French words in it, so that the joint BPE has non-ASCII merges to apply
SENTENCE = "the rivière sees a café économique"
# what bahdanau-prepare-data writes that names its own folder or times: not the same in two runs
RUN_RECORDS = ("stages", "data-bin/preprocess.log")


def command(words, env: dict, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run(
        list(map(str, words)), input=stdin, capture_output=True, env=env, cwd=REPO, timeout=600
    )


def output(completed: subprocess.CompletedProcess) -> bytes:
    """What a command that must succeed wrote on stdout."""
    assert completed.returncode == 0, completed.stderr.decode("utf-8", "replace")[-3000:]
    return completed.stdout


def written_files(out: Path) -> Dict[str, bytes]:
    return {
        str(path.relative_to(out)): path.read_bytes()
        for path in sorted(out.rglob("*"))
        if path.is_file() and not str(path.relative_to(out)).startswith(RUN_RECORDS)
    }


@pytest.fixture(scope="module")
def prepared_under(locales, data_bin, tmp_path_factory):
    """locale -> the demo corpus prepared under it with enough BPE merges for some of them to hold
    French letters: its output folder."""
    raw = data_bin.parent / "raw"
    runs = {}
    for locale, env in locales.items():
        out = tmp_path_factory.mktemp("prepared") / "out"
        words = [fairseq_tool("bahdanau-prepare-data"), "corpus", "--out", out]
        words += ["--train", raw / "train", "--valid", raw / "valid", "--test", raw / "test"]
        words += ["--source-lang", "en", "--target-lang", "fr", "--bpe", 200, "--workers", 1]
        runs[locale] = (command(words, env), out)
    return runs


@pytest.mark.parametrize("locale", OTHER_LOCALES)
def test_prepare_data_writes_the_same_bytes_under_any_locale(prepared_under, locale):
    reference = written_files(prepared_under[REFERENCE][1])
    assert not reference["bpe.codes"].isascii()  # merges of French letters
    completed, out = prepared_under[locale]
    output(completed)
    written = written_files(out)
    assert written.keys() == reference.keys()
    assert [name for name in reference if written[name] != reference[name]] == []


@pytest.fixture(scope="module")
def prepared_model(prepared_under, tmp_path_factory):
    """(the reference's output folder, a tiny RNNsearch trained a few steps on its data)."""
    completed, prepared = prepared_under[REFERENCE]
    output(completed)
    save_dir = tmp_path_factory.mktemp("rnnsearch")
    train(prepared / "data-bin", save_dir, "rnnsearch", "--max-update", "4")
    return prepared, save_dir / "checkpoint_last.pt"


@pytest.fixture(scope="module")
def interactive_under(locales, prepared_model):
    """locale -> fairseq-interactive run on SENTENCE."""
    prepared, checkpoint = prepared_model
    words = [fairseq_tool("fairseq-interactive"), prepared / "data-bin", "--user-dir", PLUGIN]
    words += ["--task", "translation_with_source_words", "--path", checkpoint, "--cpu"]
    words += ["--source-lang", "en", "--target-lang", "fr", "--max-len-b", 10]
    words += ["--tokenizer", "moses", "--bpe", "subword_nmt", "--bpe-codes", prepared / "bpe.codes"]
    stdin = (SENTENCE + "\n").encode("utf-8")
    return {locale: command(words, env, stdin) for locale, env in locales.items()}


def translations(completed: subprocess.CompletedProcess) -> bytes:
    """fairseq-interactive's output, less its W- lines (the time each sentence took)."""
    lines = output(completed).splitlines(keepends=True)
    return b"".join(line for line in lines if not line.startswith(b"W-"))


@pytest.mark.parametrize("locale", OTHER_LOCALES)
def test_fairseq_interactive_reads_and_writes_utf8_under_any_locale(interactive_under, locale):
    reference = translations(interactive_under[REFERENCE])
    [source] = [line for line in reference.decode("utf-8").splitlines() if line.startswith("S-")]
    assert "<unk>" not in source and "è" in source
    assert translations(interactive_under[locale]) == reference


# A Python program that does under its locale what two tools do, in one start of torch and fairseq
# (the locale is the process's: each part reads it as its own process does). As a user's program,
# it translates a sentence (its first argument, in JSON: ASCII, which the locale does not change)
# through the hub interface and through bahdanau-serve's translator, as the server loads it, and
# writes what they got as ASCII; then it runs bahdanau-evaluate's main on the arguments that
# follow. fairseq-interactive stays a process of its own: importing the plugin there changes how
# the process reads and writes (fairseq_patches.CHANGES), which a program that ran it first would
# keep.
HUB_SERVER_AND_EVALUATE = """
import json, sys
from pathlib import Path
from bahdanau_plugin.models import RNNsearchModel
from bahdanau_tools.serving.translator import Sentence, Translator
text, checkpoint, prepared = json.loads(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
options = dict(tokenizer="moses", bpe="subword_nmt", bpe_codes=str(prepared / "bpe.codes"),
               source_lang="en", target_lang="fr")
hub = RNNsearchModel.from_pretrained(str(checkpoint.parent), checkpoint_file=checkpoint.name,
                                     data_name_or_path=str(prepared / "data-bin"), **options)
print(ascii(hub.apply_bpe(hub.tokenize(text))), ascii(hub.translate(text, max_len_b=10)))
translator = Translator.load(checkpoint, prepared / "data-bin", cpu=True, **options)
pieces = translator.apply_bpe(translator.tokenize(text))
[translation] = translator.translate([Sentence(tuple(pieces), beam=2)])
print(ascii(pieces), ascii(translation.source_words), ascii(translation.hypotheses[0]), flush=True)
sys.argv = ["bahdanau-evaluate", *sys.argv[4:]]
from bahdanau_tools.evaluation import command_line
command_line.main()
"""


@pytest.fixture(scope="module")
def hub_server_and_evaluate_under(locales, prepared_model, tmp_path_factory):
    """locale -> (HUB_SERVER_AND_EVALUATE run under it, the evaluation's output folder)."""
    prepared, checkpoint = prepared_model
    runs = {}
    for locale, env in locales.items():
        out = tmp_path_factory.mktemp("evaluation")
        words = [sys.executable, "-c", HUB_SERVER_AND_EVALUATE, json.dumps(SENTENCE), checkpoint]
        words += [prepared, "--data", prepared / "data-bin", "--out-dir", out]
        words += ["--model", f"rnnsearch={checkpoint}", "--beam", 2, "--max-len-b", 10]
        runs[locale] = (command(words, env), out)
    return runs


def hub_and_server(run: tuple) -> str:
    """What the hub and the server's translator got, in a HUB_SERVER_AND_EVALUATE run that
    succeeded: its first two lines."""
    completed, _ = run
    return b"".join(output(completed).splitlines(keepends=True)[:2]).decode("ascii")


@pytest.mark.parametrize("locale", OTHER_LOCALES)
def test_the_hub_and_the_servers_translator_read_utf8_codes_under_any_locale(
    hub_server_and_evaluate_under, locale
):
    reference = hub_and_server(hub_server_and_evaluate_under[REFERENCE])
    assert "<unk>" not in reference.splitlines()[0] and "\\xe8" in reference
    assert hub_and_server(hub_server_and_evaluate_under[locale]) == reference


@pytest.mark.parametrize("locale", OTHER_LOCALES)
def test_bahdanau_evaluate_translates_and_scores_the_same_under_any_locale(
    hub_server_and_evaluate_under, locale
):
    """Its fairseq-generate reads the BPE codes in UTF-8 too."""
    completed, out = hub_server_and_evaluate_under[locale]
    output(completed)
    reference = hub_server_and_evaluate_under[REFERENCE][1]
    for name in ("rnnsearch/test.hyp", "bleu.txt"):
        assert (out / name).read_bytes() == (reference / name).read_bytes()
