def assert_one_line_error(returncode, stderr, *expected):
    """The command failed, and the last line of its stderr, with no traceback before it, is
    `error: ...` holding each of expected."""
    assert returncode != 0
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: ")
    for text in expected:
        assert text in last, last
