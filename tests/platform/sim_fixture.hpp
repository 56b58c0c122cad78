// Helpers for tests that run the SystemC node. SystemC elaborates once per
// process, so each test runs at most one simulation; CTest runs every test
// case in a process of its own (running the binary by hand runs the first
// simulation test and skips the rest).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "common/config.hpp"
#include "platform/node.hpp"
#include "workload/schedule.hpp"

namespace moehub::test {

/// The shipped default system (configs/systems/dgx-h800.yaml).
SystemConfig default_system();
ModelConfig default_model();

/// A schedule whose only op, on every GPU, is one all-to-all in which GPU s
/// sends rows[s][d] rows of row_bytes to GPU d; every GPU starts at time 0.
Schedule single_all_to_all(const std::vector<std::vector<std::int64_t>>& rows, std::uint32_t row_bytes,
                           int sms);
/// rows[s][d] = n for s != d, 0 on the diagonal.
std::vector<std::vector<std::int64_t>> uniform_rows(int gpus, std::int64_t n);

/// Runs `schedule` on `sys` to the end. Returns nullptr (and marks the test
/// skipped) if this process already ran a simulation.
std::unique_ptr<Node> run_node(const SystemConfig& sys, const Schedule& schedule);

/// Runs `schedule` on `sys` in a child process (SystemC elaborates once per
/// process) and returns what `measure` computes from the finished node there;
/// NaN if the child failed. For tests that compare two simulations.
double run_in_child(const SystemConfig& sys, const Schedule& schedule,
                    const std::function<double(const Node&)>& measure);
/// The same with `count` values read from one simulation; all NaN if the child failed.
std::vector<double> run_in_child(const SystemConfig& sys, const Schedule& schedule, std::size_t count,
                                 const std::function<std::vector<double>(const Node&)>& measure);

}  // namespace moehub::test
