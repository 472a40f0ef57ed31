// SPDX-License-Identifier: MIT
// Files simprof writes (traces, SVG plots) appear whole or not at all; the host facts it reads.
//
/* clang-format off */
//   simprof::write_file_atomic("timers.svg", simprof::timers_svg(stats));
/* clang-format on */
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace simprof {

/// Writes text to `path` atomically (a temporary file, then rename). Throws std::runtime_error
/// naming the path and the reason.
void write_file_atomic(const std::string& path, std::string_view text);

/// `s` as XML text (SVG): <, >, & and " escaped.
std::string xml_escape(std::string_view s);
/// `s` as the body of a JSON string: quotes, backslashes and control characters escaped; valid
/// UTF-8 passes through; invalid bytes become U+FFFD.
std::string json_escape(std::string_view s);

/// The NVIDIA kernel driver's version as `nvidia-smi` prints it ("580.159.04"), read from
/// /proc/driver/nvidia/version; "" where there is none (no NVIDIA driver, not Linux). The CUDA
/// driver API's version (cudaDriverGetVersion: 13000) names the CUDA release the driver supports,
/// not the driver.
std::string nvidia_driver_version();
/// The driver version in the text of /proc/driver/nvidia/version: the token after "Kernel Module"
/// on its "NVRM version:" line ("" when the text names none).
std::string parse_nvidia_driver_version(std::string_view text);
/// The models of the machine's NVIDIA GPUs, as the driver names them, in bus order, from
/// /proc/driver/nvidia/gpus/*/information; empty where there are none.
std::vector<std::string> nvidia_gpu_models();
/// The model in the text of a GPU's /proc/driver/nvidia/gpus/*/information: its "Model:" line's
/// value ("" when there is none).
std::string parse_nvidia_gpu_model(std::string_view text);

/// One GPU's clocks in MHz as nvidia-smi reports them: the SM clock now, its maximum, memory's.
struct GpuClocks {
  int sm_mhz = 0;      ///< the SM clock when asked
  int max_sm_mhz = 0;  ///< the SM clock's maximum
  int memory_mhz = 0;  ///< the memory clock when asked
};
/// The clocks of the machine's NVIDIA GPUs, in nvidia-smi's order: read once per process (the
/// first call runs `nvidia-smi --query-gpu=...`, given 10 s at most), empty where there is no
/// NVIDIA driver or no nvidia-smi.
std::vector<GpuClocks> nvidia_gpu_clocks();
/// nvidia-smi's `--query-gpu=clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader,nounits`
/// output, one GPU a line ("<sm>, <max sm>, <memory>"). A GPU whose line is not three numbers
/// ("[N/A]") keeps its place with every clock 0 (unknown); no such line at all: empty.
std::vector<GpuClocks> parse_nvidia_smi_clocks(std::string_view text);

}  // namespace simprof
