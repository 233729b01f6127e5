#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/chip_config.hpp"
#include "common/embedded_file.hpp"
#include "common/json_file.hpp"
#include "common/presets.hpp"
#include "tests/test_support.hpp"

using namespace tpuemu;

namespace {

using test::preset;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A file of this test process's own (test cases run in parallel processes).
std::string scratch_file(const std::string& name, const std::string& content) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tpuemu_test_" + std::to_string(::getpid()) + "_" + name)).string();
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

// Objects nested `depth` deep: {"a": {"a": ... 1 ... }}.
std::string nested_objects(int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += R"({"a": )";
  text += "1";
  text.append(static_cast<std::size_t>(depth), '}');
  return text;
}

std::string load_error(const ChipRequest& request) {
  try {
    load_chip(request);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

std::string set_error(const std::vector<std::string>& overrides) {
  ChipRequest r;
  r.preset = "v5e";
  r.overrides = overrides;
  return load_error(r);
}

// A value of `spec` in base units, written the way --set takes it.
std::string value_text(const ParamSpec& spec, double value) {
  const bool whole =
      spec.quantity == Quantity::kCount || spec.quantity == Quantity::kCycles || spec.quantity == Quantity::kBytes;
  return whole ? fmt::format("{}", static_cast<std::uint64_t>(value)) : fmt::format("{:.17g}", value);
}

}  // namespace

TEST_CASE("presets: the four TPU chips and the teaching chip are built in", "[config]") {
  CHECK(preset_names() ==
        std::vector<std::string>{"a100", "b200", "edu", "gb200", "h100", "h200", "v2", "v4p", "v5e", "v5p", "v6e"});
}

TEST_CASE("presets: derived peak bf16 FLOP/s is within 1% of the published per-chip figure", "[config]") {
  // How to Scale Your Model [tpus.md], per chip (shared/facts.md).
  const std::pair<const char*, double> published[] = {
      {"v5e", 1.97e14},
      {"v5p", 4.59e14},
      {"v4p", 2.75e14},
      {"v6e", 9.2e14},
      // Per core, one core per emulated chip [profiling.md, via shared/WORKLOADS.md section 4].
      {"v2", 2.3e13}};
  for (const auto& [name, flops] : published) {
    INFO(name);
    const ChipConfig c = preset(name);
    CHECK(std::abs(c.peak_bf16_flops() - flops) / flops < 0.01);
    // The derivation itself: MXUs per chip x size^2 x 2 x clock.
    CHECK(c.peak_bf16_flops() ==
          static_cast<double>(c.tensorcores_per_chip * c.mxu.count * c.mxu.size * c.mxu.size) * 2.0 * c.clock_hz);
  }
}

TEST_CASE("presets: headline numbers match shared/facts.md", "[config]") {
  const ChipConfig v5e = preset("v5e");
  CHECK(v5e.clock_hz == 1.5e9);
  CHECK(v5e.hbm.bandwidth == 8.2e11);
  CHECK(v5e.hbm.size_bytes == 16ULL << 30);
  CHECK(v5e.ici.link_bandwidth == 4.5e10);
  CHECK(v5e.ici.torus_dims == 2);
  CHECK(v5e.max_slice_dims() == std::vector<std::uint64_t>{16, 16});
  CHECK(v5e.vmem.size_bytes == 128ULL << 20);
  CHECK(v5e.slot_capacity_of(SlotClass::kValu) == 4);
  CHECK(v5e.slot_capacity_of(SlotClass::kMxu) == 4);
  CHECK(v5e.slot_capacity_of(SlotClass::kXlu) == 3);
  CHECK(v5e.slot_capacity_of(SlotClass::kLoad) == 3);
  CHECK(v5e.slot_capacity_of(SlotClass::kStore) == 1);
  CHECK(v5e.slot_capacity_of(SlotClass::kSalu) == 2);
  CHECK(v5e.slot_capacity_of(SlotClass::kEup) == 1);
  CHECK(v5e.latency(LatencyClass::kValu) == Cycles(1));
  CHECK(v5e.branch_delay_slots == 4);
  CHECK(v5e.ici.hop_latency_s == Approx(1e-6));

  const ChipConfig v5p = preset("v5p");
  CHECK(v5p.tensorcores_per_chip == 2);
  CHECK(v5p.hbm.bandwidth == 2.8e12);
  CHECK(v5p.ici.link_bandwidth == 9e10);
  CHECK(v5p.max_slice_dims() == std::vector<std::uint64_t>{16, 20, 28});
  CHECK(preset("v4p").vpu.vregs == 32);
  CHECK(preset("v6e").mxu.size == 256);
}

TEST_CASE("presets: every number in a shipped preset says where it comes from", "[config]") {
  // Resolved with its base presets; only the switched-fabric and NCCL
  // protocol parameters of a torus chip, which its preset leaves out, and
  // fabric.protocol and fabric.active_channels, a run's choices (`tpuemu
  // collective --proto` and its channel tuning), and dma.remote_traffic, a
  // switch of the model (off unless a run sets it), take their defaults.
  for (const std::string& name : preset_names()) {
    INFO(name);
    const ChipConfig c = resolve_chip(chip_layers(name));
    for (const ParamSpec& p : chip_params()) {
      INFO(p.path);
      const Provenance& prov = c.provenance.at(p.path);
      CHECK(prov.kind != Provenance::Kind::kUser);
      CHECK(!prov.text.empty());
      if (prov.text == "default" && p.path != "fabric.protocol" && p.path != "fabric.active_channels" &&
          p.path != "dma.remote_traffic") {
        CHECK((p.path.starts_with("fabric.") || p.path.starts_with("protocol.")));
        CHECK(c.fabric.kind == "torus");
      }
    }
  }
}

TEST_CASE("presets: the GPU presets join their chips through NVSwitches", "[config][fabric]") {
  const ChipConfig h100 = preset("h100");
  CHECK(h100.fabric.switched());
  CHECK(h100.fabric.links_per_switch() == std::vector<std::uint64_t>{5, 4, 4, 5});
  CHECK(h100.ici_bandwidth_per_chip() == 450e9);
  CHECK(h100.mxu.count == 0);
  CHECK(preset("h200").hbm.bandwidth == 4.8e12);
  CHECK(preset("b200").fabric.links_per_switch() == std::vector<std::uint64_t>{9, 9});
  CHECK(preset("b200").ici_bandwidth_per_chip() == 900e9);
  const ChipConfig gb200 = preset("gb200");
  CHECK(gb200.fabric.links_per_switch() == std::vector<std::uint64_t>(18, 1));
  CHECK(gb200.fabric.domain_size == 72);
  CHECK(preset("v5e").fabric.kind == "torus");
}

TEST_CASE("config: a switched fabric's wiring is checked against its links", "[config][fabric]") {
  const auto error = [](std::vector<std::string> overrides) {
    try {
      preset("h100", std::move(overrides));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(
      error({"fabric.switch_links=5,4,4"}) ==
      "--set: field 'fabric.switch_links': fabric.switch_links '5,4,4' adds up to 13 links, ici.links_per_chip is 18");
  CHECK(error({"fabric.switch_links=5,,4"}) ==
        "--set: field 'fabric.switch_links': '5,,4' is not a list of link counts like 5,4,4,5 (one per switch)");
  CHECK(error({"fabric.kind=mesh"}) == "--set: field 'fabric.kind': 'mesh' is not a fabric: torus or nvswitch");
  CHECK(error({"fabric.domain_size=1"}) ==
        "--set: field 'fabric.domain_size': a switched domain joins at least 2 chips");
  CHECK(error({"ici.links_per_chip=16", "fabric.switch_links=4,4,4,4"}) == "no error");
}

TEST_CASE("presets: embedded copies equal the files in configs/chips", "[config]") {
  for (const EmbeddedFile& f : embedded_chip_presets()) {
    INFO(f.path);
    CHECK(read(std::string(TPUEMU_SOURCE_DIR) + "/" + std::string(f.path)) == f.content);
  }
}

TEST_CASE("config: --set overrides one field and records its provenance", "[config]") {
  ChipRequest r;
  r.preset = "v5e";
  r.overrides = {"hbm.bandwidth=1.0e12", "mxu.count=2", "hbm.latency=250ns"};
  const ChipConfig c = load_chip(r);
  CHECK(c.hbm.bandwidth == 1e12);
  CHECK(c.mxu.count == 2);
  CHECK(c.hbm.latency_s == Approx(2.5e-7));
  CHECK(c.provenance.at("hbm.bandwidth").kind == Provenance::Kind::kUser);
  CHECK(c.provenance.at("hbm.bandwidth").text == "--set hbm.bandwidth=1.0e12");
  CHECK(c.peak_bf16_flops() == Approx(preset("v5e").peak_bf16_flops() / 2));
}

TEST_CASE("config: a chip file overrides its base preset", "[config]") {
  ChipRequest r;
  r.chip_file = std::string(TPUEMU_TEST_DATA) + "/chip_override.json";
  const ChipConfig c = load_chip(r);
  CHECK(c.name == "my-v5e");
  CHECK(c.hbm.bandwidth == 1e12);
  CHECK(c.clock_hz == 1.5e9);
  REQUIRE(c.origins.size() == 2);
  CHECK(c.origins[0] == "configs/chips/v5e.json");
}

TEST_CASE("config: the resolved JSON dump reads back to the same config", "[config]") {
  for (const auto& name : preset_names()) {
    INFO(name);
    const ChipConfig a = preset(name);
    const ChipSpec spec = parse_chip_spec(chip_config_json(a), "dump.json");
    const ChipConfig b = resolve_chip(std::span<const ChipSpec>(&spec, 1));
    CHECK(chip_config_json(b).substr(chip_config_json(b).find("\"params\"")) ==
          chip_config_json(a).substr(chip_config_json(a).find("\"params\"")));
  }
}

TEST_CASE("config: validation errors name file and field", "[config]") {
  auto layer_error = [](const std::string& json_text) -> std::string {
    try {
      std::vector<ChipSpec> layers = chip_layers("v5e");
      layers.push_back(parse_chip_spec(json_text, "user.json"));
      resolve_chip(layers);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(layer_error(R"({"hbm": {"bandwidth": "-1GB/s"}})") ==
        "user.json: field 'hbm.bandwidth': bandwidth must not be negative, got '-1GB/s'");
  CHECK(layer_error(R"({"mxu": {"count": 65}})") ==
        "user.json: field 'mxu.count': 65 is above the maximum 64 (range 0 to 64)");
  CHECK(layer_error(R"({"clock": "fast"})") == "user.json: field 'clock': expected a number with a unit, got 'fast'");
  CHECK(layer_error(R"({"ici": {"max_slice": "16x16x16"}})") ==
        "user.json: field 'ici.max_slice': '16x16x16' has 3 axes but ici.torus_dims is 2");
  CHECK(layer_error(R"({"ici": {"max_slice": "16xx"}})") ==
        "user.json: field 'ici.max_slice': '16xx' is not a slice shape like 16x16 or 16x20x28");
  CHECK(layer_error(R"({"dma": {"chunk_size": "100B"}})") ==
        "user.json: field 'dma.chunk_size': must be a whole number of 32-byte granules");
  CHECK(layer_error(R"({"hbm": {"bandwidth": {"value": "1TB/s", "citation": "x"}}})") ==
        "user.json: field 'hbm.bandwidth': unknown key 'citation' (a parameter takes value, unit, note and one of "
        "source, derived, assumed, user)");
  CHECK(layer_error(R"({"vpu": {"lane": 128}})") ==
        "user.json: field 'vpu.lane': unknown field; did you mean 'vpu.lanes'?");
  CHECK(layer_error(R"({"hbm": {"bandwidth": true}})") ==
        "user.json: field 'hbm.bandwidth': expected a number or a string with a unit, got true");
  CHECK(layer_error(R"([1, 2])") == "user.json: a chip file must hold a JSON object");
  CHECK(layer_error(R"({"latency": {"valu": "2.5"}})") ==
        "user.json: field 'latency.valu': cycle count must be a whole number, got '2.5'");
}

TEST_CASE("config: a file without a base must be complete", "[config]") {
  const ChipSpec spec = parse_chip_spec(R"({"name": "tiny", "clock": "1GHz"})", "tiny.json");
  CHECK_THROWS_WITH(resolve_chip(std::span<const ChipSpec>(&spec, 1)),
                    "tiny.json: field 'tensorcores_per_chip': missing (TensorCores per chip (2 = megacore, sharing "
                    "the chip's HBM), in count)");
}

TEST_CASE("config: unknown --set path and missing '=' are refused", "[config]") {
  ChipSpec s;
  CHECK_THROWS_WITH(apply_override(s, "hbm.bandwith=1"), Catch::Contains("did you mean 'hbm.bandwidth'"));
  CHECK_THROWS_WITH(apply_override(s, "hbm.bandwidth"), Catch::Contains("expected PATH=VALUE"));
}

TEST_CASE("json reader: nesting deeper than 64 is refused before parsing, with line and column", "[config]") {
  CHECK_NOTHROW(parse_json(std::string(64, '[') + std::string(64, ']'), "ok.json"));
  CHECK_THROWS_WITH(parse_json(std::string(65, '[') + std::string(65, ']'), "deep.json"),
                    "deep.json: parse error at line 1, column 65: objects and arrays nested more than 64 deep");
  // Brackets inside strings do not count; escaped quotes do not end a string.
  CHECK_NOTHROW(parse_json(R"({"a": "[[[[\"{{{{"})", "strings.json", JsonLimits{1024, 1}));
  CHECK_THROWS_WITH(parse_json("{\n  \"a\": {\"b\": 1}}", "two.json", JsonLimits{1024, 1}),
                    "two.json: parse error at line 2, column 8: objects and arrays nested more than 1 deep");
  // The chip reader: 10,000 levels (once a stack overflow) are refused.
  CHECK_THROWS_WITH(parse_chip_spec(nested_objects(10'000), "deep.json"),
                    "deep.json: parse error at line 1, column 385: objects and arrays nested more than 64 deep");
  const std::string path = scratch_file("deep.json", nested_objects(10'000));
  ChipRequest r;
  r.chip_file = path;
  CHECK(load_error(r) == path + ": parse error at line 1, column 385: objects and arrays nested more than 64 deep");
  std::filesystem::remove(path);
}

TEST_CASE("json reader: files over 1 MiB, directories and devices are refused before reading", "[config]") {
  // Exactly 1 MiB is read; one byte more is refused.
  const std::string fits = scratch_file("fits.json", "[1]" + std::string((1 << 20) - 3, ' '));
  CHECK(read_json_file(fits) == nlohmann::json::array({1}));
  const std::string big = scratch_file("big.json", "[1]" + std::string((1 << 20) - 2, ' '));
  ChipRequest r;
  r.chip_file = big;
  CHECK(load_error(r) == big + ": file is 1048577 bytes, more than the limit of 1 MiB");
  CHECK_THROWS_WITH(parse_json(std::string((1 << 20) + 1, ' '), "text.json"),
                    "text.json: 1048577 bytes of JSON, more than the limit of 1 MiB");
  std::filesystem::remove(fits);
  std::filesystem::remove(big);

  r.chip_file = TPUEMU_TEST_DATA;
  CHECK(load_error(r) == std::string(TPUEMU_TEST_DATA) + ": is a directory, not a file");
  r.chip_file = "/dev/null";
  CHECK(load_error(r) == "/dev/null: is not a regular file");
  r.chip_file = std::string(TPUEMU_TEST_DATA) + "/no_such.json";
  CHECK(load_error(r) == r.chip_file + ": cannot open file: no such file");
}

TEST_CASE("json reader: a malformed file is named with line and column", "[config]") {
  CHECK_THROWS_WITH(
      read_json_file(std::string(TPUEMU_TEST_DATA) + "/bad_syntax.json"),
      Catch::StartsWith(std::string(TPUEMU_TEST_DATA) + "/bad_syntax.json: parse error at line 3, column"));
  CHECK_THROWS_AS(parse_json("{\"a\": 1e999}", "overflow.json"), InputFileError);
}

TEST_CASE("config: every parameter has a range that holds every shipped preset", "[config]") {
  for (const ParamSpec& p : chip_params()) {
    INFO(p.path);
    if (p.is_text) continue;
    CHECK(p.min_value <= p.max_value);
    CHECK(format_range(p) != "");
    for (const std::string& name : preset_names()) {
      INFO(name);
      const ChipConfig c = preset(name);
      const auto v = param_value(c, p);
      const double value =
          std::holds_alternative<double>(v) ? std::get<double>(v) : static_cast<double>(std::get<std::uint64_t>(v));
      // Generous headroom: no preset sits at an end of a range that is not a hard limit (0, 1, 3 axes).
      CHECK(value >= p.min_value);
      CHECK(value <= p.max_value);
    }
  }
}

TEST_CASE("config: each parameter refuses min-1 and max+1 by name, and accepts min and max", "[config]") {
  // Where an end of a range breaks a rule between parameters, the companion
  // overrides that keep the chip consistent.
  const std::map<std::string, std::vector<std::string>> companions = {
      {"ici.torus_dims=1", {"ici.max_slice=16"}},
      {"fabric.active_channels=64", {"fabric.nccl_channels=64"}},
      {"ici.torus_dims=3", {"ici.max_slice=16x16x16"}},
  };
  for (const ParamSpec& p : chip_params()) {
    if (p.is_text) continue;
    INFO(p.path << " range " << format_range(p));
    const bool whole = p.quantity != Quantity::kFrequency && p.quantity != Quantity::kBandwidth &&
                       p.quantity != Quantity::kTime && p.quantity != Quantity::kFraction;
    // Out of range: one below (when the minimum is above 0) and one above.
    std::vector<double> outside{whole ? p.max_value + 1 : p.max_value * 2};
    if (p.min_value > 0) outside.push_back(whole ? p.min_value - 1 : p.min_value / 2);
    for (const double bad : outside) {
      const std::string text = value_text(p, bad);
      INFO(text);
      CHECK_THAT(set_error({p.path + "=" + text}),
                 Catch::StartsWith(fmt::format("--set: field '{}': {} is {} the", p.path, text,
                                               bad < p.min_value ? "below" : "above")) &&
                     Catch::EndsWith(fmt::format("(range {})", format_range(p))));
    }
    for (const double good : {p.min_value, p.max_value}) {
      const std::string assignment = p.path + "=" + value_text(p, good);
      INFO(assignment);
      std::vector<std::string> overrides{assignment};
      if (const auto it = companions.find(assignment); it != companions.end()) {
        overrides.insert(overrides.end(), it->second.begin(), it->second.end());
      }
      CHECK(set_error(overrides) == "no error");
    }
  }
}

TEST_CASE("config: absurd sizes are refused before anything is allocated", "[config]") {
  CHECK(set_error({"mxu.count=1000000"}) ==
        "--set: field 'mxu.count': 1000000 is above the maximum 64 (range 0 to 64)");
  CHECK(set_error({"tensorcores_per_chip=1000"}) ==
        "--set: field 'tensorcores_per_chip': 1000 is above the maximum 8 (range 1 to 8)");
  CHECK(set_error({"vmem.size=2GiB"}) ==
        "--set: field 'vmem.size': 2GiB is above the maximum 1 GiB (range 4 KiB to 1 GiB)");
  CHECK(set_error({"clock=1e308THz"}) ==
        "--set: field 'clock': 1e308THz is above the maximum 10 GHz (range 1 MHz to 10 GHz)");
  CHECK(set_error({"ici.torus_dims=4"}) == "--set: field 'ici.torus_dims': 4 is above the maximum 3 (range 1 to 3)");
}

TEST_CASE("config: a rule two parameters break is blamed on the one the later layer set", "[config]") {
  // vpu.lanes=7 makes 28-byte rows, which 128 MiB of VMEM is not a whole number of.
  CHECK(set_error({"vpu.lanes=7"}) ==
        "--set: field 'vpu.lanes': 7 lanes make 28-byte VMEM rows, which do not divide vmem.size (128 MiB)");
  CHECK(set_error({"vmem.size=1000000"}) ==
        "--set: field 'vmem.size': must be a whole number of 512-byte rows (vpu.lanes x 4 B)");
  // 96 lanes fit 96 MiB of VMEM (set by the same layer) but not the preset's 128x128 MXU.
  CHECK(set_error({"vmem.size=96MiB", "vpu.lanes=96"}) ==
        "--set: field 'vpu.lanes': 96 does not tile mxu.size 128 (one must divide the other)");
  CHECK(set_error({"mxu.size=96"}) ==
        "--set: field 'mxu.size': 96 does not tile the 128 vector lanes (one must divide the other)");
  CHECK(set_error({"ici.torus_dims=3"}) == "--set: field 'ici.torus_dims': 3 axes, but ici.max_slice '16x16' has 2");
  // Both set by the same layer: the rule's own parameter.
  CHECK(set_error({"vpu.lanes=7", "vmem.size=4096"}) ==
        "--set: field 'vmem.size': must be a whole number of 28-byte rows (vpu.lanes x 4 B)");
  // A chip file's lanes against an override's vmem.size: the override is blamed.
  ChipRequest r;
  r.chip_file = scratch_file("lanes.json", R"({"base": "v5e", "name": "l", "vpu": {"lanes": 64}})");
  r.overrides = {"vmem.size=4160"};
  CHECK(load_error(r) == "--set: field 'vmem.size': must be a whole number of 256-byte rows (vpu.lanes x 4 B)");
  std::filesystem::remove(r.chip_file);
}

TEST_CASE("config: an unknown base in a chip file names the file and the field", "[config]") {
  ChipRequest r;
  r.chip_file = scratch_file("base_v9.json", R"({"base": "v9", "name": "future"})");
  CHECK(load_error(r) == r.chip_file +
                             ": field 'base': unknown chip preset 'v9' (known: a100, b200, edu, gb200, h100, h200, v2, "
                             "v4p, v5e, v5p, v6e)");
  std::filesystem::remove(r.chip_file);
  // --chip is still named as --chip.
  ChipRequest by_flag;
  by_flag.preset = "v9";
  CHECK(load_error(by_flag) ==
        "--chip: unknown chip preset 'v9' (known: a100, b200, edu, gb200, h100, h200, v2, v4p, v5e, v5p, v6e)");
}

TEST_CASE("config: a long unknown field is answered without a quadratic suggestion search", "[config]") {
  const std::string key(100'000, 'x');
  CHECK_THROWS_WITH(parse_chip_spec("{\"" + key + "\": 1}", "long.json"),
                    Catch::EndsWith("unknown field (see `tpuemu params` for the list)"));
}

TEST_CASE("config: payload efficiency and NCCL protocols, with their sources", "[config]") {
  // TPU tori: about 95 % of a link's rate carries payload (facts.md, the v5e all-gather).
  const ChipConfig v5e = preset("v5e");
  CHECK(v5e.ici.payload_efficiency == 0.95);
  CHECK(v5e.link_payload_rate() == Approx(4.5e10 * 0.95));
  CHECK(v5e.provenance.at("ici.payload_efficiency").kind == Provenance::Kind::kSource);
  CHECK(preset("v5p").link_payload_rate() == Approx(9e10 * 0.95));
  // GPUs: NCCL's protocols (FABRICS.md section 3), table-driven.
  struct Row {
    const char* protocol;
    double efficiency, hop, base;
  };
  for (const Row& r :
       {Row{"LL", 0.5, 0.6e-6, 6.6e-6}, Row{"LL128", 0.9375, 1.9e-6, 14e-6}, Row{"Simple", 1.0, 3.4e-6, 8.4e-6}}) {
    INFO(r.protocol);
    // Without LL's cap (NCCL's llMaxBw, below), the efficiency alone.
    const ChipConfig h100 =
        preset("h100", {std::string("fabric.protocol=") + r.protocol, "protocol.ll.max_bandwidth=0B/s"});
    REQUIRE(h100.active_protocol() != nullptr);
    CHECK(h100.link_payload_rate() == Approx(20.6e9 * r.efficiency));
    CHECK(h100.switched_egress() == Approx(18 * 20.6e9 * r.efficiency));
    CHECK(h100.switched_hop_latency() == Approx(r.hop));  // the physical hop is 0.6 us: LL's
    CHECK(h100.launch_latency() == Approx(r.base));
  }
  // LL's cap: NCCL's llMaxBw (87.7 GB/s on one node, Ampere and Hopper) over all 18 links, below 18 x 10.3 GB/s.
  const ChipConfig ll = preset("h100", {"fabric.protocol=LL"});
  CHECK(ll.protocol.ll.max_bandwidth == 87.7e9);
  CHECK(ll.provenance.at("protocol.ll.max_bandwidth").kind == Provenance::Kind::kSource);
  CHECK(ll.switched_egress() == Approx(87.7e9));
  CHECK(preset("a100", {"fabric.protocol=LL"}).switched_egress() == Approx(87.7e9));           // not 12 x 10 GB/s
  CHECK(preset("h100", {"fabric.protocol=Simple"}).switched_egress() == Approx(18 * 20.6e9));  // no cap
  // NCCL's channels: the links move payload at active / nccl_channels of their rate, under a protocol only.
  CHECK(preset("a100").fabric.nccl_channels == 24);
  CHECK(preset("h100").fabric.nccl_channels == 32);
  CHECK(preset("a100", {"fabric.protocol=Simple", "fabric.active_channels=6"}).switched_egress() == Approx(240e9 / 4));
  CHECK(preset("a100", {"fabric.protocol=Simple", "fabric.active_channels=24"}).switched_egress() == Approx(240e9));
  CHECK(preset("a100", {"fabric.active_channels=6"}).switched_egress() == Approx(240e9));  // no protocol: no NCCL
  CHECK_THAT(set_error({"fabric.active_channels=25"}),                                     // v5e: no NCCL channels
             Catch::Contains("fabric.active_channels 25 is more than fabric.nccl_channels 0"));
  // Without a protocol: the links' payload rate, the physical hop, no launch.
  const ChipConfig none = preset("h100");
  CHECK(none.active_protocol() == nullptr);
  CHECK(none.link_payload_rate() == Approx(20.6e9));
  CHECK(none.switched_hop_latency() == Approx(0.6e-6));
  CHECK(none.launch_latency() == 0);
  // A protocol hop below the physical one does not shorten it.
  CHECK(preset("h100", {"fabric.protocol=LL", "protocol.ll.hop_latency=100ns"}).switched_hop_latency() ==
        Approx(0.6e-6));
  // NVLS (in-network under Simple): NCCL's efficiency per generation and flat 25 us.
  const ChipConfig nvls = preset("h100", {"fabric.protocol=NVLS"});
  CHECK(nvls.link_payload_rate() == Approx(20.6e9 * 0.85));
  CHECK(nvls.launch_latency() == Approx(25e-6));
  CHECK(nvls.switched_hop_latency() == Approx(0.6e-6));
  CHECK(preset("b200", {"fabric.protocol=NVLS"}).link_payload_rate() == Approx(40.1e9 * 0.74));
  CHECK_THAT(set_error({"fabric.protocol=LL256"}),
             Catch::Contains("'LL256' is not an NCCL protocol: LL, LL128, Simple or NVLS"));
  try {
    (void)preset("v5e", {"fabric.protocol=LL"});
    FAIL("a torus took an NCCL protocol");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("NCCL protocols run on switched fabrics; v5e is joined by a torus"));
  }
}
