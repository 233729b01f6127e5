// The run API (api/): fault parsing, the bit-for-bit compare, collective
// sizes, and runs in this process and in children giving the same result.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "api/collective.hpp"
#include "api/line_plot.hpp"
#include "api/run.hpp"
#include "programs/generators.hpp"

using namespace tpuemu;

TEST_CASE("parse_fault locates engine faults and leaves deadlocks unplaced", "[api]") {
  struct Row {
    const char* message;
    std::optional<std::uint32_t> chip, core;
    std::optional<std::uint64_t> bundle;
    const char* file;
    std::uint32_t line, col;
  };
  const std::vector<Row> rows = {
      {"chip 0 core 0 bundle 0x1 (out_of_range.llo:4:3): vld: VMEM address 0x400000 is outside VMEM", 0, 0, 1,
       "out_of_range.llo", 4, 3},
      {"chip 12 core 1 bundle 0x1c (k.llo:9): the run reached the cycle limit", 12, 1, 0x1c, "k.llo", 9, 0},
      {"chip 3 core 0 bundle 0xab (dump-final_bundles.txt:120:7 loc(\"x\")): pop from an empty FIFO", 3, 0, 0xab,
       "dump-final_bundles.txt", 120, 7},
      {"deadlock: every core waits: chip 0 core 0 bundle 0x2 waits for flag 1; chip 1 ...", std::nullopt, std::nullopt,
       std::nullopt, "", 0, 0},
  };
  for (const Row& r : rows) {
    INFO(r.message);
    const api::FaultSite site = api::parse_fault(r.message);
    CHECK(site.message == r.message);
    CHECK(site.chip == r.chip);
    CHECK(site.core == r.core);
    CHECK(site.bundle == r.bundle);
    CHECK(site.file == r.file);
    CHECK(site.line == r.line);
    CHECK(site.col == r.col);
  }
}

namespace {
NpyArray floats(std::vector<float> v, std::vector<std::uint64_t> shape) {
  NpyArray a;
  a.dtype = NpyDtype::kFloat32;
  a.shape = std::move(shape);
  a.data.resize(v.size() * 4);
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}
}  // namespace

TEST_CASE("compare_bits says bit-exact or what differs", "[api]") {
  const NpyArray a = floats({1, 2, 3, 4}, {2, 2});
  CHECK(api::compare_bits(a, a) == "bit-exact (4 elements)");
  CHECK(api::is_bit_exact(api::compare_bits(a, a)));
  const std::string one = api::compare_bits(a, floats({1, 2, 3.5F, 4}, {2, 2}));
  CHECK(one == "1 of 4 elements differ, the first at flat index 2: got 3 where 3.5 was expected");
  CHECK_FALSE(api::is_bit_exact(one));
  // -0.0 and 0.0 compare equal as floats, not as bits.
  CHECK_FALSE(api::is_bit_exact(api::compare_bits(floats({0.0F}, {1}), floats({-0.0F}, {1}))));
  CHECK(api::compare_bits(a, floats({1, 2, 3, 4}, {4})) == "shape [2,2] differs from the expected [4]");
  NpyArray ints = a;
  ints.dtype = NpyDtype::kInt32;
  CHECK(api::compare_bits(a, ints).starts_with("dtype float32 differs from the expected file's int32"));
}

TEST_CASE("compare_bits against a file reads it in pieces and says the same", "[api]") {
  // 5 MiB of floats: three pieces of compare_bits' 2 MiB; differences in the
  // first and the last piece, the first of them reported with its value.
  std::vector<float> values(std::size_t{5} << 18);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 1000) * 0.5F;
  const NpyArray expected = floats(values, {1280, 1024});
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tpuemu_test_compare_" + std::to_string(::getpid()) + ".npy"))
          .string();
  write_npy(path, expected);
  const NpyFileHeader file = read_npy_header(path);
  CHECK(api::compare_bits(expected, file) == "bit-exact (1310720 elements)");
  std::vector<float> changed = values;
  changed[5] = -1.0F;
  changed[changed.size() - 1] = 7.0F;
  const NpyArray got = floats(changed, {1280, 1024});
  CHECK(api::compare_bits(got, file) == api::compare_bits(got, expected));
  CHECK(api::compare_bits(got, file) ==
        "2 of 1310720 elements differ, the first at flat index 5: got -1 where 2.5 was expected");
  CHECK(api::compare_bits(floats(values, {1024, 1280}), file) ==
        "shape [1024,1280] differs from the expected [1280,1024]");
  std::filesystem::remove(path);
}

