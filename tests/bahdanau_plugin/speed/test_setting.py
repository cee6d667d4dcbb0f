"""speed/setting.py: the fast path's setting, read from the environment."""

import pytest

from bahdanau_plugin.errors import ConfigurationError
from bahdanau_plugin.speed import setting


@pytest.fixture
def environment(monkeypatch):
    for name in (setting.SETTING, setting.FORMER_SETTING, setting.SEARCH_SETTING):
        monkeypatch.delenv(name, raising=False)
    setting.mode.cache_clear()
    setting.cpu_search_compile_after.cache_clear()
    yield monkeypatch
    setting.mode.cache_clear()
    setting.cpu_search_compile_after.cache_clear()


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


def test_a_search_on_a_cpu_compiles_after_a_minute_by_default(environment):
    assert setting.cpu_search_compile_after() == 60.0


def test_the_seconds_before_a_cpu_search_compiles_are_read(environment):
    environment.setenv("BAHDANAU_CPU_SEARCH_COMPILE_AFTER", " 0 ")
    assert setting.cpu_search_compile_after() == 0.0
    setting.cpu_search_compile_after.cache_clear()
    environment.setenv("BAHDANAU_CPU_SEARCH_COMPILE_AFTER", "2.5")
    assert setting.cpu_search_compile_after() == 2.5


@pytest.mark.parametrize("value", ["-1", "soon", "inf", "nan", "1e3"])
def test_seconds_that_are_not_a_plain_number_are_refused_in_one_line(environment, value):
    environment.setenv("BAHDANAU_CPU_SEARCH_COMPILE_AFTER", value)
    with pytest.raises(
        ConfigurationError, match=rf"^BAHDANAU_CPU_SEARCH_COMPILE_AFTER={value}: use the seconds"
    ):
        setting.cpu_search_compile_after()
