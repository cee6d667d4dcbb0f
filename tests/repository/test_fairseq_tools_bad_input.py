"""Bad input gets a clear one-line answer, and nothing is lost."""

import os
import re
import shutil

import pytest

from ..support.assertions import assert_one_line_error
from ..support.demo_data import preprocess
from ..support.malicious import malicious_copy
from ..support.paths import PLUGIN
from ..support.tools import COMPILED, fairseq_env, tool_on_bytes
from ..support.training import train_command

pytestmark = pytest.mark.long  # run first: tests/conftest.py

NORMAL = "the dog sees a cat"


def test_interactive_answers_every_line_of_a_hostile_stream_in_order(data_bin, checkpoints):
    lines = [
        NORMAL.encode(),
        b"",
        " ".join(["the big dog sees a small cat"] * 143)[:6000].encode(),  # about 1,000 words
        b"zorglub blorp quux",
        b"the red \xff\xfe car sees a \xc3( dog",
        b"?! ... , ; :",
        b"a small red car",
    ]
    env = {**fairseq_env(), "PYTHONIOENCODING": "utf-8"}  # a strict decoder, the hardest case
    returncode, stdout, stderr = _interactive(
        data_bin, checkpoints, b"\n".join(lines) + b"\n", env=env
    )
    assert returncode == 0, stderr[-2000:]
    answered = [int(number) for number in re.findall(r"^H-(\d+)\t", stdout, flags=re.M)]
    assert answered == list(range(len(lines)))
    sources = re.findall(r"^S-\d+\t(.*)$", stdout, flags=re.M)
    assert sources[0] == NORMAL and sources[-1] == "a small red car"
    assert sources[3] == "<unk> <unk> <unk>"


def _interactive(data_bin, checkpoints, stdin: bytes, *options, env=None):
    return tool_on_bytes(
        "fairseq-interactive",
        data_bin,
        "--user-dir",
        PLUGIN,
        *options,
        "--path",
        checkpoints["rnnsearch_50"],
        "--source-lang",
        "en",
        "--target-lang",
        "fr",
        "--beam",
        "2",
        "--max-len-b",
        "10",
        "--cpu",
        stdin=stdin,
        env=env,
    )


def test_interactive_skips_a_line_over_max_source_positions_in_one_line_and_translates_the_next(
    data_bin, checkpoints
):
    """With fairseq's --skip-invalid-size-inputs-valid-test, and the plugin's task to name it."""
    too_long = " ".join(
        ["the big dog sees a small cat"] * 715
    )  # 5,005 tokens: over fairseq's 1,024
    returncode, stdout, stderr = _interactive(
        data_bin,
        checkpoints,
        f"{NORMAL}\n{too_long}\n{NORMAL}\n".encode(),
        "--task",
        "translation_with_source_words",
        "--skip-invalid-size-inputs-valid-test",
    )
    assert returncode == 0, stderr[-2000:]
    assert [int(number) for number in re.findall(r"^H-(\d+)\t", stdout, flags=re.M)] == [0, 2]
    (warning,) = [line for line in stderr.splitlines() if line.startswith("warning: ")]
    assert (
        "sentence 1 is not translated: its 5,006 tokens" in warning
        and "--max-source-positions 1024" in warning
    )
    assert "Traceback" not in stderr


def test_without_the_skip_option_interactive_stops_at_a_long_line_naming_the_option(
    data_bin, checkpoints
):
    """fairseq's own behaviour, not a silent loss: the lines before it are translated."""
    too_long = " ".join(["the big dog sees a small cat"] * 200)  # 1,400 tokens
    returncode, stdout, stderr = _interactive(
        data_bin, checkpoints, f"{NORMAL}\n{too_long}\n{NORMAL}\n".encode()
    )
    assert returncode != 0
    assert re.findall(r"^H-(\d+)\t", stdout, flags=re.M) == ["0"]
    assert "--skip-invalid-size-inputs-valid-test" in stderr


