"""bahdanau-prepare-data multi30k on a slice of the real Multi30k: binaries, cleaning, case,
vocabulary, round trip."""

import gzip
from collections import Counter

import pytest
from fairseq import options, tasks
from fairseq.data import Dictionary
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

from bahdanau_tools.data.binarize import FAIRSEQ_SPECIALS
from bahdanau_tools.data.multi30k import download_multi30k, multi30k_splits

from .conftest import EXTRA_TEST_STEM, MULTI30K_MAX_LEN
from .corpora import sentence_pairs, write_multi30k
from .scripts import binarized_sentences, read_summary, text_lines

ROUND_TRIP_SHARE = 0.99


def raw_lines(slice_dir, stem, language):
    with gzip.open(slice_dir / f"{stem}.{language}.gz", "rt", encoding="utf-8") as lines:
        return [line.rstrip("\n") for line in lines]


def interactive_encoders(out):
    """The tokenizer and BPE that fairseq-interactive builds from the flags docs/data.md shows."""
    parser = options.get_interactive_generation_parser()
    arguments = options.parse_args_and_arch(
        parser,
        [
            str(out / "data-bin"),
            "--path",
            "unused.pt",
            "--source-lang",
            "en",
            "--target-lang",
            "fr",
            "--tokenizer",
            "moses",
            "--bpe",
            "subword_nmt",
            "--bpe-codes",
            str(out / "bpe.codes"),
        ],
    )
    config = convert_namespace_to_omegaconf(arguments)
    task = tasks.setup_task(config.task)
    return task.build_tokenizer(config.tokenizer), task.build_bpe(config.bpe)


@pytest.mark.parametrize("split", ["train", "valid", "test", "test1"])
def test_binaries_load_with_one_sentence_per_kept_pair(multi30k_bpe, split):
    kept = read_summary(multi30k_bpe)["splits"][split]["cleaning"]["kept"]
    assert [binarized_sentences(multi30k_bpe, split, language) for language in ("en", "fr")] == [
        kept,
        kept,
    ]


def test_no_training_pair_exceeds_max_len_words(multi30k_bpe):
    for language in ("en", "fr"):
        lengths = [
            len(line.split()) for line in text_lines(multi30k_bpe / "tok" / f"train.{language}")
        ]
        assert 0 < max(lengths) <= MULTI30K_MAX_LEN


def test_tokenized_text_keeps_every_capital_letter_of_the_raw_text(multi30k_slice, multi30k_bpe):
    for language in ("en", "fr"):
        raw = raw_lines(multi30k_slice, "test_2016_flickr", language)
        tokenized = text_lines(multi30k_bpe / "tok" / f"test.{language}")
        assert [[c for c in line if c.isupper()] for line in tokenized] == [
            [c for c in line if c.isupper()] for line in raw
        ]


def test_shortlist_is_the_n_most_frequent_words_plus_fairseqs_specials(multi30k_shortlist):
    for language in ("en", "fr"):
        dictionary = Dictionary.load(str(multi30k_shortlist / "data-bin" / f"dict.{language}.txt"))
        counts = Counter(
            word
            for line in text_lines(multi30k_shortlist / "tok" / f"train.{language}")
            for word in line.split()
        )
        shortlist = set(dictionary.symbols[FAIRSEQ_SPECIALS:])
        assert len(dictionary) == 1000 + FAIRSEQ_SPECIALS
        assert min(counts[word] for word in shortlist) >= max(
            counts[word] for word in counts.keys() - shortlist
        )


def test_shortlist_maps_the_other_words_to_unk(multi30k_shortlist):
    summary = read_summary(multi30k_shortlist)
    assert all(0 < percent < 10 for percent in summary["splits"]["train"]["unk_percent"].values())


def test_bpe_codes_hold_the_requested_merges(multi30k_bpe):
    codes = text_lines(multi30k_bpe / "bpe.codes")
    assert codes[0].startswith("#version")
    assert len(codes[1:]) == 1000


def test_bpe_splits_words_with_fairseqs_separator(multi30k_bpe):
    tokenized = text_lines(multi30k_bpe / "tok" / "test.en")
    segmented = text_lines(multi30k_bpe / "bpe" / "test.en")
    assert [line.replace("@@ ", "") for line in segmented] == tokenized
    assert sum("@@ " in line for line in segmented) > len(segmented) / 2


