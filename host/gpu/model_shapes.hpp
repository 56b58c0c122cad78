// Model shapes for the GEMM benchmarks, read from configs/models/<name>.yaml (the
// simulator's model configs, docs/configs.md): hidden_size, expert_ffn_size,
// num_experts, top_k. A small reader of flat "key: value  # comment" lines, so that the
// GPU-only build needs no YAML library.
#pragma once

#include <string>
#include <vector>

namespace moehub::gpu {

struct ModelShape {
  std::string name;
  int hidden = 0, ffn = 0, experts = 0, top_k = 0;
};

/// Parses a model config's text; `source` names it in errors. Throws UsageError naming
/// the source, the key and the allowed range for a missing or bad value.
ModelShape parse_model_shape(const std::string& text, const std::string& source);
/// The folder of the model configs: $MOEHUB_MODELS_DIR, else the source tree's
/// configs/models.
std::string models_dir();
/// Names of the model configs in models_dir() (file names without .yaml), sorted.
std::vector<std::string> model_names();
/// Reads models_dir()/<name>.yaml.
ModelShape load_model_shape(const std::string& name);

}  // namespace moehub::gpu
