"""Locales to run the commands under: C, and a Latin-1 locale generated for the tests. (glibc's
POSIX is C under another name, which Python reads as C too.)"""

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

from .tools import fairseq_env

LATIN1 = "de_DE.ISO-8859-1"
# Python's UTF-8 mode, which Python turns on under C, off: the locale's encoding is then
# the one a program gets, as where PYTHONUTF8=0 is set or another locale is chosen
WITHOUT_UTF8_MODE = {"PYTHONUTF8": "0"}
# the locale of the runs the others are compared with
REFERENCE = "C.UTF-8"


def generate_latin1_locale(directory: Path) -> Path:
    """de_DE in ISO-8859-1, compiled into directory with glibc's localedef (LOCPATH=directory
    selects it): no root needed, nothing installed. Skips the test where localedef or the locale's
    sources (Debian's `locales` package) are missing."""
    localedef = shutil.which("localedef")
    if localedef is None:
        pytest.skip("localedef is missing: install glibc's locale tools (Debian: libc-bin)")
    directory.mkdir(parents=True, exist_ok=True)
    completed = subprocess.run(
        [localedef, "-i", "de_DE", "-f", "ISO-8859-1", str(directory / LATIN1)],
        capture_output=True,
        text=True,
    )
    encoding = subprocess.run(
        [sys.executable, "-c", "import locale; print(locale.getpreferredencoding())"],
        env={**os.environ, "LOCPATH": str(directory), "LC_ALL": LATIN1},
        capture_output=True,
        text=True,
    ).stdout.strip()
    if encoding != "ISO-8859-1":
        pytest.skip(
            f"localedef could not make {LATIN1} (install Debian's `locales` package, which holds "
            f"its sources): {completed.stderr.strip()[-300:]}"
        )
    return directory


def locale_environments(latin1_directory: Path) -> Dict[str, dict]:
    """locale -> the environment of a command run under it: the reference (C.UTF-8), C without
    Python's UTF-8 mode, and the Latin-1 locale."""
    clean = {
        name: value
        for name, value in fairseq_env().items()
        if not name.startswith("LC_")
        and name not in ("LANG", "LANGUAGE", "PYTHONUTF8", "PYTHONIOENCODING")
    }
    return {
        REFERENCE: {**clean, "LC_ALL": REFERENCE},
        "C": {**clean, "LC_ALL": "C", **WITHOUT_UTF8_MODE},
        LATIN1: {
            **clean,
            "LC_ALL": LATIN1,
            "LOCPATH": str(latin1_directory),
            **WITHOUT_UTF8_MODE,
        },
    }
