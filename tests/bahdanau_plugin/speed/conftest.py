import pytest

from bahdanau_plugin.speed.cpu.measured_choice import CHOOSER


@pytest.fixture
def fast_path_setting(monkeypatch):
    """set(setting): BAHDANAU_FAST_PATH as this process would have read it, for the models the
    test builds after, with none of the choices made before."""

    def set_setting(setting: str) -> None:
        monkeypatch.setattr(CHOOSER, "_setting", setting)
        monkeypatch.setattr(CHOOSER, "choices", {})
        monkeypatch.setattr(CHOOSER, "spent", 0.0)

    return set_setting
