#include "common/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>

namespace tpuemu::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kWarn)};

spdlog::logger& logger() {
  // Diagnostics go to stderr so that stdout stays machine-readable (--json, reports).
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = spdlog::stderr_color_st("tpuemu");
    l->set_pattern("%^[%l]%$ %v");
    l->set_level(spdlog::level::trace);
    return l;
  }();
  return *instance;
}

}  // namespace

Level level() {
  return static_cast<Level>(g_level.load(std::memory_order_relaxed));
}

void set_level(Level l) {
  g_level.store(static_cast<int>(l), std::memory_order_relaxed);
}

void set_verbosity(int verbose_count, int quiet_count) {
  const int lvl = static_cast<int>(Level::kWarn) - verbose_count + quiet_count;
  set_level(static_cast<Level>(std::clamp(lvl, static_cast<int>(Level::kTrace), static_cast<int>(Level::kOff))));
}

void write(Level l, std::string_view message) {
  logger().log(static_cast<spdlog::level::level_enum>(static_cast<int>(l)), "{}", message);
}

}  // namespace tpuemu::log
