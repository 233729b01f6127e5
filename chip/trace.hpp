// Trace events for the trace viewer: Chrome trace-event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open. One process per chip, one
// track (thread) per unit: each core's issue slot, MXUs, VPU, vector
// loads/stores, XLUs, EUP, DMA lanes and remote DMAs; per chip its ICI link
// directions, arrivals, and counters of HBM and ICI bandwidth in use.
//
// Contract:
//  * Times are cycles of the chip clock, written as microseconds.
//  * Spans on one track never overlap partially (they nest or follow each
//    other); with aggregation, back-to-back spans of the same name on a
//    track merge into one (its `count` arg says how many).
//  * Only events that overlap the window [window_begin, window_end) are
//    kept; once max_events are kept, overflowed() turns true and later
//    events are dropped; runs check it and stop (a trace that big needs a
//    window).
//  * The emulator calls a Tracer only when tracing is on (a null pointer
//    check on the hot path otherwise).
//  * write() orders events by (chip, track, begin, end, phase, flow id,
//    name), keeping the order of emission among equals; since every event of
//    a chip's track comes from the process that simulates that chip, the
//    file is the same whether one process traced the pod or several
//    tracers were merged (serialize() / absorb(), one per MPI rank).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "isa/program.hpp"

namespace tpuemu::chip {

// Where an event's op came from: bundle address, source line and the dump's loc(...).
struct TraceSource {
  const isa::Program* program = nullptr;
  const isa::Op* op = nullptr;
  std::uint32_t bundle_address = 0;
};

class Tracer {
 public:
  struct Options {
    double clock_hz = 1e9;
    std::uint64_t window_begin = 0;
    std::uint64_t window_end = UINT64_MAX;
    std::uint64_t max_events = 4'000'000;
    bool aggregate = true;
    double counter_bucket_cycles = 1500;  // counters are averaged over buckets of this many cycles
  };
  explicit Tracer(Options options);

  // The track called `name` of process `chip` (created on first use, in order).
  std::uint32_t track(std::uint32_t chip, const std::string& name);
  void name_process(std::uint32_t chip, const std::string& name);

  void span(std::uint32_t chip, std::uint32_t track, std::string_view name, double begin, double end,
            const TraceSource& source = {});
  void instant(std::uint32_t chip, std::uint32_t track, std::string_view name, double at);
  // A flow arrow from a span's start on one track to a span on another, in
  // two halves that may be traced by different processes: where it starts
  // (kept aside, no event yet), and where it ends, which adds both events if
  // [from, to] is in the window. `id` names the arrow in every process.
  void flow_start(std::uint64_t id, std::uint32_t chip, std::uint32_t track, double at);
  void flow_end(std::uint64_t id, double from, std::uint32_t chip, std::uint32_t track, double to);
  // Adds `bytes` moved during [begin, end) to counter `name` of `chip`.
  void add_bytes(std::uint32_t chip, std::string_view name, double begin, double end, double bytes);

  [[nodiscard]] std::uint64_t events() const { return events_.size(); }
  [[nodiscard]] bool overflowed() const { return overflowed_; }
  // Another process's part of the same trace overflowed.
  void set_overflowed() { overflowed_ = true; }
  [[nodiscard]] std::string overflow_message() const;
  [[nodiscard]] const Options& options() const { return options_; }
  // Sum of span durations (cycles) on a track, for checks.
  [[nodiscard]] double busy_cycles(std::uint32_t chip, const std::string& track_name) const;
  void write(std::ostream& out) const;

  // Everything write() needs, with names and source lines as text (no
  // pointers), for another process's absorb().
  [[nodiscard]] std::vector<std::uint8_t> serialize() const;
  // Adds what another tracer with the same options serialized: its events,
  // tracks, process names, counters and flow starts. Its chips' tracks must
  // be its own (std::logic_error if both tracers named a chip's tracks
  // differently).
  void absorb(const std::vector<std::uint8_t>& bytes);

 private:
  // Where an event's op came from as written: from a TraceSource, or from
  // another process (absorb()).
  struct SourceText {
    std::string bundle;
    std::string where;  // file:line
    std::string loc;
  };
  static constexpr std::uint32_t kNoText = UINT32_MAX;
  static constexpr std::uint32_t kUnplaced = UINT32_MAX;  // track of an 's' whose start another process has
  struct Event {
    char phase;  // 'X' span, 'i' instant, 's'/'f' flow
    std::uint32_t chip;
    std::uint32_t track;
    std::uint32_t name;
    double begin;
    double end;
    std::uint32_t count;
    std::uint64_t flow_id;
    TraceSource source;
    std::uint32_t source_text = kNoText;  // index into source_texts_, for absorbed events
  };
  struct FlowStart {
    std::uint32_t chip;
    std::uint32_t track;
    double at;
  };
  [[nodiscard]] bool in_window(double begin, double end) const;
  void push(const Event& e);
  std::uint32_t intern(std::string_view name);
  [[nodiscard]] std::optional<SourceText> source_of(const Event& e) const;

  Options options_;
  bool overflowed_ = false;
  std::vector<Event> events_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t> name_ids_;
  std::map<std::pair<std::uint32_t, std::string>, std::uint32_t> tracks_;
  std::map<std::uint32_t, std::vector<std::string>> track_names_;  // per chip, by track id
  std::map<std::uint32_t, std::string> process_names_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::size_t> last_span_;       // (chip, track) -> event index
  std::map<std::pair<std::uint32_t, std::string>, std::vector<double>> counters_;  // bytes per bucket
  std::unordered_map<std::uint64_t, FlowStart> flow_starts_;
  std::vector<SourceText> source_texts_;
};

}  // namespace tpuemu::chip
