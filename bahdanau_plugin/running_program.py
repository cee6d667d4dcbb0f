"""Which program this process runs: one of fairseq's command-line tools, or one of the plugin's
own commands. What the plugin changes for a tool is changed only where that tool runs."""

import os
import sys
from typing import Optional


def running_fairseq_tool() -> Optional[str]:
    """The fairseq command-line tool this process runs (``fairseq-train``, ``fairseq-interactive``,
    ...), as its console script, as ``python -m fairseq_cli.NAME`` or in a worker process that one
    of them started; None in any other program."""
    module = getattr(getattr(sys.modules.get("__main__"), "__spec__", None), "name", None) or ""
    if module.startswith("fairseq_cli."):
        return "fairseq-" + module[len("fairseq_cli.") :].replace("_", "-")
    command = os.path.splitext(os.path.basename(sys.argv[0]))[0] if sys.argv else ""
    return command if command.startswith("fairseq-") else None


def running_plugin_command() -> bool:
    """Whether this process runs one of the plugin's own commands (``bahdanau-evaluate``, ...), as
    its console script or as ``python -m bahdanau_tools.NAME``."""
    module = getattr(getattr(sys.modules.get("__main__"), "__spec__", None), "name", None) or ""
    command = os.path.basename(sys.argv[0]) if sys.argv else ""
    return module.startswith("bahdanau_tools.") or command.startswith("bahdanau-")
