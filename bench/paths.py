"""Where the repository, the plugin's folder (what --user-dir takes) and the shared Multi30k data
are: for the measurements, and for the tests (tests/support/paths.py)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLUGIN = str(REPO / "bahdanau_plugin")
MULTI30K = REPO.parent / "shared" / "data" / "multi30k"
