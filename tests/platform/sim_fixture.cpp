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

double run_in_child(const SystemConfig& sys, const Schedule& schedule,
                    const std::function<double(const Node&)>& measure) {
  int fd[2];
  if (pipe(fd) != 0) return std::nan("");
  const pid_t pid = fork();
  if (pid < 0) return std::nan("");
  if (pid == 0) {
    close(fd[0]);
    set_picosecond_resolution();
    auto node = std::make_unique<Node>("node", sys, default_model(), schedule);
    sc_core::sc_start();
    const double v = node->verify().empty() ? measure(*node) : std::nan("");
    const bool ok = write(fd[1], &v, sizeof v) == static_cast<ssize_t>(sizeof v);
    _exit(ok ? 0 : 1);
  }
  close(fd[1]);
  double v = std::nan("");
  if (read(fd[0], &v, sizeof v) != static_cast<ssize_t>(sizeof v)) v = std::nan("");
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? v : std::nan("");
}

}  // namespace moehub::test
