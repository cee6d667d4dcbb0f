"""Joint BPE applied to a tokenized file (bahdanau_tools/data/bpe.py)."""

import re

from bahdanau_tools.data.bpe import learn_joint_bpe, segment_file


def test_segmenting_a_file_shows_its_progress_in_lines_on_stderr(tmp_path, capsys):
    text = tmp_path / "train.en"
    text.write_text("the lower lowest newer\n" * 30, encoding="utf-8")
    learn_joint_bpe([text], tmp_path / "codes", merges=5, workers=1)
    capsys.readouterr()
    segment_file(text, tmp_path / "train.bpe.en", tmp_path / "codes", workers=1)
    assert re.search(r"segmenting train\.en: 100%.*30/30 \[", capsys.readouterr().err)
