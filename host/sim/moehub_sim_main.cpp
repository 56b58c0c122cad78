// moehub-sim: runs one MoE layer on the SystemC/TLM-2.0 model of a multi-GPU
// node under one dispatch schedule and reports what happened.
//
// Exit status: 0 success, 2 bad input (command line or config), 3 the run's
// self-checks failed or it passed its simulated-time limit (--max-sim-time;
// nothing is written then), 1 an internal error (a bug).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/config_loader.hpp"
#include "golden/hub_functions.hpp"
#include "hub_digest.hpp"
#include "common/config_ranges.hpp"
#include "platform/simulate.hpp"
#include "trace/trace.hpp"
#include "workload/routing_trace.hpp"
#include "workload/schedule_options.hpp"
#ifdef MOEHUB_HAVE_RTL
#include "rtl_hub.hpp"
#endif

namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitCheckFailed = 3;

// Writes `text` to `path` through a temporary file, so that a reader never
// sees a partial file.
void write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw std::runtime_error("cannot write " + tmp);
    f << text;
    if (!f.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

// Creates the output folder and its parents if missing; a ConfigError naming
// --out-dir when that fails or the path is not a folder.
void make_out_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw moehub::ConfigError("<command line>", "--out-dir",
                              "cannot create the folder '" + dir + "'" + (ec ? ": " + ec.message() : ""));
  }
}

// Progress of a long run on stderr: on a terminal one line of a bar that is
// redrawn in place at most every 0.5 s, otherwise a plain line every 10 s;
// nothing during the first second, so that short runs print nothing.
class ProgressBar {
 public:
  ProgressBar() : tty_(isatty(fileno(stderr)) != 0), start_(Clock::now()), last_(start_) {}
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar() {
    if (drawn_) std::fputc('\n', stderr);  // the table starts on a line of its own
  }

  void update(std::size_t done, std::size_t total) {
    const auto now = Clock::now();
    const double since_start = seconds(now - start_);
    const bool last = total > 0 && done == total;
    if (since_start < kQuietFirstS) return;
    // a terminal also shows the final state; a log gets no extra line for it
    if (seconds(now - last_) < (tty_ ? kRedrawS : kPlainLineS) && !(tty_ && last)) return;
    last_ = now;
    const double frac = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
    if (tty_) {
      constexpr std::size_t kWidth = 30;
      const auto filled = static_cast<std::size_t>(frac * kWidth);
      const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
      std::fprintf(stderr, "\rmoehub-sim: [%s] %3.0f%% of ops (%zu/%zu), %.1f s", bar.c_str(), 100 * frac, done,
                   total, since_start);
      drawn_ = true;
    } else {
      std::fprintf(stderr, "moehub-sim: %.0f%% of ops (%zu/%zu) after %.0f s\n", 100 * frac, done, total, since_start);
    }
    std::fflush(stderr);
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
  static constexpr double kQuietFirstS = 1.0;  ///< runs shorter than this print no progress
  static constexpr double kRedrawS = 0.5;      ///< terminal: redraw interval
  static constexpr double kPlainLineS = 10.0;  ///< not a terminal: one line per interval
  bool tty_;
  bool drawn_ = false;
  Clock::time_point start_, last_;
};

// An output path must name a file (not a folder) in an existing folder, with
// room for the ".tmp" suffix of write_file in its name.
void check_output_path(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const std::string name = p.filename().string();
  if (path.empty() || name.empty() || name == "." || name == "..") {
    throw moehub::ConfigError("<command line>", flag, "'" + path + "' does not name a file");
  }
  if (name.size() + 4 > 255) {
    throw moehub::ConfigError("<command line>", flag, "the file name is longer than 251 characters");
  }
  std::error_code ec;
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) {
    throw moehub::ConfigError("<command line>", flag,
                              "'" + path + "': the folder '" + parent.string() + "' does not exist");
  }
  if (fs::is_directory(p, ec)) {
    throw moehub::ConfigError("<command line>", flag, "'" + path + "' is a folder, not a file");
  }
}

/// 'a', 'b', 'c': the allowed values of an option, for its error message.
std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The MoE-Hub schedules (moehub, moehub-base, moehub-pkt, moehub-dep) run on
// the MoE-Hub units. Every system file describes the conventional hub
// (hub.implementation: address-centric), which the software baselines use, so
// such a schedule selects 'moehub' unless the command line names an
// implementation (--hub-impl, --set system.hub.implementation) or the file
// names one of the MoE-Hub units ('moehub', 'rtl'). An implementation named on
// the command line that cannot run the schedule is a ConfigError naming the
// flag.
void select_moehub_units(const std::string& schedule, bool hub_impl_flag,
                         const std::vector<moehub::ConfigOverride>& overrides, moehub::SystemConfig& sys) {
  if (schedule.rfind("moehub", 0) != 0) return;
  const bool set_by_override = std::any_of(overrides.begin(), overrides.end(), [](const moehub::ConfigOverride& o) {
    return o.target == "system" && o.key == "hub.implementation";
  });
  std::string& impl = sys.hub.implementation;
  if (impl == "moehub" || impl == "rtl") return;
  if (!hub_impl_flag && !set_by_override) {
    impl = "moehub";
    return;
  }
  throw moehub::ConfigError("<command line>", hub_impl_flag ? "--hub-impl" : "--set system.hub.implementation",
                            "schedule '" + schedule + "' runs on the MoE-Hub units: must be 'moehub' or 'rtl' (got '" +
                                impl + "'; without the option it runs on 'moehub')");
}

}  // namespace

