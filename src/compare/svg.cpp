// SPDX-License-Identifier: MIT
#include "svg.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "simprof/base/io.hpp"
#include "simprof/base/stats.hpp"

namespace simprof::compare {

namespace {

constexpr int kWidth = 1000, kLabel = 300, kPlot = 520, kRow = 44;
constexpr const char* kBase = "#4878a8";
constexpr const char* kNew = "#e07b39";

struct Box {
  double p5, p25, p50, p75, p95;
};

Box box_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {percentile_sorted(v, 0.05), percentile_sorted(v, 0.25), percentile_sorted(v, 0.5),
          percentile_sorted(v, 0.75), percentile_sorted(v, 0.95)};
}

void box(fmt::memory_buffer& out, const Box& b, double lo, double hi, int y, const char* color) {
  auto x = [&](double v) { return kLabel + kPlot * (v - lo) / (hi - lo); };
  fmt::format_to(std::back_inserter(out),
                 "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"{}\"/>\n"
                 "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"12\" fill=\"{}\" "
                 "fill-opacity=\"0.45\" stroke=\"{}\"/>\n"
                 "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"{}\" "
                 "stroke-width=\"2.5\"/>\n",
                 x(b.p5), y + 6, x(b.p95), y + 6, color, x(b.p25), y,
                 std::max(1.0, x(b.p75) - x(b.p25)), color, color, x(b.p50), y - 2, x(b.p50),
                 y + 14, color);
}

std::string unit_value(const Row& r, double v) {
  return r.larger_is_slower ? fmt::format("{:.4g} us", v * 1e6) : fmt::format("{:.6g}/s", v);
}

}  // namespace

std::string distributions_svg(const std::vector<Outcome>& outcomes) {
  int rows = 0, heads = 0;
  for (const Outcome& o : outcomes) {
    heads += 1 + static_cast<int>(o.runs.size());
    for (const RunResult& run : o.runs) rows += static_cast<int>(run.rows.size());
  }
  const int height = 40 + 26 * heads + kRow * rows;
  fmt::memory_buffer out;
  auto put = [&](auto&&... args) {
    fmt::format_to(std::back_inserter(out), std::forward<decltype(args)>(args)...);
  };
  put("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n<text x=\"10\" y=\"20\" font-size=\"14\">simprof compare: "
      "<tspan fill=\"{}\">base</tspan> and <tspan fill=\"{}\">new</tspan>, per step "
      "(whiskers p5-p95, box p25-p75, bar the median)</text>\n",
      kWidth, height, kBase, kNew);
  int y = 40;
  for (const Outcome& o : outcomes) {
    put("<text x=\"10\" y=\"{}\" font-weight=\"bold\">{} -&gt; {}</text>\n", y + 14,
        xml_escape(o.base), xml_escape(o.changed));
    y += 26;
    for (const RunResult& run : o.runs) {
      put("<text x=\"10\" y=\"{}\" fill=\"#555\">{}</text>\n", y + 14,
          xml_escape(run.label.empty() ? "run" : "run " + run.label));
      y += 26;
      for (const Row& r : run.rows) {
        const Box b = box_of(r.base), n = box_of(r.changed);
        double lo = std::min(b.p5, n.p5), hi = std::max(b.p95, n.p95);
        const double pad = hi > lo ? 0.05 * (hi - lo) : (lo != 0 ? 0.01 * lo : 1.0);
        lo -= pad;
        hi += pad;
        put("<text x=\"10\" y=\"{}\">{} {}{}</text>\n", y + 20, r.clock,
            std::string(2 * static_cast<std::size_t>(r.depth), ' '), xml_escape(r.name));
        box(out, b, lo, hi, y + 4, kBase);
        box(out, n, lo, hi, y + 22, kNew);
        put("<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"#777\">{}</text>\n"
            "<text x=\"{}\" y=\"{}\" font-size=\"10\" fill=\"#777\" "
            "text-anchor=\"end\">{}</text>\n",
            kLabel, y + 42, unit_value(r, lo), kLabel + kPlot, y + 42, unit_value(r, hi));
        const Verdict v = r.verdict();
        put("<text x=\"{}\" y=\"{}\" fill=\"{}\">{:+.1f} % {}</text>\n", kLabel + kPlot + 14,
            y + 20,
            v == Verdict::kSlower   ? "#c0392b"
            : v == Verdict::kFaster ? "#27874a"
                                    : "#555",
            100 * r.result.change.change, to_string(v));
        y += kRow;
      }
    }
  }
  put("</svg>\n");
  return fmt::to_string(out);
}

}  // namespace simprof::compare