def test_fairseq_interactive_flags_encode_raw_source_lines_as_the_pipeline_did(
    multi30k_slice, multi30k_bpe
):
    tokenizer, bpe = interactive_encoders(multi30k_bpe)
    raw = raw_lines(multi30k_slice, "test_2016_flickr", "en")
    assert [bpe.encode(tokenizer.encode(line)) for line in raw] == text_lines(
        multi30k_bpe / "bpe" / "test.en"
    )


def test_decoding_binarized_references_gives_back_the_raw_line_up_to_spacing_for_99_percent(
    multi30k_slice, multi30k_bpe
):
    """Raw French line -> pipeline (Moses + BPE) -> fairseq's decoding (BPE removal + Moses
    detokenizer) equals the raw line with its runs of spaces collapsed, as sacrebleu reads it."""
    tokenizer, bpe = interactive_encoders(multi30k_bpe)
    raw = raw_lines(multi30k_slice, "test_2016_flickr", "fr")
    decoded = [
        tokenizer.decode(bpe.decode(line)) for line in text_lines(multi30k_bpe / "bpe" / "test.fr")
    ]
    same = sum(back == " ".join(line.split()) for back, line in zip(decoded, raw))
    assert len(decoded) == len(raw)
    assert same >= ROUND_TRIP_SHARE * len(raw)


def test_raw_references_are_the_untokenized_test_lines(multi30k_slice, multi30k_bpe):
    assert text_lines(multi30k_bpe / "raw" / "test.fr") == [
        " ".join(line.split()) for line in raw_lines(multi30k_slice, "test_2016_flickr", "fr")
    ]


def test_other_test_sets_beside_test_2016_flickr_become_test1_onwards(multi30k_bpe):
    summary = read_summary(multi30k_bpe)
    assert {name: split["origin"] for name, split in summary["splits"].items()} == {
        "train": "train",
        "valid": "val",
        "test": "test_2016_flickr",
        "test1": EXTRA_TEST_STEM,
    }


@pytest.mark.parametrize("missing", ["fr", "en"])
def test_a_test_set_with_one_side_alone_is_left_out_in_a_warning_naming_its_file(
    tmp_path, capsys, missing
):
    """It was left out without a word, the test sets after it numbered as if it were not there."""
    stems = ("train", "val", "test_2016_flickr", "test_2017_flickr", "test_2018_flickr")
    folder = write_multi30k(tmp_path / "multi30k", {stem: sentence_pairs(3) for stem in stems})
    (folder / f"test_2017_flickr.{missing}.gz").unlink()
    splits = multi30k_splits(folder)
    assert [(split.name, split.origin) for split in splits][3:] == [("test1", "test_2018_flickr")]
    (there,) = {"en", "fr"} - {missing}
    assert capsys.readouterr().err.splitlines() == [
        f"warning: {folder / f'test_2017_flickr.{there}.gz'} has no test_2017_flickr.{missing}.gz "
        "beside it: that test set is not prepared, and the other extra test sets are numbered "
        "test1, test2, ... without it"
    ]


def test_summary_reports_pairs_words_dictionary_sizes_and_unk_share(multi30k_bpe):
    summary = read_summary(multi30k_bpe)
    train = summary["splits"]["train"]
    assert train["cleaning"]["read"] == 3000
    assert train["cleaning"]["too_long"] > 0
    assert train["words"]["en"] > train["cleaning"]["kept"]
    assert train["tokens"]["en"] >= train["words"]["en"]
    assert train["unk_percent"] == {"en": 0.0, "fr": 0.0}
    assert (
        summary["dictionary_size"]["en"] == summary["dictionary_size"]["fr"]
    )  # one joint dictionary
    assert "test_2016_flickr" in (multi30k_bpe / "summary.txt").read_text()


def test_download_fetches_every_published_split_from_the_repository(tmp_path):
    published = write_multi30k(
        tmp_path / "repository",
        {
            stem: sentence_pairs(3)
            for stem in ("train", "val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco")
        },
    )
    downloaded = download_multi30k(tmp_path / "download", base_url=published.as_uri())
    assert sorted(path.name for path in downloaded.iterdir()) == sorted(
        path.name for path in published.iterdir()
    )
