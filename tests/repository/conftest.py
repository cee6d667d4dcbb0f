import pytest

from ..support.locales import generate_latin1_locale, locale_environments
from ..support.shared import made_once


@pytest.fixture(scope="session")
def locales(tmp_path_factory):
    """locale -> the environment of a command run under it (support/locales.py), the Latin-1 locale
    generated once per session."""
    return locale_environments(made_once(tmp_path_factory, "locales", generate_latin1_locale))
