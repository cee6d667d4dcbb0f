"""POST /translate and GET /health against a real bahdanau-serve process: the translations are
fairseq-interactive's, and the alignments are the model's alpha, by words."""

import re

import httpx
import pytest
import torch

from .conftest import interactive

BEAM = 5


@pytest.fixture(scope="module")
def printed(data_bin, serving_checkpoint, test_sentences):
    """fairseq-interactive --print-alignment on the test sentences: (D- translations, A- pairs)."""
    output = interactive(
        data_bin, serving_checkpoint, test_sentences, "--beam", BEAM, "--print-alignment"
    )
    translations = re.findall(r"^D-\d+\t\S+\t(.*)$", output, flags=re.M)
    alignments = [
        [tuple(map(int, pair.split("-"))) for pair in line.split()]
        for line in re.findall(r"^A-\d+\t(.*)$", output, flags=re.M)
    ]
    assert len(translations) == len(alignments) == len(test_sentences)
    return translations, alignments


@pytest.fixture(scope="module")
def served(server, test_sentences):
    """The test sentences translated in one request: they are batched together."""
    return server.translate({"text": test_sentences, "beam": BEAM})


def best(translation):
    return translation["hypotheses"][0]


def test_translations_are_fairseq_interactives_byte_for_byte(served, printed):
    translations, _ = printed
    assert [best(translation)["translation"] for translation in served] == translations


def test_alignment_has_a_row_per_target_word_and_a_column_per_source_word(served, test_sentences):
    for sentence, translation in zip(test_sentences, served):
        hypothesis = best(translation)
        assert translation["source_words"] == sentence.split() + ["<end>"]
        assert hypothesis["target_words"] == hypothesis["translation"].split() + ["<end>"]
        alpha = torch.tensor(hypothesis["alignment"])
        assert alpha.shape == (len(hypothesis["target_words"]), len(translation["source_words"]))


def test_alignment_rows_sum_to_one(served):
    """The demo data has no BPE: words are the model's tokens, so these are alpha's own rows."""
    for translation in served:
        alpha = torch.tensor(best(translation)["alignment"])
        assert torch.allclose(alpha.sum(dim=1), torch.ones(len(alpha)), atol=1e-5)


def test_alignment_argmax_is_what_print_alignment_prints(served, printed):
    """fairseq's hard alignment: for each target token but the end of sentence, the source token
    (end of sentence left out) with the largest alpha, as source-target pairs."""
    _, alignments = printed
    for translation, pairs in zip(served, alignments):
        alpha = torch.tensor(best(translation)["alignment"])[:-1, :-1]
        assert [
            (source, target) for target, source in enumerate(alpha.argmax(dim=1).tolist())
        ] == pairs


def test_one_sentence_may_be_sent_as_a_string(server, served, test_sentences):
    (alone,) = server.translate({"text": test_sentences[0], "beam": BEAM})
    assert (alone["source_words"], best(alone)["translation"]) == (
        served[0]["source_words"],
        best(served[0])["translation"],
    )


def test_nbest_gives_that_many_hypotheses_best_first(server, test_sentences):
    (translation,) = server.translate({"text": test_sentences[0], "beam": 4, "nbest": 3})
    scores = [hypothesis["score"] for hypothesis in translation["hypotheses"]]
    assert len(scores) == 3 and scores == sorted(scores, reverse=True)
    assert len({hypothesis["translation"] for hypothesis in translation["hypotheses"]}) == 3


def test_the_score_is_the_one_fairseq_interactive_prints(
    data_bin, serving_checkpoint, server, test_sentences
):
    output = interactive(data_bin, serving_checkpoint, test_sentences[:1], "--beam", BEAM)
    printed_score = float(re.search(r"^D-0\t(\S+)\t", output, flags=re.M).group(1))
    (translation,) = server.translate({"text": test_sentences[0], "beam": BEAM})
    assert best(translation)["score"] == pytest.approx(printed_score, abs=1e-4)


def test_source_words_are_the_words_typed_unknown_ones_and_moses_escapes_included(server):
    (translation,) = server.translate({"text": "the dog & the zorglub's cat"})
    assert translation["source_words"] == [
        "the",
        "dog",
        "&",
        "the",
        "zorglub",
        "'s",
        "cat",
        "<end>",
    ]


def test_a_body_sent_as_curl_d_sends_it_is_read_as_json(server):
    """curl -d says Content-Type: application/x-www-form-urlencoded."""
    response = server.post(
        b'{"text": "the dog"}', headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert response.status_code == 200, response.text


def test_health_names_the_model_its_architecture_device_and_uptime(server, serving_checkpoint):
    health = server.get("/health").json()
    assert health["model"] == str(serving_checkpoint)
    assert (health["architecture"], health["alignment"], health["device"]) == (
        "rnnsearch_50",
        True,
        "cpu",
    )
    assert health["uptime_s"] > 0


@pytest.mark.parametrize("path", ["/", "/health"])
def test_head_answers_as_get_does_without_the_body(server, path):
    head, get = httpx.head(server.url + path, timeout=60), server.get(path)
    assert head.status_code == get.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]


def test_rnnencdec_translations_come_with_alignment_null(encdec_server, data_bin, checkpoints):
    (translation,) = encdec_server.translate({"text": "the dog sees a cat", "beam": 2})
    output = interactive(data_bin, checkpoints["rnnencdec_50"], ["the dog sees a cat"], "--beam", 2)
    assert best(translation)["translation"] == re.search(
        r"^D-0\t\S+\t(.*)$", output, flags=re.M
    ).group(1)
    assert best(translation)["alignment"] is None
