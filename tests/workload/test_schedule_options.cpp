// The schedules' software parameters set by key (moehub-sim --set schedule.KEY=VALUE).
#include <gtest/gtest.h>

#include <string>

#include "common/config_loader.hpp"
#include "workload/schedule_options.hpp"

namespace moehub {
namespace {

ConfigError error_of(ScheduleOptions& o, const std::string& key, const std::string& value) {
  try {
    set_schedule_option(o, key, value);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << key << "=" << value << " was accepted";
  return ConfigError("", "", "");
}

// The ring's defaults are the GPU harness's, so that a simulated ring is the
// ring moehub-gpu runs by default: moehub-gpu --ring-accum bf16 --hop-chunk-rows -1
// (host/gpu/layer.hpp, LayerConfig), which ring_sim_settings writes as these keys
// (GpuTrace.RingSettingsAreTheSimulatorsScheduleKeys in tests/gpu checks that side:
// ring_accum_bytes 2, ring_grad_bytes 2, ring_chunk_rows -1). The harness is built
// only with CUDA, so its defaults are not reachable from this test.
TEST(ScheduleOptions, RingDefaultsAreTheGpuHarnesss) {
  const ScheduleOptions o;
  EXPECT_EQ(o.ring_accum_bytes, 2);
  EXPECT_EQ(o.ring_grad_bytes, 2);
  EXPECT_EQ(o.ring_chunk_rows, -1);
}

TEST(ScheduleOptions, EveryKeySetsItsField) {
  ScheduleOptions o;
  set_schedule_option(o, "poll.poll_interval_ns", "250.5");
  set_schedule_option(o, "poll.poll_sm_ns", "20");
  set_schedule_option(o, "poll.poll_bytes", "64");
  set_schedule_option(o, "ring_accum_bytes", "4");
  set_schedule_option(o, "ring_grad_bytes", "4");
  set_schedule_option(o, "ring_chunk_rows", "0");
  set_schedule_option(o, "source_info_bytes", "32");
  set_schedule_option(o, "baseline.tutel_pipeline_degree", "4");
  set_schedule_option(o, "baseline.tutel_min_rows_per_chunk", "512");
  set_schedule_option(o, "baseline.tutel_capacity_factor", "1.25");
  set_schedule_option(o, "baseline.comet_comm_sms", "20");
  set_schedule_option(o, "baseline.layout_bytes_per_row", "8");
  set_schedule_option(o, "megatron.unpermute_add_gbps", "600");
  EXPECT_DOUBLE_EQ(o.poll.poll_interval_ns, 250.5);
  EXPECT_DOUBLE_EQ(o.poll.poll_sm_ns, 20);
  EXPECT_DOUBLE_EQ(o.poll.poll_bytes, 64);
  EXPECT_EQ(o.ring_accum_bytes, 4);
  EXPECT_EQ(o.ring_grad_bytes, 4);
  EXPECT_EQ(o.ring_chunk_rows, 0);
  EXPECT_EQ(o.source_info_bytes, 32);
  EXPECT_EQ(o.baseline.tutel_pipeline_degree, 4);
  EXPECT_EQ(o.baseline.tutel_min_rows_per_chunk, 512);
  EXPECT_DOUBLE_EQ(o.baseline.tutel_capacity_factor, 1.25);
  EXPECT_EQ(o.baseline.comet_comm_sms, 20);
  EXPECT_DOUBLE_EQ(o.baseline.layout_bytes_per_row, 8);
  EXPECT_DOUBLE_EQ(o.megatron.unpermute_add_gbps, 600);
  SystemConfig sys;
  sys.gpu.num_sms = 132;
  EXPECT_NO_THROW(check_schedule_options(o, sys));
  // the list of keys is the set above, in its order
  EXPECT_EQ(schedule_option_keys().size(), 13u);
  EXPECT_EQ(schedule_option_keys().front(), "poll.poll_interval_ns");
}

TEST(ScheduleOptions, RefusalsNameTheFlag) {
  struct Case {
    const char* key;
    const char* value;
    const char* message;
  };
  const Case cases[] = {
      {"poll.poll_interval_ns", "0", "must be in (0, 1000000000] (got 0)"},
      {"poll.poll_interval_ns", "fast", "expected a number (got fast)"},
      {"poll.poll_sm_ns", "-1", "must be in [0, 1000000000] (got -1)"},
      {"ring_accum_bytes", "3", "must be 1, 2, 4 or 8 (got 3)"},
      {"ring_grad_bytes", "2.0", "expected an integer (got 2.0)"},
      {"ring_chunk_rows", "-2", "must be in [-1, 1000000000000] (got -2)"},
      {"source_info_bytes", "129", "must be in [1, 128] (got 129)"},
      {"baseline.tutel_capacity_factor", "0", "must be in (0, 1000] (got 0)"},
      {"baseline.comet_comm_sms", "[1, 2]", "expected an integer (got a sequence)"},
      {"megatron.unpermute_add_gbps", "1e7", "must be in (0, 1000000] (got 1e7)"},
      {"poll.poll_interval_ns", "[1", "the value is not valid YAML"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.key) + "=" + c.value);
    ScheduleOptions o;
    const ConfigError e = error_of(o, c.key, c.value);
    EXPECT_EQ(e.file(), "<command line>");
    EXPECT_EQ(e.key(), std::string("--set schedule.") + c.key);
    EXPECT_NE(e.message().find(c.message), std::string::npos) << e.what();
  }
  ScheduleOptions o;
  const ConfigError unknown = error_of(o, "poll.interval_ns", "1");
  EXPECT_EQ(unknown.key(), "--set schedule.poll.interval_ns");
  EXPECT_NE(unknown.message().find("not a schedule parameter; the keys: poll.poll_interval_ns,"), std::string::npos)
      << unknown.what();
  // the keys that have flags of their own are not here
  for (const char* flagged : {"comm_sms", "repeat", "rowsp_region_rows", "rowsp_store_bytes"}) {
    SCOPED_TRACE(flagged);
    error_of(o, flagged, "1");
  }
}

TEST(ScheduleOptions, ChecksAcrossKeysNameTheFlag) {
  SystemConfig sys;
  sys.name = "node";
  sys.gpu.num_sms = 132;
  const auto refused = [&sys](const ScheduleOptions& o, const std::string& key, const std::string& message) {
    try {
      check_schedule_options(o, sys);
      ADD_FAILURE() << key << ": accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), "--set schedule." + key);
      EXPECT_EQ(e.message(), message);
    }
  };
  ScheduleOptions o;
  EXPECT_NO_THROW(check_schedule_options(o, sys));  // the defaults
  set_schedule_option(o, "poll.poll_interval_ns", "100");
  refused(o, "poll.poll_sm_ns", "must be below poll.poll_interval_ns = 100 (got 100)");
  set_schedule_option(o, "poll.poll_sm_ns", "99.5");
  EXPECT_NO_THROW(check_schedule_options(o, sys));
  set_schedule_option(o, "baseline.comet_comm_sms", "132");
  refused(o, "baseline.comet_comm_sms", "must be below gpu.num_sms = 132 of system 'node' (got 132)");
  set_schedule_option(o, "baseline.comet_comm_sms", "131");
  EXPECT_NO_THROW(check_schedule_options(o, sys));
}

}  // namespace
}  // namespace moehub
