"""bench/benchmark.py: where its tables go."""

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
