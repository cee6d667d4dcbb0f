"""bench/benchmark.py: where its tables go, and what its systems run with."""

import pytest

from bench import benchmark


def test_a_missing_document_is_created_with_the_class_block(tmp_path):
    document = tmp_path / "new" / "performance.md"
    benchmark.check_writable(document)
    benchmark.write_into(document, "AVX2", "| table |")
    text = document.read_text(encoding="utf-8")
    assert (
        "### AVX2\n\n<!-- benchmark:AVX2:start -->\n| table |\n<!-- benchmark:AVX2:end -->" in text
    )


def test_a_class_block_is_replaced_and_the_other_classes_kept(tmp_path):
    document = tmp_path / "performance.md"
    document.write_text("# Performance\n\nprose\n", encoding="utf-8")
    benchmark.write_into(document, "AVX-512", "old wide")
    benchmark.write_into(document, "AVX2", "narrow")
    benchmark.write_into(document, "AVX-512", "new wide")
    text = document.read_text(encoding="utf-8")
    assert text.startswith("# Performance\n\nprose\n")
    assert "new wide" in text and "narrow" in text and "old wide" not in text
    assert text.index("AVX-512:start") < text.index("AVX2:start")


def test_an_unwritable_document_fails_before_any_measurement(tmp_path):
    (tmp_path / "file").write_text("", encoding="utf-8")
    with pytest.raises(OSError):
        benchmark.check_writable(tmp_path / "file" / "performance.md")


def test_what_a_training_run_compiled_is_read_from_its_log_with_the_seconds_it_took():
    log = "\n".join(
        f"2026-11-28 12:00:0{i} | INFO | bahdanau_plugin.speed.compiling | {line}"
        for i, line in enumerate(
            (
                "compiled RNNsearchDecoder.step (with gradients, first for 80 rows) in 12.5 s",
                "compiled RNNsearchDecoder.step (without gradients, first for 80 rows) in 3.1 s",
            )
        )
    )
    compiled = benchmark.compilations(log + "\n| INFO | train_inner | epoch 001")
    assert compiled == [
        "compiled RNNsearchDecoder.step (with gradients, first for 80 rows) in 12.5 s",
        "compiled RNNsearchDecoder.step (without gradients, first for 80 rows) in 3.1 s",
    ]
    assert benchmark.compiling_seconds(compiled) == 15.6


def test_a_compilation_within_a_recording_counts_once_in_the_seconds_in_all():
    compiled = [
        "compiled RNNsearchDecoder.step (with gradients, first for 80 rows) in 13.6 s",
        "recorded RNNsearchDecoder.recur as CUDA graphs for 80 x 52 x 40 (...) in 14.1 s",
        "recorded RNNsearchDecoder.recur as CUDA graphs for 80 x 52 x 56 (...) in 0.2 s",
        "compiled RNNsearchDecoder.step (without gradients, first for 80 rows) in 3.0 s",
    ]
    assert benchmark.compiling_seconds(compiled) == 14.1 + 0.2 + 3.0


def test_fairseq_generate_s_log_lines_of_what_it_compiled_are_read_too():
    log = (
        "INFO:bahdanau_plugin.speed.compiling:compiled RNNsearchDecoder.step (without "
        "gradients, first for 250 rows) in 2.0 s\n"
        "INFO:fairseq_cli.generate:Translated 1,000 sentences (17,000 tokens) in 5.2s"
    )
    assert benchmark.compilations(log) == [
        "compiled RNNsearchDecoder.step (without gradients, first for 250 rows) in 2.0 s"
    ]


def test_where_the_fast_path_stepped_aside_is_read_from_either_log():
    """A speed measured after the fast path warned is not the fast path's: the kit reports it."""
    from bench.common import fast_path_warnings

    aside = (
        "RNNsearchDecoder's recurrence could not be recorded as a CUDA graph (INTERNAL ASSERT "
        "FAILED): it runs without graphs"
    )
    log = (
        f"2026-11-28 12:00:01 | WARNING | bahdanau_plugin.speed.capture | {aside}\n"
        "2026-11-28 12:00:02 | INFO | bahdanau_plugin.speed.compiling | compiled "
        "RNNsearchDecoder.step (with gradients, first for 80 rows) in 12.5 s\n"
        "WARNING:bahdanau_plugin.speed.compiling:RNNsearchDecoder.next_words runs eagerly: "
        "a hook is on RNNsearchDecoder (while it is there)\n"
        "WARNING:fairseq.tasks.translation:not a fast path warning\n"
    )
    assert fast_path_warnings(log) == [
        aside,
        "RNNsearchDecoder.next_words runs eagerly: a hook is on RNNsearchDecoder (while "
        "it is there)",
    ]


def test_lstm_trains_with_the_malloc_thresholds_that_rnnsearch_s_training_sets():
    from bahdanau_plugin.freed_memory import REUSE_BYTES

    lstm_training = benchmark.TRAINING_ENVIRONMENT["lstm"]
    assert lstm_training["MALLOC_MMAP_THRESHOLD_"] == str(REUSE_BYTES)
    assert lstm_training["MALLOC_TRIM_THRESHOLD_"] == str(REUSE_BYTES)
    assert set(benchmark.TRAINING_ENVIRONMENT) == {"lstm"}  # plain keeps glibc's defaults
    assert not any(
        name.startswith("MALLOC_") for _, env in benchmark.SYSTEMS.values() for name in env
    )
