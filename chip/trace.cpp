#include "chip/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "dist/bytes.hpp"

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

void Tracer::flow_start(std::uint64_t id, std::uint32_t chip, std::uint32_t track, double at) {
  flow_starts_[id] = FlowStart{chip, track, at};
}

void Tracer::flow_end(std::uint64_t id, double from, std::uint32_t chip, std::uint32_t track, double to) {
  const auto start = flow_starts_.find(id);
  std::optional<FlowStart> local;
  if (start != flow_starts_.end()) {
    local = start->second;
    flow_starts_.erase(start);
  }
  if (!in_window(from, to)) return;
  const std::uint32_t name = intern("remote DMA");
  // A start another process traced is placed by write(), after absorb().
  push(local ? Event{'s', local->chip, local->track, name, local->at, local->at, 1, id, {}}
             : Event{'s', 0, kUnplaced, name, from, from, 1, id, {}});
  push(Event{'f', chip, track, name, to, to, 1, id, {}});
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
    emit({{"ph", "M"},
          {"name", "process_sort_index"},
          {"pid", chip},
          {"tid", 0},
          {"ts", 0},
          {"args", {{"sort_index", chip}}}});
  }
  for (const auto& [chip, names] : track_names_) {
    for (std::size_t t = 0; t < names.size(); ++t) {
      emit(
          {{"ph", "M"}, {"name", "thread_name"}, {"pid", chip}, {"tid", t}, {"ts", 0}, {"args", {{"name", names[t]}}}});
      emit({{"ph", "M"},
            {"name", "thread_sort_index"},
            {"pid", chip},
            {"tid", t},
            {"ts", 0},
            {"args", {{"sort_index", t}}}});
    }
  }
  // The canonical order (chip/trace.hpp); flow starts placed first.
  std::vector<Event> events;
  events.reserve(events_.size());
  for (const Event& e : events_) {
    if (e.phase != 's' || e.track != kUnplaced) {
      events.push_back(e);
      continue;
    }
    const auto start = flow_starts_.find(e.flow_id);
    if (start == flow_starts_.end()) continue;  // its sender was never traced: the arrow has no tail
    Event placed = e;
    placed.chip = start->second.chip;
    placed.track = start->second.track;
    placed.begin = placed.end = start->second.at;
    events.push_back(placed);
  }
  std::stable_sort(events.begin(), events.end(), [this](const Event& a, const Event& b) {
    if (a.chip != b.chip) return a.chip < b.chip;
    if (a.track != b.track) return a.track < b.track;
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    if (a.phase != b.phase) return a.phase < b.phase;
    if (a.flow_id != b.flow_id) return a.flow_id < b.flow_id;
    return names_[a.name] < names_[b.name];
  });
  for (const auto& e : events) {
    nlohmann::json j = {{"ph", std::string(1, e.phase)},
                        {"name", names_[e.name]},
                        {"pid", e.chip},
                        {"tid", e.track},
                        {"ts", e.begin * us_per_cycle}};
    if (e.phase == 'X') {
      j["dur"] = (e.end - e.begin) * us_per_cycle;
      nlohmann::json args = {{"begin_cycle", e.begin}, {"cycles", e.end - e.begin}};
      if (e.count > 1) args["count"] = e.count;
      if (const auto text = source_of(e)) {
        args["bundle"] = text->bundle;
        args["source"] = text->where;
        if (!text->loc.empty()) args["loc"] = text->loc;
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

std::optional<Tracer::SourceText> Tracer::source_of(const Event& e) const {
  if (e.source_text != kNoText) return source_texts_[e.source_text];
  if (e.source.op == nullptr) return std::nullopt;
  const auto& files = e.source.program->files;
  const auto& where = e.source.op->source;
  return SourceText{fmt::format("0x{:x}", e.source.bundle_address),
                    fmt::format("{}:{}", where.file < files.size() ? files[where.file] : "<program>", where.line),
                    e.source.op->loc};
}

std::vector<std::uint8_t> Tracer::serialize() const {
  dist::ByteWriter w;
  w.put(overflowed_);
  w.put<std::uint64_t>(process_names_.size());
  for (const auto& [chip, name] : process_names_) {
    w.put(chip);
    w.put_string(name);
  }
  w.put<std::uint64_t>(track_names_.size());
  for (const auto& [chip, names] : track_names_) {
    w.put(chip);
    w.put<std::uint64_t>(names.size());
    for (const auto& n : names) w.put_string(n);
  }
  w.put<std::uint64_t>(events_.size());
  for (const Event& e : events_) {
    w.put(e.phase);
    w.put(e.chip);
    w.put(e.track);
    w.put_string(names_[e.name]);
    w.put(e.begin);
    w.put(e.end);
    w.put(e.count);
    w.put(e.flow_id);
    const auto text = source_of(e);
    w.put(text.has_value());
    if (text) {
      w.put_string(text->bundle);
      w.put_string(text->where);
      w.put_string(text->loc);
    }
  }
  w.put<std::uint64_t>(counters_.size());
  for (const auto& [key, buckets] : counters_) {
    w.put(key.first);
    w.put_string(key.second);
    w.put_vector(buckets);
  }
  w.put<std::uint64_t>(flow_starts_.size());
  for (const auto& [id, start] : flow_starts_) {
    w.put(id);
    w.put(start);
  }
  return w.take();
}

void Tracer::absorb(const std::vector<std::uint8_t>& bytes) {
  dist::ByteReader r(bytes);
  overflowed_ = r.get<bool>() || overflowed_;
  for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
    const auto chip = r.get<std::uint32_t>();
    process_names_[chip] = r.get_string();
  }
  for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
    const auto chip = r.get<std::uint32_t>();
    std::vector<std::string> names(r.get<std::uint64_t>());
    for (auto& name : names) name = r.get_string();
    std::vector<std::string>& mine = track_names_[chip];
    const std::size_t common = std::min(mine.size(), names.size());
    if (!std::equal(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(common), names.begin())) {
      throw std::logic_error(
          fmt::format("merging traces: two processes named the tracks of chip {} differently", chip));
    }
    for (std::size_t t = mine.size(); t < names.size(); ++t) {
      tracks_.emplace(std::make_pair(chip, names[t]), static_cast<std::uint32_t>(t));
      mine.push_back(names[t]);
    }
  }
  for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
    Event e{};
    e.phase = r.get<char>();
    e.chip = r.get<std::uint32_t>();
    e.track = r.get<std::uint32_t>();
    e.name = intern(r.get_string());
    e.begin = r.get<double>();
    e.end = r.get<double>();
    e.count = r.get<std::uint32_t>();
    e.flow_id = r.get<std::uint64_t>();
    if (r.get<bool>()) {
      SourceText text;
      text.bundle = r.get_string();
      text.where = r.get_string();
      text.loc = r.get_string();
      e.source_text = static_cast<std::uint32_t>(source_texts_.size());
      source_texts_.push_back(std::move(text));
    }
    events_.push_back(e);
  }
  if (events_.size() > options_.max_events) overflowed_ = true;  // the limit is the whole trace's
  for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
    const auto chip = r.get<std::uint32_t>();
    auto key = std::make_pair(chip, r.get_string());
    const auto theirs = r.get_vector<double>();
    auto& buckets = counters_[key];
    if (buckets.size() < theirs.size()) buckets.resize(theirs.size(), 0.0);
    for (std::size_t b = 0; b < theirs.size(); ++b) buckets[b] += theirs[b];
  }
  for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
    const auto id = r.get<std::uint64_t>();
    flow_starts_[id] = r.get<FlowStart>();
  }
}

}  // namespace tpuemu::chip