TEST_CASE("BitComparison fed in pieces says what compare_bits says", "[api]") {
  std::vector<float> values(std::size_t{3} << 18);  // 3 MiB: more than one of the file reader's pieces
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 777) * 0.5F;
  const NpyArray expected = floats(values, {768, 1024});
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tpuemu_test_pieces_" + std::to_string(::getpid()) + ".npy")).string();
  write_npy(path, expected);
  const NpyFileHeader file = read_npy_header(path);
  std::vector<float> changed = values;
  changed[3] = -1.0F;
  changed[values.size() / 2] = 9.0F;
  const NpyArray got = floats(changed, {768, 1024});
  for (const std::size_t piece : {std::size_t{4}, std::size_t{4096}, std::size_t{1} << 20, got.data.size()}) {
    INFO("pieces of " << piece << " bytes");
    api::BitComparison by_array(got.dtype, got.shape, expected);
    api::BitComparison by_file(got.dtype, got.shape, file);
    for (std::size_t at = 0; at < got.data.size(); at += piece) {
      const auto part = std::span<const std::uint8_t>(got.data).subspan(at, std::min(piece, got.data.size() - at));
      by_array.add(part);
      by_file.add(part);
    }
    CHECK(by_array.verdict() == api::compare_bits(got, expected));
    CHECK(by_file.verdict() == by_array.verdict());
  }
  CHECK(api::compare_bits(got, expected) ==
        "2 of 786432 elements differ, the first at flat index 3: got -1 where 1.5 was expected");
  // A shape that differs is the verdict whatever the data; a verdict before
  // all the data came, or a piece past the end, is a caller's error.
  api::BitComparison other_shape(got.dtype, {1024, 768}, expected);
  other_shape.add(got.data);
  CHECK(other_shape.verdict() == "shape [1024,768] differs from the expected [768,1024]");
  api::BitComparison partial(got.dtype, got.shape, expected);
  partial.add(std::span<const std::uint8_t>(got.data).subspan(0, 8));
  CHECK_THROWS_AS(partial.verdict(), std::logic_error);
  CHECK_THROWS_AS(partial.add(got.data), std::logic_error);
  CHECK_THROWS_AS(partial.add(std::span<const std::uint8_t>(got.data).subspan(0, 3)), std::logic_error);
  std::filesystem::remove(path);
}

