#include "chip/memory_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "dist/bytes.hpp"

namespace tpuemu::chip {
namespace {

const char* space_name(MemoryProfile::Space s) {
  switch (s) {
    case MemoryProfile::Space::kHbm:
      return "hbm";
    case MemoryProfile::Space::kVmem:
      return "vmem";
    case MemoryProfile::Space::kSmem:
      return "smem";
  }
  return "?";
}

}  // namespace

void MemoryProfile::add_buffer(std::uint32_t chip, std::uint32_t core, Space space, std::string name,
                               std::uint64_t offset, std::uint64_t size, std::uint64_t capacity) {
  Memory& m = memories_[{chip, space == Space::kHbm ? 0 : core, space}];
  m.capacity = capacity;
  m.buffers.push_back({std::move(name), offset, size, false, 0, 0});
  m.sorted = false;
}

void MemoryProfile::write(std::uint32_t chip, std::uint32_t core, Space space, std::uint64_t address,
                          std::uint64_t bytes, std::uint64_t cycle) {
  access({chip, space == Space::kHbm ? 0 : core, space}, address, bytes, cycle, true);
}

void MemoryProfile::read(std::uint32_t chip, std::uint32_t core, Space space, std::uint64_t address,
                         std::uint64_t bytes, std::uint64_t cycle) {
  access({chip, space == Space::kHbm ? 0 : core, space}, address, bytes, cycle, false);
}

void MemoryProfile::access(const Key& key, std::uint64_t address, std::uint64_t bytes, std::uint64_t cycle,
                           bool is_write) {
  const auto it = memories_.find(key);
  if (it == memories_.end() || bytes == 0) return;
  Memory& m = it->second;
  if (!m.sorted) {
    std::sort(m.buffers.begin(), m.buffers.end(), [](const Buffer& a, const Buffer& b) { return a.offset < b.offset; });
    m.sorted = true;
  }
  // Every buffer the range [address, address + bytes) overlaps.
  auto b = std::upper_bound(m.buffers.begin(), m.buffers.end(), address,
                            [](std::uint64_t a, const Buffer& buf) { return a < buf.offset; });
  if (b != m.buffers.begin()) --b;
  for (; b != m.buffers.end() && b->offset < address + bytes; ++b) {
    if (b->offset + b->size <= address) continue;
    if (is_write && !b->written) {
      b->written = true;
      b->first = cycle;
    }
    if (b->written) b->last = std::max(b->last, cycle);
  }
}

nlohmann::json MemoryProfile::to_json(double clock_hz) const {
  nlohmann::json out = {{"clock_hz", clock_hz}, {"memories", nlohmann::json::array()}};
  for (const auto& [key, m] : memories_) {
    const auto& [chip, core, space] = key;
    // Occupancy steps: +size at first, -size after last.
    std::map<std::uint64_t, std::int64_t> delta;
    nlohmann::json buffers = nlohmann::json::array();
    for (const auto& b : m.buffers) {
      nlohmann::json j = {{"name", b.name}, {"offset", b.offset}, {"size", b.size}};
      if (b.written) {
        j["first_cycle"] = b.first;
        j["last_cycle"] = b.last;
        delta[b.first] += static_cast<std::int64_t>(b.size);
        delta[b.last + 1] -= static_cast<std::int64_t>(b.size);
      }
      buffers.push_back(j);
    }
    nlohmann::json timeline = nlohmann::json::array();
    std::int64_t bytes = 0;
    std::int64_t peak = 0;
    std::uint64_t peak_cycle = 0;
    for (const auto& [cycle, d] : delta) {
      bytes += d;
      timeline.push_back({cycle, bytes});
      if (bytes > peak) {
        peak = bytes;
        peak_cycle = cycle;
      }
    }
    out["memories"].push_back({{"chip", chip},
                               {"core", core},
                               {"space", space_name(space)},
                               {"capacity", m.capacity},
                               {"peak_bytes", peak},
                               {"peak_cycle", peak_cycle},
                               {"timeline", timeline},
                               {"buffers", buffers}});
  }
  return out;
}

std::string MemoryProfile::to_svg(double clock_hz) const {
  const nlohmann::json j = to_json(clock_hz);
  constexpr double kWidth = 900;
  constexpr double kPanel = 260;
  constexpr double kLeft = 70;
  std::string body;
  double y0 = 10;
  for (const auto& m : j["memories"]) {
    std::uint64_t end = 1;
    for (const auto& b : m["buffers"]) {
      if (b.contains("last_cycle")) end = std::max(end, b["last_cycle"].get<std::uint64_t>() + 1);
    }
    const double peak = std::max<double>(1, m["peak_bytes"].get<double>());
    const double plot_w = kWidth - kLeft - 10;
    const double plot_h = kPanel - 50;
    auto x = [&](double cycle) { return kLeft + plot_w * cycle / static_cast<double>(end); };
    auto y = [&](double bytes) { return y0 + 25 + plot_h * (1 - bytes / peak); };
    body += fmt::format(
        "<text x='{}' y='{}' font-size='13' font-family='sans-serif'>chip {} {}{}: peak {} bytes at cycle {} "
        "(capacity {})</text>\n",
        kLeft, y0 + 15, m["chip"].get<int>(), m["space"].get<std::string>(),
        m["space"] == "hbm" ? std::string() : fmt::format(" core {}", m["core"].get<int>()), m["peak_bytes"].dump(),
        m["peak_cycle"].dump(), m["capacity"].dump());
    // Buffers stacked in order of first use, as bars from first to last cycle.
    std::vector<nlohmann::json> live;
    for (const auto& b : m["buffers"]) {
      if (b.contains("first_cycle")) live.push_back(b);
    }
    std::sort(live.begin(), live.end(),
              [](const auto& a, const auto& b) { return a["first_cycle"] < b["first_cycle"]; });
    double stack = 0;
    std::size_t colour = 0;
    for (const auto& b : live) {
      const double size = b["size"].get<double>();
      const double top = y(std::min(peak, stack + size));
      const double bottom = y(stack);
      body += fmt::format(
          "<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='{:.1f}' fill='hsl({},60%,70%)' stroke='#555' "
          "stroke-width='0.3'><title>{} ({} bytes, cycles {}..{})</title></rect>\n",
          x(b["first_cycle"].get<double>()), top,
          std::max(1.0, x(b["last_cycle"].get<double>() + 1) - x(b["first_cycle"].get<double>())),
          std::max(0.5, bottom - top), (colour++ * 47) % 360, b["name"].get<std::string>(), b["size"].dump(),
          b["first_cycle"].dump(), b["last_cycle"].dump());
      stack = std::min(peak, stack + size);
    }
    // Occupancy curve.
    std::string points;
    double previous = 0;
    for (const auto& step : m["timeline"]) {
      const double c = step[0].get<double>();
      const double v = step[1].get<double>();
      points += fmt::format("{:.1f},{:.1f} {:.1f},{:.1f} ", x(c), y(previous), x(c), y(v));
      previous = v;
    }
    body += fmt::format("<polyline points='{}' fill='none' stroke='black' stroke-width='1.2'/>\n", points);
    body +=
        fmt::format("<line x1='{}' y1='{:.1f}' x2='{}' y2='{:.1f}' stroke='#999'/>\n", kLeft, y(0), kWidth - 10, y(0));
    body += fmt::format("<text x='{}' y='{:.1f}' font-size='11' font-family='sans-serif'>0</text>\n", kLeft - 12, y(0));
    body += fmt::format(
        "<text x='{}' y='{:.1f}' font-size='11' font-family='sans-serif' text-anchor='end'>{:.3g} "
        "B</text>\n",
        kLeft - 4, y(peak) + 4, peak);
    body += fmt::format(
        "<text x='{}' y='{:.1f}' font-size='11' font-family='sans-serif' text-anchor='end'>{} cycles "
        "({:.3g} us)</text>\n",
        kWidth - 10, y(0) + 14, end, static_cast<double>(end) / clock_hz * 1e6);
    y0 += kPanel;
  }
  return fmt::format("<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}'>\n{}</svg>\n", kWidth, y0 + 10,
                     body);
}

std::vector<std::uint8_t> MemoryProfile::serialize() const {
  dist::ByteWriter w;
  w.put<std::uint64_t>(memories_.size());
  for (const auto& [key, m] : memories_) {
    w.put(std::get<0>(key));
    w.put(std::get<1>(key));
    w.put(std::get<2>(key));
    w.put(m.capacity);
    w.put(m.sorted);
    w.put<std::uint64_t>(m.buffers.size());
    for (const Buffer& b : m.buffers) {
      w.put_string(b.name);
      w.put(b.offset);
      w.put(b.size);
      w.put(b.written);
      w.put(b.first);
      w.put(b.last);
    }
  }
  return w.take();
}

void MemoryProfile::absorb(const std::vector<std::uint8_t>& bytes) {
  dist::ByteReader r(bytes);
  for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
    const auto chip = r.get<std::uint32_t>();
    const auto core = r.get<std::uint32_t>();
    const Key key{chip, core, r.get<Space>()};
    Memory m;
    m.capacity = r.get<std::uint64_t>();
    m.sorted = r.get<bool>();
    m.buffers.resize(r.get<std::uint64_t>());
    for (Buffer& b : m.buffers) {
      b.name = r.get_string();
      b.offset = r.get<std::uint64_t>();
      b.size = r.get<std::uint64_t>();
      b.written = r.get<bool>();
      b.first = r.get<std::uint64_t>();
      b.last = r.get<std::uint64_t>();
    }
    if (!memories_.emplace(key, std::move(m)).second) {
      throw std::logic_error(fmt::format("merging memory profiles: chip {} core {} {} was profiled twice", chip, core,
                                         space_name(std::get<2>(key))));
    }
  }
}

}  // namespace tpuemu::chip
