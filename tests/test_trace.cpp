// Trace viewer output (chip/trace.hpp): the Chrome trace-event schema, spans
// that nest on every track, MXU spans that add up to the MXUs' busy cycles,
// flows of remote DMAs, the window and the event limit. One SystemC run per
// TEST_CASE.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "chip/pod.hpp"
#include "chip/run.hpp"
#include "isa/assembler.hpp"
#include "programs/generators.hpp"
#include "programs/reference.hpp"
#include "tests/test_support.hpp"

using namespace tpuemu;

namespace {

nlohmann::json written(const chip::Tracer& tracer) {
  std::stringstream s;
  tracer.write(s);
  return nlohmann::json::parse(s.str());
}

// Every event has name, ph, ts, pid, tid; on every track, spans nest.
void check_schema_and_nesting(const nlohmann::json& trace) {
  REQUIRE(trace.contains("traceEvents"));
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> spans;  // cycles
  for (const auto& e : trace["traceEvents"]) {
    for (const char* key : {"name", "ph", "ts", "pid", "tid"}) {
      INFO(e.dump());
      REQUIRE(e.contains(key));
    }
    if (e["ph"] == "X") {
      REQUIRE(e.contains("dur"));
      const double begin = e["args"]["begin_cycle"];
      spans[{e["pid"], e["tid"]}].emplace_back(begin, begin + e["args"]["cycles"].get<double>());
    }
  }
  for (auto& [track, list] : spans) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<double> open;  // ends of enclosing spans
    for (const auto& [begin, end] : list) {
      while (!open.empty() && open.back() <= begin) open.pop_back();
      INFO("track " << track.first << "/" << track.second << " span [" << begin << ", " << end << ")");
      if (!open.empty()) REQUIRE(end <= open.back());
      open.push_back(end);
    }
  }
}

double track_cycles(const nlohmann::json& trace, int pid, const std::string& track) {
  int tid = -1;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == pid && e["args"]["name"] == track) tid = e["tid"];
  }
  double total = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == pid && e["tid"] == tid) total += e["args"]["cycles"].get<double>();
  }
  return total;
}

chip::RunResult traced_matmul(chip::Tracer& tracer) {
  chip::RunRequest request;
  request.chip = test::preset("v5e");
  const programs::MatmulSpec spec{64, 256, 512, "bf16", true};
  static const isa::Program program = isa::assemble(programs::generate_matmul(spec, request.chip), "matmul.llo");
  request.program = &program;
  const auto a = programs::random_bf16_values(spec.m * spec.k, 3);
  const auto b = programs::random_bf16_values(spec.k * spec.n, 4);
  request.inputs[0] = make_npy(NpyDtype::kFloat32, {spec.m, spec.k}, a.data());
  request.inputs[1] = make_npy(NpyDtype::kFloat32, {spec.k, spec.n}, b.data());
  request.tracer = &tracer;
  return chip::run_program(request);
}

}  // namespace

TEST_CASE("trace: a matmul's trace has the schema, nests, and its MXU spans add up to the busy cycles", "[trace]") {
  chip::Tracer tracer({1.5e9});
  const chip::RunResult r = traced_matmul(tracer);
  REQUIRE_FALSE(r.fault.has_value());
  const nlohmann::json trace = written(tracer);
  check_schema_and_nesting(trace);
  for (int m = 0; m < 4; ++m) {
    const std::string name = "core0.mxu" + std::to_string(m);
    const auto unit = std::find_if(r.units.begin(), r.units.end(), [&](const auto& u) { return u.name == name; });
    REQUIRE(unit != r.units.end());
    CHECK(unit->busy_cycles > 0);
    CHECK(track_cycles(trace, 0, "core0 mxu" + std::to_string(m)) == Approx(unit->busy_cycles));
  }
  // One issue span per bundle, merged or not.
  CHECK(track_cycles(trace, 0, "core0 issue") == Approx(static_cast<double>(r.cores.front().bundles)));
  // Events name their op's bundle and source line.
  bool sourced = false;
  for (const auto& e : trace["traceEvents"]) {
    sourced = sourced || (e["ph"] == "X" && e["args"].contains("source") && e["args"].contains("bundle"));
  }
  CHECK(sourced);
}

TEST_CASE("trace: with --trace-detail every bundle is its own span", "[trace]") {
  chip::Tracer::Options options{1.5e9};
  options.aggregate = false;
  chip::Tracer tracer(options);
  const chip::RunResult r = traced_matmul(tracer);
  REQUIRE_FALSE(r.fault.has_value());
  const nlohmann::json trace = written(tracer);
  check_schema_and_nesting(trace);
  std::size_t issue_spans = 0;
  int issue_tid = -1;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == "core0 issue") issue_tid = e["tid"];
  }
  for (const auto& e : trace["traceEvents"]) issue_spans += e["ph"] == "X" && e["tid"] == issue_tid ? 1 : 0;
  CHECK(issue_spans == r.cores.front().bundles);
}

