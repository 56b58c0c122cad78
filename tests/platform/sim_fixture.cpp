#include "sim_fixture.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>

#include "common/config_loader.hpp"
#include "common/sc_time_util.hpp"
#include "workload/schedule_common.hpp"

namespace moehub::test {

SystemConfig default_system() {
  return load_system_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/systems/dgx-h800.yaml");
}

ModelConfig default_model() {
  return load_model_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/models/mixtral-8x7b.yaml");
}

Schedule single_all_to_all(const std::vector<std::vector<std::int64_t>>& rows, std::uint32_t row_bytes,
                           int sms) {
  using namespace schedule_detail;
  return single_collective("test", all_to_all_from_counts("a2a", rows, row_bytes, sms), false);
}

std::vector<std::vector<std::int64_t>> uniform_rows(int gpus, std::int64_t n) {
  std::vector<std::vector<std::int64_t>> r(static_cast<std::size_t>(gpus),
                                           std::vector<std::int64_t>(static_cast<std::size_t>(gpus), n));
  for (int g = 0; g < gpus; ++g) r[static_cast<std::size_t>(g)][static_cast<std::size_t>(g)] = 0;
  return r;
}

std::unique_ptr<Node> run_node(const SystemConfig& sys, const Schedule& schedule) {
  static bool ran = false;
  if (ran) return nullptr;
  ran = true;
  set_picosecond_resolution();
  ModelConfig model = default_model();
  auto node = std::make_unique<Node>("node", sys, model, schedule);
  sc_core::sc_start();
  return node;
}

std::vector<double> run_in_child(const SystemConfig& sys, const Schedule& schedule, std::size_t count,
                                 const std::function<std::vector<double>(const Node&)>& measure) {
  std::vector<double> v(count, std::nan(""));
  const auto bytes = static_cast<ssize_t>(count * sizeof(double));
  int fd[2];
  if (pipe(fd) != 0) return v;
  const pid_t pid = fork();
  if (pid < 0) return v;
  if (pid == 0) {
    close(fd[0]);
    set_picosecond_resolution();
    auto node = std::make_unique<Node>("node", sys, default_model(), schedule);
    sc_core::sc_start();
    std::vector<double> r = node->verify().empty() ? measure(*node) : std::vector<double>{};
    r.resize(count, std::nan(""));
    const bool ok = write(fd[1], r.data(), static_cast<std::size_t>(bytes)) == bytes;
    _exit(ok ? 0 : 1);
  }
  close(fd[1]);
  const bool got = read(fd[0], v.data(), static_cast<std::size_t>(bytes)) == bytes;
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) v.assign(count, std::nan(""));
  return v;
}

double run_in_child(const SystemConfig& sys, const Schedule& schedule,
                    const std::function<double(const Node&)>& measure) {
  return run_in_child(sys, schedule, 1, [&](const Node& n) { return std::vector<double>{measure(n)}; })[0];
}

}  // namespace moehub::test
