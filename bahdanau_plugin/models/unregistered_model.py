"""A model that no module loaded registers, explained in one line.

fairseq builds a model by the name its configuration gives: a checkpoint's (the architecture it
was trained as) or fairseq-hydra-train's ``model._name``. For a name no module registers (a
checkpoint of a model of one's own ``--user-dir``, loaded with ``--user-dir bahdanau_plugin`` or
from Python without importing that module; a typo in ``model._name``), fairseq 0.12's message
for it cannot be formatted (``fairseq.models.build_model`` calls ``.format`` on text that holds
the configuration's braces), and the command ended in a traceback of ``KeyError: "'_name'"``.
"""

import difflib
from typing import Optional

from fairseq import checkpoint_utils, models

from .. import errors

NEAREST = 3  # registered names a message suggests for a misspelt one


def unregistered_model(error: BaseException) -> Optional[str]:
    """The line for a model fairseq could not build because nothing registers its name, None for
    any other error."""
    building = errors.locals_where(error, models.build_model.__code__)
    if building is None or building.get("model") is not None:
        return None
    name = building.get("model_type")
    loading = errors.locals_where(error, checkpoint_utils.load_model_ensemble_and_task.__code__)
    known = sorted({*models.ARCH_MODEL_NAME_REGISTRY, *models.MODEL_DATACLASS_REGISTRY})
    nearest = difflib.get_close_matches(str(name), known, n=NEAREST)
    near = f" (registered names near it: {', '.join(nearest)})" if nearest else ""
    if loading is not None and "filename" in loading:
        return (
            f"checkpoint {loading['filename']} is of the model {name}, which no module loaded "
            f"registers{near}: give the --user-dir that registers it (your own, which imports "
            "bahdanau_plugin); in Python, import that module before loading"
        )
    return (
        f"model {name} is registered by no module loaded{near}: correct model._name, or give "
        "the --user-dir (common.user_dir) that registers it"
    )


errors.EXPLANATIONS.append(unregistered_model)
