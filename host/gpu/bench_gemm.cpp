// moehub-gpu bench-gemm: expert GEMM throughput of each implementation on the models'
// shapes (configs/models) beside a dense GEMM of the same FLOPs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "cuda_check.hpp"
#include "expert_ops.hpp"
#include "host_data.hpp"
#include "layer.hpp"
#include "model_shapes.hpp"
#include "moe_plan.hpp"
#include "ring_hop.hpp"
#include "schedule.hpp"
#include "trace.hpp"

#include "measure_common.hpp"

namespace moehub::gpu {

int cmd_bench_gemm(const Args& a) {
  const std::int64_t tokens = a.integer("tokens", 16384, 1, 1 << 20);
  // model shapes from configs/models (model_shapes.hpp)
  const std::vector<std::string> known = model_names();
  const auto names = a.str_list("models", "mixtral-8x7b,qwen3-30b-a3b,qwen1.5-moe-a2.7b", {known.begin(), known.end()});
  std::vector<ModelShape> models;
  for (const std::string& n : names) models.push_back(load_model_shape(n));
  const std::string routing = a.str("routing", "balanced");
  if (routing != "balanced" && routing != "skewed")
    throw UsageError("--routing must be balanced or skewed (got '" + routing + "')");
  const bool skewed = routing == "skewed";
  std::printf("bench-gemm: %lld tokens, %s routing (rows = tokens * k %s), bf16 in, fp32 "
              "accumulate, bf16 out; cases round-robin, median of 20 rounds after 5 warm-up rounds; %s\n",
              static_cast<long long>(tokens), routing.c_str(),
              skewed ? "over the experts in proportion to (e + 1)^-0.5" : "split evenly over the experts",
              device_name(0).c_str());
  std::vector<trace::GemmTiming> out;
  for (const ModelShape& m : models) {
    const auto rows = skewed ? skewed_rows(tokens * m.top_k, m.experts) : balanced_rows(tokens * m.top_k, m.experts);
    std::printf("%-18s rows per expert: %lld..%lld\n", m.name.c_str(),
                static_cast<long long>(*std::min_element(rows.begin(), rows.end())),
                static_cast<long long>(*std::max_element(rows.begin(), rows.end())));
    bench_shapes(m.name, m.hidden, m.ffn, rows, out, true);
  }
  return 0;
}


}  // namespace moehub::gpu
