// SPDX-License-Identifier: MIT
#include "simprof/timers/plots.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "simprof/base/io.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <sys/ioctl.h>
#include <unistd.h>
#endif

namespace simprof {

namespace {

int terminal_width() {
  if (const char* c = std::getenv("COLUMNS")) {
    const int w = std::atoi(c);
    if (w > 20) return w;
  }
#if defined(TIOCGWINSZ)
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) return ws.ws_col;
#endif
  return 120;
}

// Bins `v` into `cols` columns (the max of each bin, so a slow env is never averaged away).
std::vector<double> bin_max(const std::vector<double>& v, int cols) {
  std::vector<double> out(static_cast<std::size_t>(cols), 0.0);
  const auto n = v.size();
  for (int c = 0; c < cols; ++c) {
    const std::size_t a = n * static_cast<std::size_t>(c) / static_cast<std::size_t>(cols);
    std::size_t b = n * static_cast<std::size_t>(c + 1) / static_cast<std::size_t>(cols);
    if (b <= a) b = a + 1;
    double m = 0;
    for (std::size_t i = a; i < b && i < n; ++i) m = std::max(m, v[i]);
    out[static_cast<std::size_t>(c)] = m;
  }
  return out;
}

void panel(fmt::memory_buffer& out, const std::string& title, const std::vector<double>& values,
           int width, int height, bool unicode) {
  static const char* kBlocks[] = {" ",      "\u2581", "\u2582", "\u2583", "\u2584",
                                  "\u2585", "\u2586", "\u2587", "\u2588"};
  const int margin = 14;
  const int cols = std::max(8, std::min<int>(width - margin, static_cast<int>(values.size())));
  const auto bins = bin_max(values, cols);
  // From just under the smallest bin to the largest: per-env differences are often a few percent
  // of the value, and a zero-based axis would flatten them. Both ends are labelled.
  const double top = std::max(1e-12, *std::max_element(bins.begin(), bins.end()));
  const double low = std::min(*std::min_element(bins.begin(), bins.end()) * 0.95, top * 0.999);
  const double range = std::max(top - low, 1e-15);
  fmt::format_to(std::back_inserter(out), "{}\n", title);
  for (int r = height - 1; r >= 0; --r) {
    if (r == height - 1)
      fmt::format_to(std::back_inserter(out), "{:>9.2f} us |", top * 1e6);
    else if (r == 0)
      fmt::format_to(std::back_inserter(out), "{:>9.2f} us |", low * 1e6);
    else
      fmt::format_to(std::back_inserter(out), "{:>9}    |", "");
    for (int c = 0; c < cols; ++c) {
      const double level = (bins[static_cast<std::size_t>(c)] - low) / range * height * 8.0;
      const int eighths = std::clamp(static_cast<int>(std::lround(level - r * 8.0)), 0, 8);
      out.append(std::string_view(unicode ? kBlocks[eighths] : (eighths >= 4 ? "#" : " ")));
    }
    out.push_back('\n');
  }
  fmt::format_to(std::back_inserter(out), "{:>12} +{}\n", "",
                 std::string(static_cast<std::size_t>(cols), '-'));
}

}  // namespace

std::string terminal_plot(const TimerStats& stats, int row, const PlotOptions& o) {
  if (o.height < 1)
    throw std::invalid_argument(fmt::format("simprof: plot height = {} (expected >= 1)", o.height));
  const int width = o.width > 0 ? o.width : terminal_width();
  const std::string& name = stats.labels().name(row);
  const AcrossEnvs a = stats.across_envs(row);
  const auto slow = stats.slowest(row, 3);
  fmt::memory_buffer out;
  fmt::format_to(
      std::back_inserter(out),
      "timer '{}' over {} envs, {} frames: mean {:.2f} us, p50 {:.2f}, p95 {:.2f}, p99 {:.2f}, "
      "max {:.2f}; slowest envs {}\n",
      name, stats.n_envs(), stats.frames(), a.mean * 1e6, a.p50 * 1e6, a.p95 * 1e6, a.p99 * 1e6,
      a.max * 1e6, fmt::join(slow, ", "));
  const int per_col = std::max(1, stats.n_envs() / std::max(1, width - 14));
  panel(out, fmt::format("last step per env (env order, max of {} envs per column)", per_col),
        stats.last(row), width, o.height, o.unicode);
  panel(out, "mean per env (env order)", stats.mean(row), width, o.height, o.unicode);
  panel(out, "mean per env, sorted", stats.sorted_mean(row), width, o.height, o.unicode);
  return fmt::to_string(out);
}

std::string timers_svg(const TimerStats& stats, const std::string& title) {
  constexpr int kPanelW = 360, kPanelH = 140, kPad = 40, kBins = 180;
  const int w = 3 * (kPanelW + kPad) + kPad;
  const int h = stats.rows() * (kPanelH + 2 * kPad) + kPad;
  const auto esc = [](const std::string& s) { return xml_escape(s); };
  fmt::memory_buffer out;
  fmt::format_to(
      std::back_inserter(out),
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"{}\" y=\"20\" font-size=\"14\">{}</text>\n",
      w, h, kPad, esc(title));
  const char* names[3] = {"last step per env", "mean per env", "mean per env, sorted"};
  for (int r = 0; r < stats.rows(); ++r) {
    const std::vector<double> series[3] = {stats.last(r), stats.mean(r), stats.sorted_mean(r)};
    const int y0 = kPad + r * (kPanelH + 2 * kPad);
    const AcrossEnvs a = stats.across_envs(r);
    fmt::format_to(std::back_inserter(out),
                   "<text x=\"{}\" y=\"{}\" font-size=\"13\">{}: p50 {:.2f} us, p99 {:.2f} us, max "
                   "{:.2f} us</text>\n",
                   kPad, y0 + 14, esc(stats.labels().name(r)), a.p50 * 1e6, a.p99 * 1e6,
                   a.max * 1e6);
    for (int p = 0; p < 3; ++p) {
      const int x0 = kPad + p * (kPanelW + kPad);
      const int top = y0 + 24;
      const auto bins = bin_max(series[p], std::min<int>(kBins, stats.n_envs()));
      const double ymax = std::max(1e-12, *std::max_element(bins.begin(), bins.end()));
      fmt::format_to(std::back_inserter(out),
                     "<text x=\"{}\" y=\"{}\">{} (max {:.2f} us)</text>\n<rect x=\"{}\" y=\"{}\" "
                     "width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n",
                     x0, top + kPanelH + 14, names[p], ymax * 1e6, x0, top, kPanelW, kPanelH);
      const double bw = static_cast<double>(kPanelW) / static_cast<double>(bins.size());
      for (std::size_t i = 0; i < bins.size(); ++i) {
        const double bh = bins[i] / ymax * kPanelH;
        fmt::format_to(std::back_inserter(out),
                       "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
                       "fill=\"#3b6ea5\"/>\n",
                       x0 + bw * static_cast<double>(i), top + kPanelH - bh, std::max(bw, 0.5), bh);
      }
    }
  }
  out.append(std::string_view("</svg>\n"));
  return fmt::to_string(out);
}

}  // namespace simprof
