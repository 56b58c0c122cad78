// moehub-bench-sim: simulator speed on the default job.
//
// Runs the default configuration (DGX-H800-like node, Mixtral-8x7B, 8192
// tokens, megatron schedule) at packet granularity, the same with write
// responses gathered in 100 ns windows (sim.response_window_ns, a speed
// setting; 0 in the shipped files), the same job at row granularity, and the
// default ring-expert job (its bulk transfers at
// sim.bulk_granularity), each several times in a fresh process (SystemC
// elaborates once per process), and prints the wall time of the simulation
// and the simulated NVLink packets per wall-clock second (median of the
// repetitions): data packets, and all packets (data packets plus the one-flit
// write-response packets that cross the fabric the other way, counted on the
// GPU-to-switch ports). To compare with an older build in one run, see
// scripts/bench-compare.sh.
//
//   moehub-bench-sim [repetitions] [tokens]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/config_loader.hpp"
#include "platform/simulate.hpp"

namespace {

struct Sample {
  double wall_s = 0;
  double packets = 0;
  double all_packets = 0;
  double layer_us = 0;
};

// Runs one simulation in a child process and reads its figures from a pipe.
bool run_child(const moehub::RunRequest& req, Sample& out) {
  int fd[2];
  if (pipe(fd) != 0) return false;
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    close(fd[0]);
    const auto r = moehub::simulate(req);
    Sample s{r.wall_seconds, static_cast<double>(r.fabric_packets), static_cast<double>(r.fabric_all_packets),
             r.results["layer_time_us"].get<double>()};
    const bool ok = r.check_errors.empty() && write(fd[1], &s, sizeof s) == static_cast<ssize_t>(sizeof s);
    _exit(ok ? 0 : 1);
  }
  close(fd[1]);
  const bool got = read(fd[0], &out, sizeof out) == static_cast<ssize_t>(sizeof out);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return got && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const long tokens = argc > 2 ? std::atol(argv[2]) : 8192;
  moehub::RunRequest base;
  base.system = moehub::load_system_config(moehub::resolve_config_path("dgx-h800", "systems"));
  base.model = moehub::load_model_config(moehub::resolve_config_path("mixtral-8x7b", "models"));
  base.workload.tokens = tokens;
  base.schedule = "megatron";
  base.timeline = false;

  std::printf("moehub-bench-sim: %s, %s, %ld tokens, %d repetitions each (median; ring-expert once)\n",
              base.system.name.c_str(), base.model.name.c_str(), tokens, reps);
  std::printf("%-22s %9s %11s %14s %14s %14s %18s\n", "job", "wall_s", "layer_us", "data_packets",
              "all_packets", "data_pkts_per_s", "all_pkts_per_s");
  struct Job {
    const char* name;
    const char* schedule;
    const char* granularity;
    int reps;
    double response_window_ns;
  };
  for (const Job& job : {Job{"megatron, packet", "megatron", "packet", reps, 0},
                         Job{"megatron, pkt, 100ns", "megatron", "packet", reps, 100},
                         Job{"megatron, row", "megatron", "row", reps, 0},
                         Job{"ring-expert, default", "ring-expert", nullptr, 1, 0}}) {
    moehub::RunRequest req = base;
    req.schedule = job.schedule;
    if (job.granularity) req.system.sim.granularity = job.granularity;
    if (job.response_window_ns > 0) req.system.sim.response_window_ns = job.response_window_ns;
    std::vector<double> wall, rate, all_rate;
    Sample s;
    for (int i = 0; i < job.reps; ++i) {
      if (!run_child(req, s)) {
        std::fprintf(stderr, "moehub-bench-sim: a run failed\n");
        return 1;
      }
      wall.push_back(s.wall_s);
      rate.push_back(s.packets / s.wall_s);
      all_rate.push_back(s.all_packets / s.wall_s);
    }
    std::printf("%-22s %9.3f %11.2f %14.0f %14.0f %14.3g %18.3g\n", job.name, median(wall), s.layer_us, s.packets,
                s.all_packets, median(rate), median(all_rate));
  }
  return 0;
}
