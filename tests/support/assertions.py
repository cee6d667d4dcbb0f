from bahdanau_plugin.errors import one_line


def assert_one_line_error(returncode, stderr, *expected):
    """The command failed, and the last line of its stderr, with no traceback before it, is
    `error: ...` holding each of expected."""
    assert returncode != 0
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: ")
    for text in expected:
        assert text in last, last


def assert_one_line_explanation(error, *expected):
    """error, raised by a tool's main in the test's process, is one the commands print as one
    `error: ...` line (bahdanau_plugin.errors.one_line), holding each of expected."""
    line = one_line(error)
    assert line is not None and "\n" not in line, repr(error)
    for text in expected:
        assert text in line, line
