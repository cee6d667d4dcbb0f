"""Recording the operations that read a tensor's values on the host: on a GPU each one waits
for every kernel queued before it (a host synchronization)."""

from torch.overrides import TorchFunctionMode

READS = {"__bool__", "__float__", "__index__", "__int__", "equal", "item", "nonzero", "tolist"}


class HostReads(TorchFunctionMode):
    """``with HostReads() as reads:`` records in ``reads.calls`` each host read made inside."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in READS:
            self.calls.append(name)
        return func(*args, **(kwargs or {}))
