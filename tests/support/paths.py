from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MULTI30K = REPO.parent / "shared" / "data" / "multi30k"
PLUGIN = str(REPO / "bahdanau_plugin")  # what --user-dir takes
