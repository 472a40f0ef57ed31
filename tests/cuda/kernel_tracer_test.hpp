// SPDX-License-Identifier: MIT
// Shared by the kernel tracer tests (test_kernel_tracer*.cu): the spans of one kind in a trace.
#pragma once

#include <vector>

#include "simprof/trace/span.hpp"

namespace simprof::cuda::gputest {

inline std::vector<const Span*> of_kind(const Trace& t, SpanKind kind) {
  std::vector<const Span*> out;
  for (const auto& s : t.spans)
    if (s.kind == kind) out.push_back(&s);
  return out;
}

}  // namespace simprof::cuda::gputest
