// Logging front end. spdlog stays in log.cpp; this header costs only fmt.
// Contract: TPUEMU_LOG_* evaluate their arguments only when the level is on,
// so a disabled log line on a hot path costs one integer compare.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace tpuemu::log {

enum class Level : int { kTrace = 0, kDebug = 1, kInfo = 2, kWarn = 3, kError = 4, kOff = 6 };

// Current threshold; messages below it are dropped.
Level level();
void set_level(Level level);
// -v / -q counting: 0 = warn (default), each -v one step more verbose, each -q one step quieter.
void set_verbosity(int verbose_count, int quiet_count);
void write(Level level, std::string_view message);

inline bool enabled(Level l) {
  return static_cast<int>(l) >= static_cast<int>(level());
}

}  // namespace tpuemu::log

#define TPUEMU_LOG_AT(lvl, ...)                                                             \
  do {                                                                                      \
    if (::tpuemu::log::enabled(lvl)) ::tpuemu::log::write(lvl, ::fmt::format(__VA_ARGS__)); \
  } while (0)
#define TPUEMU_LOG_TRACE(...) TPUEMU_LOG_AT(::tpuemu::log::Level::kTrace, __VA_ARGS__)
#define TPUEMU_LOG_DEBUG(...) TPUEMU_LOG_AT(::tpuemu::log::Level::kDebug, __VA_ARGS__)
#define TPUEMU_LOG_INFO(...) TPUEMU_LOG_AT(::tpuemu::log::Level::kInfo, __VA_ARGS__)
#define TPUEMU_LOG_WARN(...) TPUEMU_LOG_AT(::tpuemu::log::Level::kWarn, __VA_ARGS__)
#define TPUEMU_LOG_ERROR(...) TPUEMU_LOG_AT(::tpuemu::log::Level::kError, __VA_ARGS__)
