// The registry of layer schedules: one line per schedule (its factory's id and the name
// users type). A new schedule is one file in this folder defining
// std::unique_ptr<LayerSchedule> make_<id>_schedule() and one line here.
#include <stdexcept>

#include "schedule.hpp"

#define MOEHUB_SCHEDULES(X)     \
  X(a2a, "a2a")                 \
  X(ring_expert, "ring-expert") \
  X(ring_token, "ring-token")

namespace moehub::gpu {

#define MOEHUB_DECLARE_SCHEDULE(id, name) std::unique_ptr<LayerSchedule> make_##id##_schedule();
MOEHUB_SCHEDULES(MOEHUB_DECLARE_SCHEDULE)
#undef MOEHUB_DECLARE_SCHEDULE

namespace {
struct Entry {
  const char* name;
  std::unique_ptr<LayerSchedule> (*make)();
};
const std::vector<Entry>& registry() {
#define MOEHUB_ENTRY(id, name) {name, &make_##id##_schedule},
  static const std::vector<Entry> r = {MOEHUB_SCHEDULES(MOEHUB_ENTRY)};
#undef MOEHUB_ENTRY
  return r;
}
}  // namespace

std::vector<std::string> schedule_names() {
  std::vector<std::string> out;
  for (const Entry& e : registry()) out.push_back(e.name);
  return out;
}

std::unique_ptr<LayerSchedule> make_schedule(const std::string& name) {
  std::string all;
  for (const Entry& e : registry()) {
    if (name == e.name) return e.make();
    all += (all.empty() ? "" : ", ") + std::string(e.name);
  }
  throw std::invalid_argument("schedule must be one of " + all + " (got '" + name + "')");
}

}  // namespace moehub::gpu