def test_interactive_does_not_glue_a_byte_order_mark_to_the_first_word(data_bin, checkpoints):
    returncode, stdout, stderr = _interactive(
        data_bin, checkpoints, b"\xef\xbb\xbf" + NORMAL.encode() + b"\n"
    )
    assert returncode == 0, stderr[-2000:]
    assert re.findall(r"^S-0\t(.*)$", stdout, flags=re.M) == [NORMAL]


@pytest.fixture(scope="module")
def sources_of_an_input_file(data_bin, checkpoints, tmp_path_factory):
    """fairseq-interactive --input of a file with a byte order mark, a stray carriage return and
    invalid UTF-8, each on a line of its own, and a line after them, which fairseq opened as strict
    UTF-8 with universal newlines: the sources it showed, S-N lines, as (N, source). One run for
    the tests of each line: a second each, against four for a run of its own."""
    path = tmp_path_factory.mktemp("input") / "input.en"
    lines = [
        b"\xef\xbb\xbf" + NORMAL.encode(),
        b"the big dog\rsees a small cat",
        b"the red \xff\xfe car sees a \xc3( dog",
        b"a small red car",
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    returncode, stdout, stderr = _interactive(data_bin, checkpoints, b"", "--input", path)
    assert returncode == 0, stderr[-2000:]
    return re.findall(r"^S-(\d+)\t(.*)$", stdout, flags=re.M)


def test_interactive_translates_each_line_of_an_input_file_once_stray_carriage_returns_included(
    sources_of_an_input_file,
):
    """Read with universal newlines, the line was translated as two, and the translations after it
    had the numbers of the lines before them."""
    assert [number for number, _ in sources_of_an_input_file] == ["0", "1", "2", "3"]
    assert sources_of_an_input_file[1] == ("1", "the big dog sees a small cat")


def test_interactive_translates_an_input_file_with_invalid_utf8_past_its_bad_bytes(
    sources_of_an_input_file,
):
    """Read as strict UTF-8, the file ended the session in a traceback before any translation."""
    assert sources_of_an_input_file[2:] == [
        ("2", "the red <unk> car sees a <unk> dog"),
        ("3", "a small red car"),
    ]


def test_interactive_does_not_glue_an_input_file_s_byte_order_mark_to_the_first_word(
    sources_of_an_input_file,
):
    assert sources_of_an_input_file[0] == ("0", NORMAL)


def test_a_truncated_checkpoint_is_a_one_line_error_naming_the_file(
    data_bin, checkpoints, tmp_path
):
    truncated = tmp_path / "truncated.pt"
    data = checkpoints["rnnsearch_50"].read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    returncode, _, stderr = tool_on_bytes(
        "fairseq-generate", data_bin, "--user-dir", PLUGIN, "--path", truncated, "--cpu"
    )
    assert_one_line_error(returncode, stderr, str(truncated), "incomplete")


def test_a_checkpoint_trained_with_another_dictionary_is_refused_with_a_clear_error(
    data_bin, checkpoints, tmp_path
):
    for lang, text in (("en", "a red car\nthe dog\n"), ("fr", "une voiture rouge\nle chien\n")):
        (tmp_path / f"other.{lang}").write_text(text)
    preprocess(
        "--joined-dictionary",
        "--trainpref",
        tmp_path / "other",
        "--testpref",
        tmp_path / "other",
        "--destdir",
        tmp_path / "other",
    )
    returncode, _, stderr = tool_on_bytes(
        "fairseq-generate",
        tmp_path / "other",
        "--user-dir",
        PLUGIN,
        "--path",
        checkpoints["rnnsearch_50"],
        "--cpu",
    )
    assert_one_line_error(returncode, stderr, "source dictionary", "dict.*.txt")


def translating(tool, data_bin, checkpoint, *options):
    """tool (fairseq-generate, fairseq-interactive) translating with checkpoint: (return code,
    stdout, stderr); fairseq-interactive reads NORMAL."""
    return tool_on_bytes(
        tool, data_bin, "--user-dir", PLUGIN, "--path", checkpoint, *options, "--cpu",
        stdin=NORMAL.encode(),
    )  # fmt: skip


@pytest.mark.parametrize("tool", ["fairseq-generate", "fairseq-interactive"])
def test_print_alignment_with_rnnencdec_is_a_one_line_error_saying_it_has_no_attention(
    data_bin, checkpoints, tool
):
    returncode, _, stderr = translating(
        tool, data_bin, checkpoints["rnnencdec_50"], "--print-alignment"
    )
    assert_one_line_error(
        returncode, stderr, "--print-alignment", "rnnencdec", "rnnsearch checkpoint"
    )


@pytest.mark.parametrize(
    "environment", [{}, {"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}], ids=["", "unsafe-loading-set"]
)
def test_a_checkpoint_whose_pickle_would_run_code_is_refused_saying_why(
    data_bin, checkpoints, tmp_path, environment
):
    """Also where the environment asks torch to load unsafely, as advice for old fairseq
    checkpoints often says: the plugin's loading never honours it."""
    marker = tmp_path / "pwned"
    malicious = malicious_copy(checkpoints["rnnsearch_50"], tmp_path / "malicious.pt", marker)
    returncode, _, stderr = tool_on_bytes(
        "fairseq-generate",
        data_bin,
        "--user-dir",
        PLUGIN,
        "--path",
        malicious,
        "--cpu",
        env={**fairseq_env(), **environment},
    )
    assert returncode == 1
    assert_one_line_error(returncode, stderr, str(malicious), "posix.system", "could run code")
    assert not marker.exists()


@pytest.mark.parametrize("tool", ["fairseq-generate", "fairseq-interactive"])
def test_diverse_beam_groups_are_a_one_line_error_before_any_translation(
    data_bin, checkpoints, tool
):
    """fairseq 0.12's diverse beam search fails with an IndexError past its first sentences."""
    returncode, stdout, stderr = translating(
        tool, data_bin, checkpoints["rnnsearch_50"], "--diverse-beam-groups=2", "--beam=4"
    )
    assert_one_line_error(returncode, stderr, "--diverse-beam-groups", "--diversity-rate")
    assert not re.search(r"^H-", stdout, flags=re.M)


def test_constraints_given_to_fairseq_generate_are_a_one_line_error_saying_where_they_are_read(
    data_bin, checkpoints
):
    """Its test set holds no constraints: it translated without them, without a word."""
    returncode, stdout, stderr = translating(
        "fairseq-generate", data_bin, checkpoints["rnnsearch_50"], "--constraints"
    )
    assert_one_line_error(returncode, stderr, "--constraints is read by fairseq-interactive")
    assert not re.search(r"^H-", stdout, flags=re.M)


def test_constraints_with_a_search_that_takes_none_are_a_one_line_error_before_any_translation(
    data_bin, checkpoints
):
    """fairseq's --match-source-len search raised NotImplementedError at the first batch."""
    returncode, stdout, stderr = translating(
        "fairseq-interactive", data_bin, checkpoints["rnnsearch_50"], "--constraints",
        "--match-source-len",
    )  # fmt: skip
    assert_one_line_error(
        returncode, stderr, "--match-source-len and --constraints each ask fairseq for a search"
    )
    assert not re.search(r"^H-", stdout, flags=re.M)


@pytest.mark.parametrize(
    "path, expected",
    [("missing.pt", ["checkpoint", "missing.pt not found"]), ("", ["is a folder", "checkpoint_"])],
    ids=["missing", "folder"],
)
def test_a_path_that_is_not_a_checkpoint_file_is_a_one_line_error_naming_it(
    data_bin, tmp_path, path, expected
):
    returncode, _, stderr = tool_on_bytes(
        "fairseq-generate", data_bin, "--user-dir", PLUGIN, "--path", tmp_path / path, "--cpu"
    )
    assert returncode == 1
    assert_one_line_error(returncode, stderr, str(tmp_path / path), *expected)


def _resume(data_bin, save_dir, checkpoint, arch, *options):
    """fairseq-train of arch into a --save-dir that holds checkpoint as its checkpoint_last.pt."""
    save_dir.mkdir()
    shutil.copy(checkpoint, save_dir / "checkpoint_last.pt")
    command = train_command(data_bin, save_dir, arch, "--max-update", "8", *options)
    return tool_on_bytes("fairseq-train", *command)


def test_resuming_from_a_checkpoint_of_another_architecture_is_one_line_naming_both(
    data_bin, checkpoints, tmp_path
):
    save_dir = tmp_path / "save"
    returncode, _, stderr = _resume(data_bin, save_dir, checkpoints["rnnencdec_50"], "rnnsearch_50")
    assert returncode == 1
    assert_one_line_error(
        returncode,
        stderr,
        f"cannot resume from {save_dir / 'checkpoint_last.pt'}",
        "its architecture is rnnencdec_50 and this run's is rnnsearch_50",
        "new --save-dir",
        "--arch rnnencdec_50",
    )
    saved = checkpoints["rnnencdec_50"].read_bytes()
    assert os.listdir(save_dir) == ["checkpoint_last.pt"]
    assert (save_dir / "checkpoint_last.pt").read_bytes() == saved


def test_resuming_with_other_sizes_is_one_line_naming_the_sizes_that_differ(
    data_bin, checkpoints, tmp_path
):
    returncode, _, stderr = _resume(
        data_bin,
        tmp_path / "save",
        checkpoints["rnnsearch_50"],
        "rnnsearch_50",
        "--encoder-hidden-dim",
        "9",
        "--batch-size",  # the run's own option, which sizes no parameter: not named
        "5",
    )
    assert returncode == 1
    assert_one_line_error(
        returncode, stderr, "encoder_hidden_dim is 4 there and 9 here)", "new --save-dir"
    )


def test_an_unknown_architecture_is_fairseqs_argument_error(data_bin, tmp_path):
    returncode, _, stderr = tool_on_bytes(
        "fairseq-train", data_bin, "--user-dir", PLUGIN, "--arch", "rnnsearch_70", "--cpu"
    )
    assert returncode == 2
    assert "argument --arch" in stderr and "invalid choice: 'rnnsearch_70'" in stderr


@pytest.mark.parametrize("value", ["0", "-5"])
def test_a_non_positive_size_is_fairseqs_argument_error_before_any_data_is_read(tmp_path, value):
    missing_data = tmp_path / "no-data-here"
    command = train_command(missing_data, tmp_path, "rnnsearch_50", "--encoder-hidden-dim", value)
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command)
    assert returncode == 2
    assert "usage: fairseq-train" in stderr
    assert f"error: argument --encoder-hidden-dim: {value} is not a positive integer" in stderr


def test_a_dropout_of_1_is_fairseqs_argument_error_before_any_data_is_read(tmp_path):
    missing_data = tmp_path / "no-data-here"
    command = train_command(missing_data, tmp_path, "rnnsearch_50", "--dropout", "1")
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command)
    assert returncode == 2
    assert "error: argument --dropout: 1 is not a probability from 0 to under 1" in stderr


def test_left_padded_targets_are_refused_in_one_line(data_bin, tmp_path):
    """The decoder reads each target from its first token: left padding would change its states."""
    returncode, _, stderr = tool_on_bytes(
        "fairseq-train",
        *train_command(
            data_bin, tmp_path, "rnnsearch_50", "--max-update", "1", "--left-pad-target"
        ),
    )
    assert_one_line_error(returncode, stderr, "--left-pad-target")


def test_a_search_whose_compiler_cannot_make_its_cache_folder_translates_eagerly_after_a_warning(
    data_bin, checkpoints, tmp_path
):
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("")
    cache = not_a_folder / "cache"
    env = {**fairseq_env(), **COMPILED, "TORCHINDUCTOR_CACHE_DIR": str(cache)}
    returncode, stdout, stderr = _interactive(
        data_bin, checkpoints, b"the dog sees a cat\n", env=env
    )
    assert returncode == 0, stderr[-2000:]
    assert re.search(r"^H-0\t", stdout, flags=re.M)
    warnings = re.findall(r"WARNING.*bahdanau_plugin\.speed.*", stdout + stderr)
    assert warnings and all(
        f"runs eagerly: no cache folder for torch's compiler ([Errno 20] Not a directory: '{cache}'"
        f"): set TORCHINDUCTOR_CACHE_DIR to one" in warning
        for warning in warnings
    ), warnings
