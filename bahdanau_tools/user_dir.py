"""--user-dir DIR, as fairseq's tools take it, for the tools that load a model: a model of one's own
(docs/model.md, "A model of your own") is registered by one's own folder, which the tools import
before they load its checkpoints, and bahdanau-evaluate passes on to fairseq-generate. Without it,
the tools loaded the plugin's models only, and a checkpoint of one's own model was refused."""

import argparse
import traceback
from pathlib import Path
from typing import Optional

from fairseq import utils

from bahdanau_plugin.options import path_argument

from .errors import UserDirError


def add_user_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--user-dir",
        type=path_argument,
        metavar="DIR",
        help="the folder of a model of your own, imported before the model loads (fairseq's "
        "--user-dir; it imports bahdanau_plugin): needed for a checkpoint of a model it registers",
    )


def where_it_failed(error: BaseException, user_dir: Path) -> str:
    """The file and line of the folder's code where its import failed (the last frame of the
    traceback inside the folder), or nothing where none is (a SyntaxError names its own)."""
    folder = user_dir.resolve()
    inside = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if Path(frame.filename).resolve().is_relative_to(folder)
    ]
    return f" ({inside[-1].filename}, line {inside[-1].lineno})" if inside else ""


def import_user_dir(user_dir: Optional[Path]) -> None:
    """Import the folder as fairseq's tools do (fairseq's import_user_module), so that the models
    it registers load. A folder that is not there (fairseq: a traceback of FileNotFoundError) or
    whose import fails (a traceback through fairseq's) is one line naming it."""
    if user_dir is None:
        return
    try:
        utils.import_user_module(argparse.Namespace(user_dir=str(user_dir)))
    except Exception as error:
        if not user_dir.exists():
            raise UserDirError(
                f"--user-dir {user_dir} not found: give the folder that registers your model "
                "(the one holding its __init__.py)"
            ) from None
        raise UserDirError(
            f"--user-dir {user_dir} failed to import: {type(error).__name__}: {error}"
            f"{where_it_failed(error, user_dir)}: correct it, or give the folder that registers "
            "your model"
        ) from None