TEST_CASE("trace: the event limit stops the run, a window keeps only its events", "[trace]") {
  chip::Tracer::Options options{1.5e9};
  options.max_events = 50;
  chip::Tracer tracer(options);
  const chip::RunResult r = traced_matmul(tracer);
  REQUIRE(r.fault.has_value());
  CHECK(tracer.overflowed());
  CHECK_THAT(*r.fault, Catch::Contains("the trace would exceed 50 events"));
  chip::Tracer::Options windowed{1.5e9};
  windowed.window_begin = 1000;
  windowed.window_end = 1100;
  chip::Tracer small(windowed);
  small.span(0, small.track(0, "t"), "inside", 1050, 1060);
  small.span(0, small.track(0, "t"), "before", 10, 20);
  small.span(0, small.track(0, "t"), "after", 2000, 2010);
  CHECK(small.events() == 1);
}

TEST_CASE("trace: a pod's trace has a process per chip, ICI link tracks and flows for remote DMAs", "[trace]") {
  std::ifstream in(TPUEMU_PROGRAMS "/ring_shift.llo");
  std::stringstream text;
  text << in.rdbuf();
  const isa::Program program = isa::assemble(text.str(), "ring_shift.llo");
  chip::PodRequest request;
  request.chip = test::preset("v5e");
  request.topology = ici::make_topology({"4", std::vector<bool>{true}, true}, request.chip);
  request.program = &program;
  chip::Tracer tracer({1.5e9});
  request.tracer = &tracer;
  const chip::PodResult r = chip::run_pod(request);
  REQUIRE_FALSE(r.fault.has_value());
  const nlohmann::json trace = written(tracer);
  check_schema_and_nesting(trace);
  std::set<int> processes;
  std::map<std::uint64_t, int> flow_phases;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes.insert(e["pid"].get<int>());
    if (e["ph"] == "s") flow_phases[e["id"]] += 1;
    if (e["ph"] == "f") flow_phases[e["id"]] += 10;
  }
  CHECK(processes == std::set<int>{0, 1, 2, 3});
  REQUIRE(flow_phases.size() == 4);
  for (const auto& [id, phases] : flow_phases) CHECK(phases == 11);
  // Each link carried one 4 KiB packet: 4096 / 28.5 cycles busy (45 GB/s x
  // ici.payload_efficiency 0.95 at 1.5 GHz).
  for (int chip = 0; chip < 4; ++chip) CHECK(track_cycles(trace, chip, "ici +x") == Approx(4096.0 / 28.5));
}

TEST_CASE("memory profile: buffers live from first write to last access, occupancy and peak", "[profile]") {
  chip::MemoryProfile p;
  using S = chip::MemoryProfile::Space;
  p.add_buffer(0, 0, S::kVmem, "a", 0, 4096, 1 << 20);
  p.add_buffer(0, 0, S::kVmem, "b", 4096, 8192, 1 << 20);
  p.add_buffer(0, 0, S::kVmem, "never", 65536, 4096, 1 << 20);
  p.read(0, 0, S::kVmem, 0, 16, 5);        // read before any write: not live yet
  p.write(0, 0, S::kVmem, 0, 4096, 10);    // a live from 10
  p.write(0, 0, S::kVmem, 4000, 200, 20);  // straddles a and b: b live from 20
  p.read(0, 0, S::kVmem, 0, 16, 30);       // a until 30
  p.read(0, 0, S::kVmem, 8192, 16, 50);    // b until 50
  const auto j = p.to_json(1e9);
  const auto& m = j["memories"][0];
  CHECK(m["peak_bytes"] == 4096 + 8192);
  CHECK(m["peak_cycle"] == 20);
  CHECK(m["buffers"][0]["first_cycle"] == 10);
  CHECK(m["buffers"][0]["last_cycle"] == 30);
  CHECK(m["buffers"][1]["first_cycle"] == 20);
  CHECK(m["buffers"][1]["last_cycle"] == 50);
  CHECK_FALSE(m["buffers"][2].contains("first_cycle"));
  // Timeline: 4096 at 10, 12288 at 20, 8192 at 31, 0 at 51.
  CHECK(m["timeline"] == nlohmann::json::parse("[[10,4096],[20,12288],[31,8192],[51,0]]"));
  CHECK_THAT(p.to_svg(1e9), Catch::StartsWith("<svg"));
}

