// The human-readable summary of a results object: the phase breakdown of the
// GPU that finishes last, every GPU's layer time, the fabric's payload and
// link utilisation, and the self-check outcome.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace moehub {

/// Summary table of a results object made by make_results.
std::string format_table(const nlohmann::ordered_json& results);

}  // namespace moehub
