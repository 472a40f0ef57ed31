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

// A wide name narrowed into this thread's buffer (ASCII; longer names cut). A plain array: NVTX
// may be called after the thread's thread_local objects with destructors are gone (at exit).
thread_local char wide_name[256];
std::string_view narrow(const wchar_t* w) {
  std::size_t n = 0;
  for (; w != nullptr && *w != 0 && n + 1 < sizeof wide_name; ++w)
    wide_name[n++] = *w < 128 ? static_cast<char>(*w) : '?';
  return std::string_view(wide_name, n);
}

// The range's name from its attributes (ASCII, wide or registered); "" when it has none.
std::string_view name_of(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return {};
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
      return narrow(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered ? registered(a->message.registered) : "";
    default:
      return {};
  }
}

std::uint64_t key(nvtxDomainHandle_t d) { return reinterpret_cast<std::uintptr_t>(d); }

int push_a(const char* m) { return RangeSession::get().push(m ? m : ""); }
int push_w(const wchar_t* m) { return RangeSession::get().push(narrow(m)); }
int push_ex(const nvtxEventAttributes_t* a) { return RangeSession::get().push(name_of(a)); }
int pop() { return RangeSession::get().pop(); }
int domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return RangeSession::get().push(name_of(a), key(d));
}
int domain_pop(nvtxDomainHandle_t d) { return RangeSession::get().pop(key(d)); }
nvtxRangeId_t start_a(const char* m) { return RangeSession::get().start(m ? m : ""); }
nvtxRangeId_t start_w(const wchar_t* m) { return RangeSession::get().start(narrow(m)); }
nvtxRangeId_t start_ex(const nvtxEventAttributes_t* a) {
  return RangeSession::get().start(name_of(a));
}
void end(nvtxRangeId_t id) { RangeSession::get().end(id); }
nvtxRangeId_t domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return RangeSession::get().start(name_of(a), key(d));
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
