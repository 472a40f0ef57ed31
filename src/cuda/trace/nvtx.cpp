// SPDX-License-Identifier: MIT
#include "simprof/cuda/trace/nvtx.hpp"

#include <string>

namespace simprof::cuda {

#if !defined(SIMPROF_NVTX_DISABLED)

NvtxRanges::NvtxRanges(StepProfiler& prof, const char* domain)
    : prof_(prof), domain_(nvtxDomainCreateA(domain)) {
  attached_ = prof_.attach(*this);
}

NvtxRanges::~NvtxRanges() = default;

void NvtxRanges::push(StageId id) {
  if (id >=
      names_.size()) {  // a stage seen for the first time: register its name (off the hot path)
    const std::size_t old = names_.size();
    names_.resize(prof_.num_stages(), nullptr);
    for (std::size_t i = old; i < names_.size(); ++i) {
      const std::string n(i == kStepStage ? std::string_view("step")
                                          : prof_.stage_name(static_cast<StageId>(i)));
      names_[i] = nvtxDomainRegisterStringA(domain_.get(), n.c_str());
    }
  }
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = names_[id];
  nvtxDomainRangePushEx(domain_.get(), &a);
}

void NvtxRanges::on_step_begin(std::uint64_t, std::int64_t) { push(kStepStage); }
void NvtxRanges::on_stage_begin(StageId id, std::int64_t) { push(id); }
void NvtxRanges::on_stage_end(StageId, std::int64_t) { nvtxDomainRangePop(domain_.get()); }
void NvtxRanges::on_step_end(std::uint64_t, std::int64_t, StepOutcome) {
  nvtxDomainRangePop(domain_.get());
}

#else

NvtxRanges::NvtxRanges(StepProfiler& prof, const char*) : prof_(prof) {}
NvtxRanges::~NvtxRanges() = default;
void NvtxRanges::on_step_begin(std::uint64_t, std::int64_t) {}
void NvtxRanges::on_stage_begin(StageId, std::int64_t) {}
void NvtxRanges::on_stage_end(StageId, std::int64_t) {}
void NvtxRanges::on_step_end(std::uint64_t, std::int64_t, StepOutcome) {}

#endif

}  // namespace simprof::cuda
