// SPDX-License-Identifier: MIT
// CollectiveArgs: a collective's arguments as Kineto writes them on the NCCL kernels and on the
// host scope around the call (profiler/collective.hpp). Made by TraceSession, read by the writer.
#pragma once

#include <cstdint>

#include "simprof/profiler/collective.hpp"
#include "simprof/trace/span.hpp"

namespace simprof {

/// A collective's arguments as Kineto writes them on the NCCL kernel (and on the host scope).
struct CollectiveArgs {
  CollectiveOp op = CollectiveOp::kAllReduce;  ///< the operation
  DType dtype = DType::kFloat;                 ///< the element type
  std::int64_t in_nelems = 0;                  ///< elements in
  std::int64_t out_nelems = 0;                 ///< elements out
  ProcessGroup group;                          ///< the ranks taking part
  int rank = 0;                                ///< the rank that ran it
};

}  // namespace simprof
