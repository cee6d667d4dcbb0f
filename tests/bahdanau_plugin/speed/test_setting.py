"""speed/setting.py: the fast path's setting, read from the environment."""

import os
import subprocess
import sys

import pytest

from bahdanau_plugin.errors import ConfigurationError
from bahdanau_plugin.speed import setting

TEXT = dict(capture_output=True, text=True, check=False)


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


def test_an_empty_torch_cache_folder_is_read_as_unset_not_as_the_working_folder(tmp_path):
    """TORCHINDUCTOR_CACHE_DIR= (a script's unset variable): torch would take the working folder
    for its cache and fill it as the step compiles; the fast path imported, torch's default."""
    where = "from torch._inductor.runtime.cache_dir_utils import cache_dir, default_cache_dir"
    check = f"import bahdanau_plugin.speed; {where}; print(cache_dir() == default_cache_dir())"
    environment = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": ""}
    run = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, env=environment, **TEXT)
    assert run.stdout.split() == ["True"], run.stderr
