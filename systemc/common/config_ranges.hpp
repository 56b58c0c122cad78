// The allowed range of every numeric config key, in one table.
//
// The loader (config_loader.cpp) takes each numeric key's range from here and
// docs/configs.md shows the same ranges (tests/config/config_ranges_test.cpp
// fails when the two disagree). The ranges are physical plausibility, wide
// enough for research: bandwidths from 1 MB/s to 100 TB/s, latencies from 0 to
// 1 s, clocks from 10 MHz to 100 GHz, counts from 1 to what the simulator's
// data structures hold comfortably. Cross-field rules (a multiple of the flit
// size, credits for one packet, top_k <= num_experts) are checked by the
// loader after the ranges; `constraint` names them for the docs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace moehub {

/// Which config file a key belongs to.
enum class ConfigKind { kSystem, kModel };

/// One numeric key: its dotted path, whether it is an integer, and the closed
/// or half-open interval of allowed values.
struct KeyRange {
  ConfigKind kind;
  const char* key;         ///< dotted path from the document root
  bool integer;            ///< int key (else a finite number)
  double lo;
  bool lo_inclusive;
  double hi;
  bool hi_inclusive;
  const char* constraint;  ///< cross-field rule checked by the loader ("" if none), for docs
};

/// Command-line limits of a run (validate_run): total tokens, and routed
/// (token, expert) pairs, which size the routing tables (4 bytes each).
inline constexpr long long kMaxTokens = 1LL << 24;
inline constexpr long long kMaxRoutedTokens = 1LL << 28;

/// All numeric keys of system and model configs, in document order.
const KeyRange* key_ranges_begin();
const KeyRange* key_ranges_end();
std::size_t key_range_count();

/// The entry of `key` (dotted) in a config of `kind`; throws std::logic_error
/// when the table has none (a loader key without a range is a bug).
const KeyRange& key_range(ConfigKind kind, std::string_view key);

/// "in [0.001, 100000]", "in (0, 1]": the interval as the loader prints it.
std::string describe_range(const KeyRange& r);
/// describe_range plus the constraint: the text of docs/configs.md's range column.
std::string describe_range_for_docs(const KeyRange& r);

}  // namespace moehub
