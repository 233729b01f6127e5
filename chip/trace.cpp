#include "chip/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace tpuemu::chip {

std::string Tracer::overflow_message() const {
  return fmt::format(
      "the trace would exceed {} events; narrow it with --trace-window BEGIN:END (cycles) or raise --trace-max-events",
      options_.max_events);
}

Tracer::Tracer(Options options) : options_(options) {
  if (options_.counter_bucket_cycles <= 0) options_.counter_bucket_cycles = 1;
}

std::uint32_t Tracer::intern(std::string_view name) {
  auto it = name_ids_.find(std::string(name));
  if (it != name_ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(names_.size());
  names_.emplace_back(name);
  name_ids_.emplace(std::string(name), id);
  return id;
}

std::uint32_t Tracer::track(std::uint32_t chip, const std::string& name) {
  const auto key = std::make_pair(chip, name);
  if (const auto it = tracks_.find(key); it != tracks_.end()) return it->second;
  auto& names = track_names_[chip];
  const auto id = static_cast<std::uint32_t>(names.size());
  names.push_back(name);
  tracks_.emplace(key, id);
  return id;
}

void Tracer::name_process(std::uint32_t chip, const std::string& name) {
  process_names_[chip] = name;
}

bool Tracer::in_window(double begin, double end) const {
  return end >= static_cast<double>(options_.window_begin) && begin < static_cast<double>(options_.window_end);
}

void Tracer::push(const Event& e) {
  if (events_.size() >= options_.max_events) {
    overflowed_ = true;  // the runs check overflowed() and stop (no exception on a coroutine stack)
    return;
  }
  events_.push_back(e);
}

void Tracer::span(std::uint32_t chip, std::uint32_t track_id, std::string_view name, double begin, double end,
                  const TraceSource& source) {
  if (!in_window(begin, end)) return;
  const std::uint32_t name_id = intern(name);
  const auto key = std::make_pair(chip, track_id);
  if (options_.aggregate) {
    if (const auto it = last_span_.find(key); it != last_span_.end()) {
      Event& last = events_[it->second];
      if (last.name == name_id && last.end == begin) {
        last.end = end;
        last.count += 1;
        return;
      }
    }
  }
  push(Event{'X', chip, track_id, name_id, begin, end, 1, 0, source});
  if (!overflowed_) last_span_[key] = events_.size() - 1;
}

void Tracer::instant(std::uint32_t chip, std::uint32_t track_id, std::string_view name, double at) {
  if (!in_window(at, at)) return;
  push(Event{'i', chip, track_id, intern(name), at, at, 1, 0, {}});
}

void Tracer::flow(std::uint64_t id, std::uint32_t from_chip, std::uint32_t from_track, double from,
                  std::uint32_t to_chip, std::uint32_t to_track, double to) {
  if (!in_window(from, to)) return;
  const std::uint32_t name = intern("remote DMA");
  push(Event{'s', from_chip, from_track, name, from, from, 1, id, {}});
  push(Event{'f', to_chip, to_track, name, to, to, 1, id, {}});
}

void Tracer::add_bytes(std::uint32_t chip, std::string_view name, double begin, double end, double bytes) {
  if (!in_window(begin, end) || end <= begin) return;
  auto& buckets = counters_[std::make_pair(chip, std::string(name))];
  const double width = options_.counter_bucket_cycles;
  const auto first = static_cast<std::size_t>(begin / width);
  const auto last = static_cast<std::size_t>(end / width);
  if (buckets.size() <= last) buckets.resize(last + 1, 0.0);
  const double rate = bytes / (end - begin);
  for (std::size_t b = first; b <= last; ++b) {
    const double lo = std::max(begin, static_cast<double>(b) * width);
    const double hi = std::min(end, static_cast<double>(b + 1) * width);
    if (hi > lo) buckets[b] += rate * (hi - lo);
  }
}

double Tracer::busy_cycles(std::uint32_t chip, const std::string& track_name) const {
  const auto it = tracks_.find(std::make_pair(chip, track_name));
  if (it == tracks_.end()) return 0;
  double total = 0;
  for (const auto& e : events_) {
    if (e.phase == 'X' && e.chip == chip && e.track == it->second) total += e.end - e.begin;
  }
  return total;
}

void Tracer::write(std::ostream& out) const {
  const double us_per_cycle = 1e6 / options_.clock_hz;
  out << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  bool first = true;
  auto emit = [&](const nlohmann::json& j) {
    out << (first ? "" : ",\n") << j.dump();
    first = false;
  };
  for (const auto& [chip, name] : process_names_) {
    emit({{"ph", "M"}, {"name", "process_name"}, {"pid", chip}, {"tid", 0}, {"ts", 0}, {"args", {{"name", name}}}});
    emit({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", chip}, {"tid", 0}, {"ts", 0},
          {"args", {{"sort_index", chip}}}});
  }
  for (const auto& [chip, names] : track_names_) {
    for (std::size_t t = 0; t < names.size(); ++t) {
      emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", chip}, {"tid", t}, {"ts", 0}, {"args", {{"name", names[t]}}}});
      emit({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", chip}, {"tid", t}, {"ts", 0},
            {"args", {{"sort_index", t}}}});
    }
  }
  for (const auto& e : events_) {
    nlohmann::json j = {{"ph", std::string(1, e.phase)}, {"name", names_[e.name]}, {"pid", e.chip},
                        {"tid", e.track},                 {"ts", e.begin * us_per_cycle}};
    if (e.phase == 'X') {
      j["dur"] = (e.end - e.begin) * us_per_cycle;
      nlohmann::json args = {{"begin_cycle", e.begin}, {"cycles", e.end - e.begin}};
      if (e.count > 1) args["count"] = e.count;
      if (e.source.op != nullptr) {
        args["bundle"] = fmt::format("0x{:x}", e.source.bundle_address);
        const auto& files = e.source.program->files;
        const auto& where = e.source.op->source;
        args["source"] = fmt::format("{}:{}", where.file < files.size() ? files[where.file] : "<program>", where.line);
        if (!e.source.op->loc.empty()) args["loc"] = e.source.op->loc;
      }
      j["args"] = args;
    } else if (e.phase == 'i') {
      j["s"] = "t";
    } else {
      j["id"] = e.flow_id;
      j["cat"] = "ici";
      if (e.phase == 'f') j["bp"] = "e";
    }
    emit(j);
  }
  for (const auto& [key, buckets] : counters_) {
    const double seconds = options_.counter_bucket_cycles / options_.clock_hz;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      const double at = static_cast<double>(b) * options_.counter_bucket_cycles;
      emit({{"ph", "C"},
            {"name", key.second},
            {"pid", key.first},
            {"tid", 0},
            {"ts", at * us_per_cycle},
            {"args", {{"GB/s", buckets[b] / seconds / 1e9}}}});
    }
  }
  out << "\n]}\n";
}

}  // namespace tpuemu::chip
