"""speed/setting.py: the fast path's setting, read from the environment."""

import pytest

from bahdanau_plugin.errors import ConfigurationError
from bahdanau_plugin.speed import setting


@pytest.fixture
def environment(monkeypatch):
    for name in (setting.SETTING, setting.FORMER_SETTING):
        monkeypatch.delenv(name, raising=False)
    setting.mode.cache_clear()
    yield monkeypatch
    setting.mode.cache_clear()


def test_the_default_is_auto(environment):
    assert setting.mode() == "auto"


def test_the_setting_is_read_whatever_its_case(environment):
    environment.setenv("BAHDANAU_FAST_PATH", " Plain ")
    assert setting.mode() == "plain"


def test_the_former_name_is_read_where_the_new_one_is_not_set(environment):
    environment.setenv("BAHDANAU_CPU_FAST_PATH", "plain")
    assert setting.mode() == "plain"
    setting.mode.cache_clear()
    environment.setenv("BAHDANAU_FAST_PATH", "auto")
    assert setting.mode() == "auto"


def test_an_unknown_setting_is_refused_in_one_line_that_names_the_variable(environment):
    environment.setenv("BAHDANAU_CPU_FAST_PATH", "fastest")
    with pytest.raises(ConfigurationError, match=r"^BAHDANAU_CPU_FAST_PATH=fastest: use auto"):
        setting.mode()


def test_the_setting_is_read_once_per_process(environment):
    assert setting.mode() == "auto"
    environment.setenv("BAHDANAU_FAST_PATH", "plain")
    assert setting.mode() == "auto"
