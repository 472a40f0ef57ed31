# SPDX-License-Identifier: MIT
"""Collectives in multi-rank traces: `with simprof.collective(prof, "all_reduce", n, dtype):`
around a torch.distributed (or NCCL) call records the call as a CPU span with Kineto's collective
arguments, and gives them to the NCCL kernel it launched, as torch.profiler's record_param_comms
does: Holistic Trace Analysis and Perfetto show the size, dtype and group on the kernel."""
from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator, Optional, Sequence

import ctypes

from ._lib import CollectiveInfoC, cint, lib, new
from .core import StepProfiler
from .errors import InvalidArgument

__all__ = ["ProcessGroup", "collective"]

# Element types by the names Python users hold (torch.float32, numpy's "float32", "float") ->
# torch's names, which Kineto writes.
_DTYPES = {
    "float32": "Float", "float": "Float", "double": "Double", "float64": "Double",
    "float16": "Half", "half": "Half", "bfloat16": "BFloat16", "int32": "Int", "int": "Int",
    "int64": "Long", "long": "Long", "uint8": "Byte", "byte": "Byte", "bool": "Bool",
}
_KINETO_DTYPES = {"Float", "Double", "Half", "BFloat16", "Int", "Long", "Byte", "Bool"}


class ProcessGroup:
    """A process group as Kineto names it: name ("0" is torch's default group), desc
    ("default_pg") and its global ranks."""

    def __init__(self, name: str = "0", desc: str = "default_pg", ranks: Sequence[int] = ()):
        self.name, self.desc = str(name), str(desc)
        self.ranks = [int(r) for r in ranks]

    @staticmethod
    def world(world_size: int) -> "ProcessGroup":
        """The default group of `world_size` processes: ranks 0 .. world_size - 1."""
        if int(world_size) < 1:
            raise InvalidArgument("simprof: ProcessGroup.world(%r) (expected a world size >= 1)"
                                  % (world_size,))
        return ProcessGroup(ranks=range(int(world_size)))

    def __repr__(self) -> str:
        return "ProcessGroup(name=%r, desc=%r, ranks=%r)" % (self.name, self.desc, self.ranks)


def _dtype_name(dtype: Any) -> str:
    name = str(getattr(dtype, "name", None) or dtype)  # numpy dtypes have .name
    name = name.replace("torch.", "")
    if name in _KINETO_DTYPES:
        return name
    if name.lower() in _DTYPES:
        return _DTYPES[name.lower()]
    raise InvalidArgument("simprof: collective dtype %r (expected a torch or numpy dtype, or one "
                          "of %s)" % (dtype, ", ".join(sorted(_KINETO_DTYPES))))


def _group_of(group: Any) -> ProcessGroup:
    if isinstance(group, ProcessGroup):
        return group
    dist = sys.modules.get("torch.distributed")
    initialized = dist is not None and dist.is_available() and dist.is_initialized()
    if group is None:
        if initialized:
            return ProcessGroup.world(dist.get_world_size())
        return ProcessGroup()
    if initialized:  # a torch.distributed ProcessGroup: its name, description and ranks
        try:
            ranks = dist.get_process_group_ranks(group)
        except Exception as e:  # noqa: BLE001 - any failure means: not a group of this run
            raise InvalidArgument("simprof: collective group %r is not a torch.distributed group "
                                  "of this run (%s)" % (group, e)) from e
        return ProcessGroup(getattr(group, "group_name", "0"),
                            getattr(group, "group_desc", "default_pg"), ranks)
    raise InvalidArgument("simprof: collective group = %r (expected None, a simprof.ProcessGroup "
                          "or a torch.distributed group of an initialised run)" % (group,))


@contextlib.contextmanager
def collective(prof: StepProfiler, op: str, nelems: int, dtype: Any, group: Any = None,
               out_nelems: Optional[int] = None) -> Iterator[None]:
    """Times a collective call on `prof`'s clock and names it in the trace:

        with simprof.collective(prof, "all_reduce", x.numel(), x.dtype):
            torch.distributed.all_reduce(x)

    op: torch.distributed's name ("all_reduce", "all_gather", "reduce_scatter", "broadcast",
    "reduce", "all_to_all", "send", "recv", "barrier") or Kineto's ("allreduce", ...). nelems:
    elements in (out_nelems: out, when they differ). group: None (torch's default group when
    torch.distributed is initialised), a torch.distributed group or a simprof.ProcessGroup."""
    g = _group_of(group)
    ranks = (cint * len(g.ranks))(*g.ranks)
    info = CollectiveInfoC()
    lib.simprof_collective_info_init(ctypes.byref(info))
    info.op, info.dtype = str(op).encode(), _dtype_name(dtype).encode()
    info.in_nelems = int(nelems)
    info.out_nelems = int(nelems if out_nelems is None else out_nelems)
    info.group_name, info.group_desc = g.name.encode(), g.desc.encode()
    info.ranks, info.n_ranks = ranks, len(g.ranks)
    handle = new(lib.simprof_collective_begin, prof._h, ctypes.byref(info))
    try:
        yield
    finally:
        lib.simprof_collective_end(handle)