TEST_CASE("memory profile: a matmul's VMEM buffers and HBM operands are profiled", "[profile]") {
  chip::MemoryProfile profile;
  chip::RunRequest request;
  request.chip = test::preset("v5e");
  const programs::MatmulSpec spec{64, 256, 512, "bf16", true};
  const isa::Program program = isa::assemble(programs::generate_matmul(spec, request.chip), "matmul.llo");
  request.program = &program;
  const auto a = programs::random_bf16_values(spec.m * spec.k, 3);
  const auto b = programs::random_bf16_values(spec.k * spec.n, 4);
  request.inputs[0] = make_npy(NpyDtype::kFloat32, {spec.m, spec.k}, a.data());
  request.inputs[1] = make_npy(NpyDtype::kFloat32, {spec.k, spec.n}, b.data());
  request.profile = &profile;
  const chip::RunResult r = chip::run_program(request);
  REQUIRE_FALSE(r.fault.has_value());
  const auto j = profile.to_json(request.chip.clock_hz);
  bool vmem = false;
  bool hbm = false;
  for (const auto& m : j["memories"]) {
    if (m["space"] == "vmem") {
      vmem = true;
      CHECK(m["peak_bytes"].get<std::uint64_t>() > 0);
      CHECK(m["peak_bytes"].get<std::uint64_t>() <= request.chip.vmem.size_bytes);
    }
    if (m["space"] == "hbm") {
      hbm = true;
      // Inputs live from cycle 0; the output from its first DMA.
      CHECK(m["buffers"][0]["first_cycle"] == 0);
      CHECK(m["buffers"][2]["first_cycle"].get<std::uint64_t>() > 0);
      CHECK(m["buffers"][2]["last_cycle"].get<std::uint64_t>() <= r.cycles);
    }
  }
  CHECK(vmem);
  CHECK(hbm);
}

TEST_CASE("trace: tracers of separate processes merge into the file one tracer writes", "[trace]") {
  // The events of chips 0 and 1, each traced where it is simulated, or all in one tracer.
  const auto feed = [](chip::Tracer& t, std::uint32_t chip) {
    t.name_process(chip, "chip " + std::to_string(chip));
    const std::uint32_t issue = t.track(chip, "issue");
    const std::uint32_t arrivals = t.track(chip, "ici arrivals");
    t.span(chip, issue, "vadd", 10, 12);
    t.span(chip, issue, "vadd", 12, 14);  // aggregates with the one before
    t.add_bytes(chip, "HBM bandwidth", 0, 3000, 1e6);
    if (chip == 0) t.flow_start(7, 0, issue, 10);       // chip 0 sends ...
    if (chip == 1) t.flow_end(7, 10, 1, arrivals, 40);  // ... chip 1 receives
    t.instant(chip, issue, "halt", 50);
  };
  chip::Tracer whole(chip::Tracer::Options{});
  feed(whole, 0);
  feed(whole, 1);
  chip::Tracer rank0(chip::Tracer::Options{});
  chip::Tracer rank1(chip::Tracer::Options{});
  feed(rank0, 0);
  feed(rank1, 1);
  rank0.absorb(rank1.serialize());
  const nlohmann::json merged = written(rank0);
  CHECK(merged == written(whole));
  // The flow's tail is placed on the sender's track, its head on the receiver's.
  int tails = 0;
  for (const auto& e : merged["traceEvents"]) {
    if (e["ph"] == "s") {
      ++tails;
      CHECK(e["pid"] == 0);
      CHECK(e["ts"].get<double>() == Approx(10e6 / chip::Tracer::Options{}.clock_hz));
    }
  }
  CHECK(tails == 1);
  CHECK_FALSE(rank0.overflowed());

  SECTION("the event limit counts every process's events") {
    chip::Tracer::Options small;
    small.max_events = 5;  // chip 0 traces 2 events here (a span, an instant), chip 1 4 (and the flow): 6 in all
    chip::Tracer a(small);
    chip::Tracer b(small);
    feed(a, 0);
    feed(b, 1);
    CHECK_FALSE(a.overflowed());
    CHECK_FALSE(b.overflowed());
    a.absorb(b.serialize());
    CHECK(a.overflowed());
  }
  SECTION("two processes that named one chip's tracks differently are refused") {
    chip::Tracer other(chip::Tracer::Options{});
    other.track(0, "mxu0");
    CHECK_THROWS_WITH(rank0.absorb(other.serialize()), Catch::Contains("named the tracks of chip 0 differently"));
  }
}
