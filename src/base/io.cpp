// SPDX-License-Identifier: MIT
#include "simprof/base/io.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace simprof {

void write_file_atomic(const std::string& path, std::string_view text) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    throw std::runtime_error(
        fmt::format("simprof: cannot write '{}': {}", tmp, std::strerror(errno)));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    throw std::runtime_error(
        fmt::format("simprof: cannot write '{}': {}", tmp, std::strerror(err)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error(
        fmt::format("simprof: cannot rename '{}' to '{}': {}", tmp, path, std::strerror(e)));
  }
}

std::string parse_nvidia_driver_version(std::string_view text) {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  <version>  <build date>"; the open kernel
  // modules say "NVIDIA UNIX Open Kernel Module for x86_64  <version>  Release Build".
  const std::size_t line = text.find("NVRM version:");
  if (line == std::string_view::npos) return "";
  const std::string_view rest = text.substr(line, text.find('\n', line) - line);
  std::size_t at = rest.find("Kernel Module");
  if (at == std::string_view::npos) return "";
  at += 13;
  if (const std::size_t f = rest.find(" for ", at); f == at) {  // "Module for x86_64"
    at = rest.find_first_not_of(' ', f + 5);
    at = at == std::string_view::npos ? at : rest.find(' ', at);
    if (at == std::string_view::npos) return "";
  }
  const std::size_t b = rest.find_first_not_of(' ', at);
  if (b == std::string_view::npos) return "";
  const std::size_t e = rest.find(' ', b);
  const std::string_view v = rest.substr(b, e == std::string_view::npos ? e : e - b);
  // A version is digits and dots ("580.159.04"); anything else is not one.
  if (v.empty() || v.find_first_not_of("0123456789.") != std::string_view::npos) return "";
  return std::string(v);
}

std::string nvidia_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return parse_nvidia_driver_version(text.str());
}

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04x}", c);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      // A UTF-8 sequence passes through when it is well formed (shortest form, no surrogate, at
      // most U+10FFFF: what JSON parsers accept); anything else becomes U+FFFD, a byte at a time.
      const std::size_t len = c >= 0xf0 && c <= 0xf4  ? 4
                              : c >= 0xe0 && c < 0xf0 ? 3
                              : c >= 0xc2 && c < 0xe0 ? 2
                                                      : 0;
      bool ok = len != 0 && i + len <= s.size();
      std::uint32_t cp = c & (0x7fu >> len);
      for (std::size_t k = 1; ok && k < len; ++k) {
        const auto d = static_cast<unsigned char>(s[i + k]);
        ok = (d & 0xc0) == 0x80;
        cp = (cp << 6) | (d & 0x3fu);
      }
      constexpr std::uint32_t kShortest[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = ok && cp >= kShortest[len] && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
      if (ok) {
        out.append(s.substr(i, len));
        i += len;
        continue;
      }
      out += "\xef\xbf\xbd";
    }
    ++i;
  }
  return out;
}

std::string parse_nvidia_gpu_model(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    if (line.rfind("Model:", 0) == 0) {
      const std::size_t b = line.find_first_not_of(" \t", 6);
      if (b == std::string_view::npos) return "";
      const std::size_t e = line.find_last_not_of(" \t\r");
      return std::string(line.substr(b, e + 1 - b));
    }
    at = end + 1;
  }
  return "";
}

std::vector<std::string> nvidia_gpu_models() {
  std::vector<std::string> dirs, out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec))
    dirs.push_back(e.path().string());
  std::sort(dirs.begin(), dirs.end());  // bus order
  for (const std::string& d : dirs) {
    std::ifstream in(d + "/information");
    std::ostringstream text;
    text << in.rdbuf();
    if (std::string model = parse_nvidia_gpu_model(text.str()); !model.empty())
      out.push_back(std::move(model));
  }
  return out;
}

std::vector<GpuClocks> parse_nvidia_smi_clocks(std::string_view text) {
  std::vector<GpuClocks> out;
  std::istringstream lines{std::string(text)};
  std::string line;
  bool any = false;
  while (std::getline(lines, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    for (char& c : line)
      if (c == ',') c = ' ';
    std::istringstream fields(line);
    GpuClocks g;
    std::string rest;
    if (fields >> g.sm_mhz >> g.max_sm_mhz >> g.memory_mhz && !(fields >> rest))
      any = true;
    else
      g = GpuClocks{};  // "[N/A]" or another shape: this GPU's clocks are unknown (all 0)
    out.push_back(g);
  }
  if (!any) out.clear();  // no GPU's line at all: nvidia-smi said something else (an error)
  return out;
}

std::vector<GpuClocks> nvidia_gpu_clocks() {
  static const std::vector<GpuClocks> clocks = [] {
    std::vector<GpuClocks> out;
    std::error_code ec;
    if (!std::filesystem::exists("/proc/driver/nvidia/version", ec)) return out;
    FILE* p = popen(
        "timeout 10 nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem "
        "--format=csv,noheader,nounits 2>/dev/null",
        "r");
    if (p == nullptr) return out;
    std::string text;
    char buf[256];
    while (std::fgets(buf, sizeof buf, p) != nullptr) text += buf;
    pclose(p);
    return parse_nvidia_smi_clocks(text);
  }();
  return clocks;
}

}  // namespace simprof
