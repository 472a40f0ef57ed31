// SPDX-License-Identifier: MIT
// DeviceStageTimer's records, shared by its device side (stage_timer.cu) and its host side
// (stage_join.cpp). Private to src/cuda.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "simprof/cuda/timing/stage_timer.hpp"

namespace simprof::cuda {

namespace detail {

enum StampKind : int { kStageBegin = 1, kStageEnd = 2 };

struct StampEntry {
  std::int32_t stage;
  std::int32_t kind;
  unsigned long long t;
};

// One step's readings. `step` tags the record with the host's step index (low 32 bits): a stamp
// finds its record through the step index the stream wrote before the step's work.
struct StepRecord {
  unsigned int step;
  unsigned int count;  // entries reserved (atomically: stamps of a graph run in any order)
  unsigned int overflow;
  unsigned int pad;
  unsigned long long t_begin;
  unsigned long long t_end;
  volatile unsigned long long done;  // mirror only: host step + 1 once the rest is written
  StampEntry entries[DeviceStageTimer::kMaxStamps];
};

constexpr int kPerNode = 8;  // boundaries one stamp kernel records (they share a device instant)

struct StampArgs {
  StepRecord* recs;
  const unsigned* step;  // written by the stream at every step's start; kNotTimed: skip
  unsigned ring;
  int n;
  int stage[kPerNode];
  int kind[kPerNode];
};

// Where the stamps of the capture in progress go: after which captured nodes, with what entries.
// Boundaries with no work between them (the same dependencies) share one stamp. The captured graph
// itself is never touched: the stamps are added to a copy (instrumented_copy).
struct CaptureStamps {
  struct Stamp {
    std::vector<cudaGraphNode_t> deps;
    StampArgs args;
  };
  unsigned long long id = 0;
  cudaGraph_t graph = nullptr;
  std::vector<Stamp> stamps;
};

}  // namespace detail

}  // namespace simprof::cuda
