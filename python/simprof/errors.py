# SPDX-License-Identifier: MIT
"""simprof's exceptions: each carries simprof's own message, and each is also the built-in
exception a caller would expect (ValueError for bad input, RuntimeError for the rest)."""

__all__ = ["Error", "InvalidArgument", "LogicError", "CudaError", "Unavailable"]


class Error(Exception):
    """A failure inside simprof; the message is simprof's own."""


class InvalidArgument(Error, ValueError):
    """A value out of range, an unknown stage name, ..."""


class LogicError(Error, RuntimeError):
    """A call out of order: a stage outside a step, unbalanced stages."""


class CudaError(Error, RuntimeError):
    """A CUDA, CUPTI or NVTX call failed."""


class Unavailable(Error, RuntimeError):
    """This build of simprof has no CUDA backend."""


# simprof_status (include/simprof/c/simprof.h) -> the exception it raises.
BY_STATUS = {1: InvalidArgument, 2: LogicError, 3: CudaError, 4: Unavailable, 5: Error}
