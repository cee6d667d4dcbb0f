"""The folders given to from_pretrained, read from where the user stands.

fairseq's hub_utils.from_pretrained joins a data path that starts with "." onto the model's folder
(meant for its downloadable archives, whose dictionaries lie inside), and reads any other from the
current directory: ``data_name_or_path="../prepared/data-bin"`` names a folder the user never
typed, while ``"prepared/data-bin"`` is where the user stands. The plugin's from_pretrained hands
fairseq absolute paths, read from the current directory like any path in Python, and says in one
line which folder is missing. Left out, the data folder is the model's own, fairseq's default.
"""

import glob
import os
from typing import Optional
from urllib.parse import urlparse

from ..errors import MissingPathError

# fairseq's data_name_or_path for the model's own folder
MODEL_FOLDER = "."


def _downloaded(path: str) -> bool:
    """Whether fairseq's file_utils.cached_path downloads the path rather than reading a file."""
    return urlparse(path).scheme in ("http", "https", "s3")


def model_folder(model_name_or_path) -> str:
    """The folder of the checkpoints, absolute (a URL as it is)."""
    given = os.fspath(model_name_or_path)
    if _downloaded(given):
        return given
    folder = os.path.abspath(given)
    if os.path.isfile(folder):
        raise MissingPathError(
            f"{given} is a file, not the folder of a model: give its folder and its name, "
            f'from_pretrained("{os.path.dirname(given) or "."}", '
            f'checkpoint_file="{os.path.basename(given)}", ...)'
        )
    if not os.path.isdir(folder):
        raise MissingPathError(
            f"model folder {given} not found ({folder} does not exist): give the folder that holds "
            "the checkpoint (fairseq-train's --save-dir)"
        )
    return folder


def data_folder(data_name_or_path: Optional[str], model_folder: str) -> str:
    """The data-bin folder, absolute (a URL as it is); without one, the model's folder."""
    if data_name_or_path is None:
        if _downloaded(model_folder):
            return MODEL_FOLDER  # fairseq's name for the archive's folder, once downloaded
        if not _holds_dictionaries(model_folder):
            raise MissingPathError(
                f"the model's folder {model_folder} holds no dict.*.txt: give data_name_or_path, "
                "the data-bin folder the model was trained with"
            )
        return model_folder
    if _downloaded(os.fspath(data_name_or_path)):
        return os.fspath(data_name_or_path)
    return data_bin_folder(data_name_or_path)


def data_bin_folder(path) -> str:
    """A data-bin folder the user named, absolute; missing, or without dictionaries, a one-line
    error."""
    given = os.fspath(path)
    folder = os.path.abspath(given)
    if not os.path.isdir(folder):
        raise MissingPathError(
            f"data folder {given} not found ({folder} is not a folder): give the data-bin folder "
            "the model was trained with"
        )
    check_not_split_into_shards(given)
    if not _holds_dictionaries(folder):
        raise MissingPathError(
            f"{given} is not a data-bin folder: it holds no dict.*.txt; give the folder "
            "fairseq-preprocess wrote (bahdanau-prepare-data's OUT/data-bin)"
        )
    return folder


def check_not_split_into_shards(data: str) -> None:
    """A data path that is one folder with ':' in its path, refused: fairseq's translation task
    splits its data path into shards there, and read the part before the first ':' (a folder the
    user never gave, or, where one is there, another data-bin, without a word)."""
    if os.pathsep in data and os.path.isdir(data):
        raise MissingPathError(
            f"data folder {data} has '{os.pathsep}' in its path, at which fairseq splits a "
            f"data path into shards: link it (ln -s) under a path without '{os.pathsep}' and give "
            "the link"
        )


def _holds_dictionaries(folder: str) -> bool:
    return bool(glob.glob(os.path.join(glob.escape(folder), "dict.*.txt")))
