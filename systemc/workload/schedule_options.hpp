// The schedules' software parameters (ScheduleOptions) set by key, as
// moehub-sim --set schedule.KEY=VALUE does: the polling loops' costs, the
// ring's element sizes, the source column of the MoE-Hub rows, the overlapped
// baselines' parameters and the megatron profile's scatter-add rate. Each key
// has a type and an allowed range; what a key holds and where its default
// comes from is documented at its field in schedule.hpp.
#pragma once

#include <string>
#include <vector>

#include "workload/schedule.hpp"

namespace moehub {

/// The keys set_schedule_option accepts, in a fixed order.
std::vector<std::string> schedule_option_keys();

/// Sets one parameter of `o` from `value`, written as in a YAML file. An
/// unknown key, a value of the wrong type or out of range is a ConfigError
/// naming "<command line>" and "--set schedule.KEY" (an unknown key lists the
/// keys).
void set_schedule_option(ScheduleOptions& o, const std::string& key, const std::string& value);

/// The checks across keys, after every setting: a poll's SM time below the
/// poll interval, and Comet's communication SMs leaving at least one of the
/// system's SMs to its GEMMs. A ConfigError names "--set schedule.KEY".
void check_schedule_options(const ScheduleOptions& o, const SystemConfig& system);

}  // namespace moehub
