#include "workload/routing_trace.hpp"

#include <filesystem>

#include "common/config_loader.hpp"
#include "trace/trace.hpp"

namespace moehub {

Routing routing_from_trace(const std::string& dir, const ModelConfig& model, int num_gpus) {
  const trace::Trace t = trace::read_trace(dir);
  const std::string manifest = (std::filesystem::path(dir) / trace::kManifestFile).string();
  const auto mismatch = [&](const std::string& key, long long got, long long want, const std::string& what) {
    throw ConfigError(manifest, key,
                      "trace has " + std::to_string(got) + ", the run needs " + std::to_string(want) + " (" + what + ")");
  };
  if (t.manifest.ranks != num_gpus) mismatch("ranks", t.manifest.ranks, num_gpus, "num_gpus of the system");
  if (t.manifest.experts != model.num_experts) {
    mismatch("experts", t.manifest.experts, model.num_experts, "num_experts of " + model.source_file);
  }
  if (t.manifest.top_k != model.top_k) mismatch("top_k", t.manifest.top_k, model.top_k, "top_k of " + model.source_file);

  Routing r;
  r.num_gpus = num_gpus;
  r.num_experts = model.num_experts;
  r.top_k = model.top_k;
  r.tokens_per_gpu.assign(static_cast<std::size_t>(num_gpus), 0);
  r.expert_ids.resize(static_cast<std::size_t>(num_gpus));
  r.gate_weights.resize(static_cast<std::size_t>(num_gpus));
  for (const auto& rr : t.routing) {
    const auto g = static_cast<std::size_t>(rr.rank);
    r.tokens_per_gpu[g] = rr.tokens;
    r.expert_ids[g] = rr.topk_ids;
    r.gate_weights[g] = rr.topk_weights;
  }
  return r;
}

}  // namespace moehub
