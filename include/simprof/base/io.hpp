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

}  // namespace simprof
