// SPDX-License-Identifier: MIT
// `simprof compare --svg FILE`: each compared series as two box plots on one axis, base above new
// (whiskers p5-p95, box p25-p75, the median a bar), with its change and verdict: people look at
// distributions, they don't read them. Private to src/compare.
#pragma once

#include <string>
#include <vector>

#include "outcome.hpp"

namespace simprof::compare {

/// The picture of `outcomes` as an SVG document.
std::string distributions_svg(const std::vector<Outcome>& outcomes);

}  // namespace simprof::compare
