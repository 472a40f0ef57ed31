// SPDX-License-Identifier: MIT
// libsimprof_nvtx.so: the NVTX tool `simprof run` injects (NVTX_INJECTION64_PATH). NVTX calls
// InitializeInjectionNvtx2 at a program's first NVTX call; it fills the range slots of the CORE
// and CORE2 (domain) tables (push/pop, start/end) and the name registrations those need, and
// leaves the rest empty (no-ops). The ranges go to one RangeSession for the process.
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cwchar>
#include <fstream>
#include <mutex>
#include <string>
#include <string_view>

#include "range_session.hpp"

namespace {

using simprof::run::RangeSession;

// A registered string or a domain: NVTX hands back the pointer we gave it.
const char* registered(nvtxStringHandle_t h) { return reinterpret_cast<const char*>(h); }

std::string narrow(const wchar_t* w) {
  std::string out;
  for (; w != nullptr && *w != 0; ++w) out += *w < 128 ? static_cast<char>(*w) : '?';
  return out;
}

// The range's name from its attributes (ASCII, wide or registered); "" when it has none.
void name_of(const nvtxEventAttributes_t* a, std::string& out) {
  out.clear();
  if (a == nullptr) return;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      if (a->message.ascii) out = a->message.ascii;
      break;
    case NVTX_MESSAGE_TYPE_UNICODE:
      out = narrow(a->message.unicode);
      break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
      if (a->message.registered) out = registered(a->message.registered);
      break;
    default:
      break;
  }
}

thread_local std::string scratch;  // a name being read (no allocation once grown)

std::uint64_t key(nvtxDomainHandle_t d) { return reinterpret_cast<std::uintptr_t>(d); }

int push_a(const char* m) { return RangeSession::get().push(m ? m : ""); }
int push_w(const wchar_t* m) {
  scratch = narrow(m);
  return RangeSession::get().push(scratch);
}
int push_ex(const nvtxEventAttributes_t* a) {
  name_of(a, scratch);
  return RangeSession::get().push(scratch);
}
int pop() { return RangeSession::get().pop(); }
int domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  name_of(a, scratch);
  return RangeSession::get().push(scratch, key(d));
}
int domain_pop(nvtxDomainHandle_t d) { return RangeSession::get().pop(key(d)); }
nvtxRangeId_t start_a(const char* m) { return RangeSession::get().start(m ? m : ""); }
nvtxRangeId_t start_w(const wchar_t* m) {
  scratch = narrow(m);
  return RangeSession::get().start(scratch);
}
nvtxRangeId_t start_ex(const nvtxEventAttributes_t* a) {
  name_of(a, scratch);
  return RangeSession::get().start(scratch);
}
void end(nvtxRangeId_t id) { RangeSession::get().end(id); }
nvtxRangeId_t domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  name_of(a, scratch);
  return RangeSession::get().start(scratch, key(d));
}
void domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) { RangeSession::get().end(id); }
// NVTX's handles are opaque pointers: ours point at the session's copy of the string (never
// written through).
template <class Handle>
Handle handle_of(std::string_view s) {
  return reinterpret_cast<Handle>(const_cast<char*>(RangeSession::get().intern(s)));
}
nvtxStringHandle_t register_a(nvtxDomainHandle_t, const char* s) {
  return handle_of<nvtxStringHandle_t>(s ? s : "");
}
nvtxStringHandle_t register_w(nvtxDomainHandle_t, const wchar_t* s) {
  return handle_of<nvtxStringHandle_t>(narrow(s));
}
nvtxDomainHandle_t domain_create_a(const char* name) {
  return handle_of<nvtxDomainHandle_t>(name ? name : "");
}
nvtxDomainHandle_t domain_create_w(const wchar_t* name) {
  return handle_of<nvtxDomainHandle_t>(narrow(name));
}
void domain_destroy(nvtxDomainHandle_t) {}

template <class F>
void put(NvtxFunctionTable table, unsigned size, unsigned id, F* fn) {
  if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

bool fill(NvtxGetExportTableFunc_t get) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return false;
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned n_core = 0, n_core2 = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &n_core) || core == nullptr)
    return false;
  put(core, n_core, NVTX_CBID_CORE_RangePushA, &push_a);
  put(core, n_core, NVTX_CBID_CORE_RangePushW, &push_w);
  put(core, n_core, NVTX_CBID_CORE_RangePushEx, &push_ex);
  put(core, n_core, NVTX_CBID_CORE_RangePop, &pop);
  put(core, n_core, NVTX_CBID_CORE_RangeStartA, &start_a);
  put(core, n_core, NVTX_CBID_CORE_RangeStartW, &start_w);
  put(core, n_core, NVTX_CBID_CORE_RangeStartEx, &start_ex);
  put(core, n_core, NVTX_CBID_CORE_RangeEnd, &end);
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &n_core2) && core2) {
    put(core2, n_core2, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push_ex);
    put(core2, n_core2, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
    put(core2, n_core2, NVTX_CBID_CORE2_DomainRangeStartEx, &domain_start_ex);
    put(core2, n_core2, NVTX_CBID_CORE2_DomainRangeEnd, &domain_end);
    put(core2, n_core2, NVTX_CBID_CORE2_DomainRegisterStringA, &register_a);
    put(core2, n_core2, NVTX_CBID_CORE2_DomainRegisterStringW, &register_w);
    put(core2, n_core2, NVTX_CBID_CORE2_DomainCreateA, &domain_create_a);
    put(core2, n_core2, NVTX_CBID_CORE2_DomainCreateW, &domain_create_w);
    put(core2, n_core2, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy);
  }
  return true;
}

}  // namespace

// NVTX's contract: non-zero is success; zero makes every NVTX call of that copy of NVTX a no-op,
// and NVTX unloads the tool. Each shared library that embeds NVTX calls it once. The slots are
// filled first: the session (its exit report, its threads) is made only for a tool that stays
// (and the library is linked -z nodelete besides, so nothing of it is ever unloaded).
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get) {
  try {
    if (!fill(get)) return 0;
    RangeSession::get();  // made (and its exit report registered) before any range arrives
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "simprof run: the NVTX tool could not start: %s\n", e.what());
    if (const char* mark = std::getenv("SIMPROF_RUN_MARK"); mark && *mark)
      std::ofstream(mark) << "refused\n";  // simprof run says nothing more of it
    return 0;
  }
}