// Our own main(): it takes precedence over the one in libsystemc (which would
// print a banner on stdout first); sc_main is only a weak stub then.
int main(int argc, char** argv) {
  // keep stdout for our own report
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  CLI::App app{"moehub-sim: one MoE layer on a simulated multi-GPU node (SystemC/TLM-2.0)"};
  std::string system = "dgx-h800";
  std::string model = "mixtral-8x7b";
  std::string schedule = "megatron";
  std::string out_dir = "out";
  std::string results_path, timeline_path;
  std::optional<std::string> granularity;
  std::string routing_trace;
  bool no_timeline = false;
  bool quiet = false;
  moehub::WorkloadConfig wl;
  int comm_sms = moehub::ScheduleOptions{}.comm_sms;
  int repeat = 1;
  double max_sim_time_us = moehub::ticks_to_us(moehub::RunRequest::kDefaultMaxSimTime);

  app.add_option("--system", system, "system config: a name under configs/systems or a YAML path")
      ->capture_default_str();
  app.add_option("--model", model, "model config: a name under configs/models or a YAML path")
      ->capture_default_str();
  std::string schedules_help;
  for (const auto& n : moehub::schedule_names()) schedules_help += (schedules_help.empty() ? "" : ", ") + n;
  app.add_option("--schedule", schedule, "dispatch schedule: " + schedules_help)->capture_default_str();
  std::optional<std::string> hub_impl;
  std::int64_t region_rows = 0;
  int store_bytes = moehub::ScheduleOptions{}.rowsp_store_bytes;
  app.add_option("--store-bytes", store_bytes,
                 "moehub*: bytes of one store of the dispatch and combine kernels, 1..128")
      ->capture_default_str();
  std::string rtl_trace, hub_digest_path;
  app.add_option("--hub-impl", hub_impl,
                 "override hub.implementation: address-centric, moehub, or rtl (the MoE-Hub units co-simulated "
                 "from their Verilated RTL; in builds with Verilator)");
  app.add_option("--rtl-trace", rtl_trace,
                 "--hub-impl rtl: write one FST waveform per hub block into this folder (gpuG_aau.fst, gpuG_rpm.fst)");
  app.add_option("--hub-digest", hub_digest_path,
                 "write digests of what the hub functions computed (LocalRowIDs, per-link packet order) to this "
                 "JSON file, to compare two runs");
  app.add_option("--region-rows", region_rows,
                 "moehub*: rows per rowsp region, 1..16777216, or 0 (the default): every token of the job");
  app.add_option("--tokens", wl.tokens, "total tokens over all GPUs (split evenly)")->capture_default_str();
  app.add_option("--seed", wl.seed, "routing seed")->capture_default_str();
  app.add_option("--distribution", wl.distribution, "expert popularity: normal or zipf")
      ->capture_default_str();
  app.add_option("--imbalance-std", wl.imbalance_std,
                 "std of per-expert load fractions (normal distribution), >= 0")
      ->capture_default_str();
  app.add_option("--zipf-s", wl.zipf_s, "Zipf exponent over expert ranks (zipf distribution), >= 0")
      ->capture_default_str();
  app.add_option("--routing-trace", routing_trace,
                 "replay the routing of a moehub-gpu trace directory (one rank per GPU) instead of generating it");
  app.add_option("--granularity", granularity, "override sim.granularity: packet or row");
  std::vector<std::string> sets;
  app.add_option("--set", sets,
                 "override one config key, system.KEY=VALUE or model.KEY=VALUE (repeatable; checked as in the "
                 "file), e.g. --set system.nvlink.bw_gbps_per_direction_per_gpu=900, or a schedule parameter, "
                 "schedule.KEY=VALUE, e.g. --set schedule.poll.poll_interval_ns=500")
      ->allow_extra_args(false);
  app.add_option("--comm-sms", comm_sms, "SMs used by an all-to-all kernel, >= 1")->capture_default_str();
  app.add_option("--repeat", repeat, "a2a-uniform: all-to-alls back to back, 1..1000")->capture_default_str();
  app.add_option("--out-dir", out_dir, "where results.json and timeline.json go (created if missing)")
      ->capture_default_str();
  app.add_option("--results", results_path, "results JSON path (default OUT_DIR/results.json)");
  app.add_option("--timeline", timeline_path, "Chrome trace path (default OUT_DIR/timeline.json)");
  app.add_option("--max-sim-time", max_sim_time_us,
                 "stop with exit status 3 when the run passes this much simulated time, in us")
      ->capture_default_str();
  app.add_flag("--no-timeline", no_timeline, "do not write the Chrome trace");
  app.add_flag("--quiet", quiet, "no table on stdout and no progress on stderr");

  // CLI11 reads "--key=" (nothing after '=') as "--key" and takes the next
  // argument as its value, even an option: "--results= --out-dir" at the end
  // wrote the results to a file named "--out-dir". Refused instead.
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a.size() > 3 && a.compare(0, 2, "--") == 0 && a.find('=') == a.size() - 1) {
      std::cerr << "moehub-sim: error: <command line>: key '" << a.substr(0, a.size() - 1)
                << "': empty value after '=' (write " << a << "VALUE or " << a.substr(0, a.size() - 1)
                << " VALUE)\n";
      return kExitBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "moehub-sim: error: " << e.what() << "\n";
    return kExitBadInput;
  }

  moehub::RunRequest req;
  try {
    const std::vector<moehub::ConfigOverride> overrides = moehub::parse_config_overrides(sets);
    req.system = moehub::load_system_config(moehub::resolve_config_path(system, "systems"), overrides);
    req.model = moehub::load_model_config(moehub::resolve_config_path(model, "models"), overrides);
    for (const moehub::ConfigOverride& o : overrides) {
      if (o.target != "schedule") continue;
      moehub::set_schedule_option(req.options, o.key, o.value);
      req.schedule_overrides.push_back(o.key + "=" + o.value);
    }
    moehub::check_schedule_options(req.options, req.system);
    if (granularity) {
      if (*granularity != "packet" && *granularity != "row") {
        throw moehub::ConfigError("<command line>", "--granularity",
                                  "must be 'packet' or 'row' (got '" + *granularity + "')");
      }
      req.system.sim.granularity = *granularity;
    }
#ifdef MOEHUB_HAVE_RTL
    moehub::cosim::register_rtl_hub(rtl_trace);
#endif
    // the implementations this build has ("rtl" only with Verilator)
    const auto impls = moehub::golden::hub_implementations();
    const std::string allowed = quoted_list(impls);
    if (hub_impl) {
      if (!contains(impls, *hub_impl)) {
        throw moehub::ConfigError("<command line>", "--hub-impl",
                                  *hub_impl == "rtl"
                                      ? "rtl implementation not built (Verilator missing); built: " + allowed
                                      : "must be one of " + allowed + " (got '" + *hub_impl + "')");
      }
      req.system.hub.implementation = *hub_impl;
    } else if (!contains(impls, req.system.hub.implementation)) {
      // the system file names an implementation this build lacks
      throw moehub::ConfigError(req.system.source_file, "hub.implementation",
                                "'" + req.system.hub.implementation +
                                    "' is not built into this moehub-sim (rtl needs Verilator); built: " + allowed);
    }
    if (!rtl_trace.empty()) {
      if (req.system.hub.implementation != "rtl") {
        throw moehub::ConfigError("<command line>", "--rtl-trace", "needs --hub-impl rtl");
      }
      std::error_code ec;
      std::filesystem::create_directories(rtl_trace, ec);
      if (ec || !std::filesystem::is_directory(rtl_trace)) {
        throw moehub::ConfigError("<command line>", "--rtl-trace",
                                  "cannot create the folder '" + rtl_trace + "'" + (ec ? ": " + ec.message() : ""));
      }
    }
    if (store_bytes < 1 || store_bytes > 128) {
      throw moehub::ConfigError("<command line>", "--store-bytes",
                                "must be in [1, 128] (got " + std::to_string(store_bytes) + ")");
    }
    if (region_rows < 0 || region_rows > moehub::kMaxTokens) {
      throw moehub::ConfigError("<command line>", "--region-rows",
                                "must be in [1, " + std::to_string(moehub::kMaxTokens) + "], or 0 for every token of the job (got " +
                                    std::to_string(region_rows) + ")");
    }
    if (comm_sms < 1 || comm_sms > req.system.gpu.num_sms) {
      throw moehub::ConfigError("<command line>", "--comm-sms",
                                "must be in 1.." + std::to_string(req.system.gpu.num_sms) + " (got " +
                                    std::to_string(comm_sms) + ")");
    }
    if (const auto names = moehub::schedule_names(); !contains(names, schedule)) {
      throw moehub::ConfigError("<command line>", "--schedule",
                                "must be one of " + quoted_list(names) + " (got '" + schedule + "')");
    }
    select_moehub_units(schedule, hub_impl.has_value(), overrides, req.system);
    const double max_sim_time_limit_us = moehub::ticks_to_us(moehub::RunRequest::kMaxSimTimeLimit);
    if (!(max_sim_time_us >= 1e-6 && max_sim_time_us <= max_sim_time_limit_us)) {
      throw moehub::ConfigError("<command line>", "--max-sim-time",
                                "must be in [1e-06, " + std::to_string(max_sim_time_limit_us) +
                                    "] us (got " + std::to_string(max_sim_time_us) + ")");
    }
    req.max_sim_time = moehub::us_to_ticks(max_sim_time_us);
    if (repeat < 1 || repeat > 1000) {
      throw moehub::ConfigError("<command line>", "--repeat",
                                "must be in 1..1000 (got " + std::to_string(repeat) + ")");
    }
    if (routing_trace.empty()) {
      moehub::validate_run(req.system, req.model, wl);
    } else {
      req.routing = moehub::routing_from_trace(routing_trace, req.model, req.system.num_gpus);
      req.routing_source = routing_trace;
    }
    const bool uses_out_dir = results_path.empty() || (!no_timeline && timeline_path.empty());
    if (uses_out_dir) make_out_dir(out_dir);
  } catch (const moehub::ConfigError& e) {
    std::cerr << "moehub-sim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const moehub::trace::TraceError& e) {
    std::cerr << "moehub-sim: error: " << e.what() << "\n";
    return kExitBadInput;
  }
  req.workload = wl;
  req.schedule = schedule;
  req.options.comm_sms = comm_sms;
  req.options.repeat = repeat;
  req.options.rowsp_region_rows = region_rows;
  req.options.rowsp_store_bytes = store_bytes;
  req.timeline = !no_timeline;
  if (results_path.empty()) results_path = out_dir + "/results.json";
  if (timeline_path.empty()) timeline_path = out_dir + "/timeline.json";
  try {
    check_output_path("--results", results_path);
    if (req.timeline) check_output_path("--timeline", timeline_path);
    if (!hub_digest_path.empty()) check_output_path("--hub-digest", hub_digest_path);
  } catch (const moehub::ConfigError& e) {
    std::cerr << "moehub-sim: error: " << e.what() << "\n";
    return kExitBadInput;
  }

  try {
    std::optional<ProgressBar> bar;
    if (!quiet) {
      bar.emplace();
      req.progress = [&bar](std::size_t done, std::size_t total) { bar->update(done, total); };
    }
    moehub::sim::HubDigest digest;
    if (!hub_digest_path.empty()) digest.install();
    const moehub::RunOutput out = moehub::simulate(req);
    bar.reset();
    if (out.fatal) {
      // the stopped run's SystemC threads stay suspended and cannot be
      // unwound: leave without exit-time checks that would only report what
      // their stacks hold
      std::cerr << "moehub-sim: error: " << out.fatal_message << "; nothing written" << std::endl;
      std::cout.flush();
      std::_Exit(kExitBadInput);
    }
    if (out.time_limit_exceeded) {
      std::cerr << "moehub-sim: error: " << out.time_limit_message << "; nothing written\n";
      return kExitCheckFailed;
    }
    try {
      write_file(results_path, out.results.dump(2) + "\n");
      if (req.timeline) write_file(timeline_path, out.timeline);
      if (!hub_digest_path.empty()) write_file(hub_digest_path, digest.to_json());
    } catch (const std::exception& e) {
      // an output that cannot be written (disk full, permissions): no partial set of outputs
      std::error_code ec;
      std::filesystem::remove(results_path, ec);
      std::cerr << "moehub-sim: error: " << e.what() << "; nothing written\n";
      return kExitBadInput;
    }
    if (!quiet) {
      std::cout << moehub::format_table(out.results);
      std::printf("wall time %.3f s, %llu fabric transactions (%llu NVLink data packets), %.3g packets/s\n",
                  out.wall_seconds, static_cast<unsigned long long>(out.fabric_transactions),
                  static_cast<unsigned long long>(out.fabric_packets),
                  out.wall_seconds > 0 ? static_cast<double>(out.fabric_packets) / out.wall_seconds : 0.0);
      std::cout << "results: " << results_path;
      if (req.timeline) std::cout << ", timeline: " << timeline_path;
      std::cout << "\n";
    }
    if (!out.check_errors.empty()) {
      std::cerr << "moehub-sim: self-checks FAILED:\n";
      for (const auto& e : out.check_errors) std::cerr << "  " << e << "\n";
      return kExitCheckFailed;
    }
  } catch (const std::invalid_argument& e) {
    // simulate() reports inputs that only the workload generator can judge
    // (an --imbalance-std that no routing reaches) as invalid_argument
    std::cerr << "moehub-sim: error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "moehub-sim: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
