"""What a checkpoint of these models records of where it comes from: fingerprints of its source and
target dictionaries and of the parameters its training started from.

A model is only right with the dictionaries it was trained with: the same symbols in the same
order, not merely as many (a data-bin prepared with ``--shortlist N`` always has N + 4 symbols,
whatever the corpus). The models' ``state_dict`` adds the fingerprints to the parameters, so that
every way fairseq saves a model (fairseq-train, also with ``--task translation``) keeps them,
every way it loads one (``load_model_ensemble_and_task``: fairseq-generate, fairseq-interactive,
the hub and the plugin's tools; the trainer's ``load_checkpoint``: resuming) hands them back to the
models' ``load_state_dict``, which compares them with the data-bin's dictionaries
(``check_dictionaries``), and averaging, which reads the parameters, sees them too. A checkpoint
saved before has none: its dictionaries are checked by size alone, as then.

Each fingerprint is a SHA-256 digest held as a tensor of its 32 bytes, in int64 so that an
average of equal fingerprints (fairseq's own averaging script sums integer tensors and
divides them) is the same fingerprint.

Which run a checkpoint belongs to is the fingerprint of the parameters its training started from,
taken as the model first trains (``of_parameters``) and carried on by every checkpoint saved after,
also of a run resumed or started from it (``--restore-file``): checkpoints of runs that started
from other parameters (another seed, other initial weights) lie in other regions of the parameter
space, where averaging them makes a worse model than either. A random run id would tell apart two
runs started from the same parameters, which average well; a save folder's name tells nothing.
"""

import hashlib
import json
from typing import Dict, Optional

import torch

SOURCE_DICTIONARY = "fingerprint.source_dictionary"
TARGET_DICTIONARY = "fingerprint.target_dictionary"
INITIAL_PARAMETERS = "fingerprint.initial_parameters"
KEYS = (SOURCE_DICTIONARY, TARGET_DICTIONARY, INITIAL_PARAMETERS)
DICTIONARIES = {"source": SOURCE_DICTIONARY, "target": TARGET_DICTIONARY}


def _as_tensor(digest: bytes) -> torch.Tensor:
    return torch.tensor(list(digest), dtype=torch.int64)


def of_dictionary(dictionary) -> torch.Tensor:
    """The fingerprint of a fairseq Dictionary: its symbols, in order (not their counts)."""
    symbols = json.dumps(list(dictionary.symbols), ensure_ascii=False)
    return _as_tensor(hashlib.sha256(symbols.encode("utf-8")).digest())


def of_parameters(module: torch.nn.Module) -> torch.Tensor:
    """The fingerprint of a module's parameters: their names, shapes, types and values."""
    digest = hashlib.sha256()
    for name, parameter in module.named_parameters():
        values = parameter.detach().cpu().contiguous().reshape(-1)
        digest.update(f"{name} {tuple(parameter.shape)} {parameter.dtype}\n".encode())
        digest.update(values.view(torch.uint8).numpy().tobytes())
    return _as_tensor(digest.digest())


def short(fingerprint: torch.Tensor) -> str:
    """A fingerprint as people read it: its first 8 hexadecimal digits."""
    return bytes(fingerprint.tolist()[:4]).hex()


def add_(state_dict: Dict, prefix: str, model) -> None:
    """The model's fingerprints in its state dict, beside its parameters."""
    state_dict[prefix + SOURCE_DICTIONARY] = of_dictionary(model.encoder.dictionary)
    state_dict[prefix + TARGET_DICTIONARY] = of_dictionary(model.decoder.dictionary)
    if model.initial_parameters is not None:
        state_dict[prefix + INITIAL_PARAMETERS] = model.initial_parameters


def take_(state_dict: Dict) -> Dict[str, torch.Tensor]:
    """The fingerprints a state dict holds (none, of a checkpoint saved before them), taken out of
    it: what is left are the parameters."""
    return {key: state_dict.pop(key) for key in KEYS if key in state_dict}


def differs(recorded: Optional[torch.Tensor], other: Optional[torch.Tensor]) -> bool:
    """Whether two fingerprints are known and differ."""
    return recorded is not None and other is not None and not torch.equal(recorded, other)