TEST_CASE("predicted_cycle_limit: ten times the prediction, never below the default", "[api]") {
  const std::uint64_t fallback = chip::RunOptions{}.max_cycles;
  CHECK(api::predicted_cycle_limit(0.0, 1.5e9) == fallback);
  CHECK(api::predicted_cycle_limit(0.0066, 1.5e9) == fallback);       // 9.9e7 cycles
  CHECK(api::predicted_cycle_limit(0.1177, 1.5e9) == 1'765'500'000);  // the 2 GiB one-shot all-reduce on v5e 2x2
  CHECK(api::predicted_cycle_limit(std::nan(""), 1.5e9) == fallback);
  CHECK(api::predicted_cycle_limit(-1.0, 1.5e9) == fallback);
  CHECK(api::predicted_cycle_limit(1e30, 1.5e9) == 9'000'000'000'000'000'000U);
}

TEST_CASE("collective sizes parse as nccl-tests writes them", "[api]") {
  CHECK(api::parse_collective_sizes("64K:256K") == std::vector<std::uint64_t>{65536, 131072, 262144});
  CHECK(api::parse_collective_sizes("1M,4M") == std::vector<std::uint64_t>{1 << 20, 4 << 20});
  CHECK(api::parse_collective_sizes("4096") == std::vector<std::uint64_t>{4096});
  CHECK_THROWS_AS(api::parse_collective_sizes("12Q"), api::BadInput);
  CHECK_THROWS_AS(api::parse_collective_sizes("0"), api::BadInput);
  CHECK_THROWS_AS(api::parse_collective_sizes("1M:64K"), api::BadInput);
}

namespace {

// An f32 all-reduce over the 8 GPUs of one H100 node, its size and algorithm not yet set.
api::CollectiveJob h100_node_all_reduce() {
  api::CollectiveJob job;
  job.chip.preset = "h100";
  job.topology.shape = "node:8";
  job.spec.op = "all-reduce";
  job.spec.dtype = "f32";
  job.spec.axes = {0};
  return job;
}

}  // namespace

TEST_CASE("collective protocol auto: the cost model picks (algorithm, protocol) per size as NCCL's does", "[api]") {
  api::CollectiveJob job = h100_node_all_reduce();
  const api::CollectiveSetup setup = api::check_collective_setup(job);
  const std::vector<std::string> protocols{"LL", "LL128", "Simple"};
  // Ring alone: LL (lowest latency) small, LL128 in between, Simple (no flags, full rate) large.
  struct Row {
    std::uint64_t bytes;
    const char* protocol;
  };
  for (const Row& r : {Row{32 << 10, "LL"}, Row{1 << 20, "LL"}, Row{16 << 20, "LL128"}, Row{256 << 20, "Simple"}}) {
    INFO(r.bytes);
    job.spec.bytes = r.bytes;
    const api::CollectiveChoice c = api::choose_collective_algorithm(job, setup, {"ring"}, protocols);
    CHECK(c.algorithm == "ring");
    CHECK(c.protocol == r.protocol);
    REQUIRE(c.predictions.size() == 3);
    CHECK(c.predictions[0].first == "ring/LL");
  }
  // Without protocols: the algorithm alone, named plainly.
  job.spec.bytes = 1 << 20;
  const api::CollectiveChoice plain = api::choose_collective_algorithm(job, setup);
  CHECK(plain.protocol.empty());
  CHECK(plain.predictions.front().first.find('/') == std::string::npos);
  CHECK(api::collective_protocol_name("ll128") == "LL128");
  CHECK(api::collective_protocol_name("SIMPLE") == "Simple");
  CHECK_THROWS_AS(api::collective_protocol_name("LL64"), api::BadInput);
}

TEST_CASE("collective runs are planned in the API: algorithms x sizes, each with its protocol, checked", "[api]") {
  api::CollectiveJob job = h100_node_all_reduce();
  const api::CollectiveSetup setup = api::check_collective_setup(job);
  const std::vector<std::uint64_t> sizes{32 << 10, 256 << 20};
  // --proto auto: each run's protocol by the cost model; a named algorithm keeps its name.
  const auto runs = api::plan_collective_runs(job, setup, "ring,in-network", "auto", sizes);
  REQUIRE(runs.size() == 4);
  CHECK(runs[0].algorithm == "ring");
  CHECK(runs[0].bytes == (32 << 10));
  CHECK(runs[0].protocol == "LL");
  CHECK(runs[1].protocol == "Simple");
  CHECK(runs[2].algorithm == "in-network");
  CHECK(runs[2].protocol == "Simple");  // NCCL runs NVLS with Simple only
  CHECK(runs[2].predictions.size() == 1);
  // One protocol: no predictions; the job for a run carries it.
  const auto fixed = api::plan_collective_runs(job, setup, "ring", "ll128", {1 << 20});
  REQUIRE(fixed.size() == 1);
  CHECK(fixed[0].protocol == "LL128");
  CHECK(fixed[0].predictions.empty());
  const api::CollectiveJob planned = api::planned_collective_job(job, fixed[0]);
  CHECK(planned.spec.algorithm == "ring");
  CHECK(planned.spec.bytes == (1 << 20));
  CHECK(planned.protocol == "LL128");
  // auto over every algorithm: the least of all (algorithm, protocol) predictions.
  const auto picked = api::plan_collective_runs(job, setup, "auto", "auto", {32 << 10});
  REQUIRE(picked.size() == 1);
  const auto best = std::min_element(picked[0].predictions.begin(), picked[0].predictions.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  CHECK(best->first == picked[0].algorithm + "/" + picked[0].protocol);
  // Refusals, before any run.
  CHECK_THROWS_WITH(api::plan_collective_runs(job, setup, "in-network", "LL", sizes),
                    Catch::Contains("does not run with --proto LL"));
  CHECK_THROWS_AS(api::plan_collective_runs(job, setup, "ring", "LL64", sizes), api::BadInput);
  // A size the ring cannot split is planned as asked (it runs padded); one that is not whole elements is refused.
  CHECK(api::plan_collective_runs(job, setup, "ring", "auto", {1000}).front().bytes == 1000);
  CHECK_THROWS_WITH(api::plan_collective_runs(job, setup, "ring", "auto", {1002}),
                    Catch::Contains("bytes 1002 must be a multiple of the 4-byte f32 element"));
  api::CollectiveJob torus = job;
  torus.chip.preset = "v5e";
  torus.topology.shape = "4x4";
  torus.spec.axes = {0, 1};
  const api::CollectiveSetup torus_setup = api::check_collective_setup(torus);
  CHECK(api::plan_collective_runs(torus, torus_setup, "ring", "auto", {64 << 10}).front().protocol.empty());
  CHECK_THROWS_WITH(api::plan_collective_runs(torus, torus_setup, "ring", "Simple", {64 << 10}),
                    Catch::Contains("NCCL protocols run on switched fabrics"));
}

TEST_CASE("a run in this process and later runs in children give identical results", "[api]") {
  api::Job job;
  job.chip.preset = "v5e";
  programs::AddSpec spec;
  spec.n = 4096;
  spec.chunk_bytes = 8192;
  job.steps.push_back({api::assemble(programs::generate_add(spec, load_chip(job.chip)), "add.llo"), "add.llo", {}});
  std::vector<float> a(spec.n), b(spec.n);
  for (std::size_t i = 0; i < spec.n; ++i) {
    a[i] = static_cast<float>(i) * 0.5F;
    b[i] = 3.0F - static_cast<float>(i);
  }
  job.inputs["0"].per_chip = {floats(a, {spec.n})};
  job.inputs["1"].per_chip = {floats(b, {spec.n})};
  REQUIRE_FALSE(api::process_has_simulated());
  const api::Result here = api::run(job);
  CHECK(api::process_has_simulated());
  api::Job again = job;
  again.isolation = api::Isolation::kInProcess;  // refused: this process has simulated
  CHECK_THROWS_AS(api::run(again), api::BadInput);
  const api::Result child = api::run(job);  // kAuto: a child now
  again.isolation = api::Isolation::kChild;
  const api::Result child2 = api::run(again);
  REQUIRE_FALSE(here.fault);
  const NpyArray c = here.output("2");
  for (std::size_t i = 0; i < spec.n; ++i) {
    const float want = a[i] + b[i];
    REQUIRE(std::memcmp(&c.as_f32()[i], &want, 4) == 0);
  }
  for (const api::Result* r : {&child, &child2}) {
    CHECK(r->cycles == here.cycles);
    CHECK(r->report == here.report);
    CHECK(r->output("2").data == c.data);
  }
  CHECK_THROWS_AS(here.output("7"), api::BadInput);
  // A faulting job and a bad one in between change nothing for the next.
  api::Job bad = job;
  bad.inputs.erase("1");
  CHECK_THROWS_AS(api::run(bad), api::BadInput);
  CHECK(api::run(job).report == here.report);
}

TEST_CASE("line plots: a marker outside the data's x range widens the axis, and labels do not overlap", "[api]") {
  // A sweep of batch 256..2048 whose series' threshold is 4369: its line was drawn at x 725 on a
  // 720-wide chart, and two series' labels at the same place.
  api::LinePlot plot;
  plot.log2_x = true;
  plot.series = {{"dp", {{256, 1}, {512, 2}, {1024, 3}, {2048, 4}}}, {"fsdp", {{256, 2}, {2048, 5}}}};
  plot.markers = {{4369, "dp: threshold"}, {4369, "fsdp: threshold"}};
  const std::string svg = api::line_plot_svg(plot);
  std::vector<double> xs;
  std::vector<double> label_ys;
  for (std::size_t at = svg.find("stroke-dasharray"); at != std::string::npos;
       at = svg.find("stroke-dasharray", at + 1)) {
    const std::size_t line = svg.rfind("<line x1=\"", at);
    xs.push_back(std::stod(svg.substr(line + 10)));
    const std::size_t text = svg.find("<text x=\"", at);
    const std::size_t y = svg.find("y=\"", text);
    label_ys.push_back(std::stod(svg.substr(y + 3)));
  }
  REQUIRE(xs.size() == 2);
  for (double x : xs) CHECK((x > 0 && x <= 720));
  CHECK(label_ys[0] != label_ys[1]);
}
