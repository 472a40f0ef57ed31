// SPDX-License-Identifier: MIT
// The examples' --json FILE: the run record's shared pieces (src/record/run_json.hpp) under the
// examples' namespace.
#pragma once

#include "record/run_json.hpp"

namespace simprof::examples {
using record::command_line;
using record::fps_json;
using record::Json;
using record::JsonFile;
using record::number;
using record::provenance;
using record::record_head;
using record::stage_rows_json;
}  // namespace simprof::examples
