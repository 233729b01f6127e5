#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/chip_config.hpp"
#include "common/embedded_file.hpp"
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

}  // namespace

TEST_CASE("presets: the four TPU chips and the teaching chip are built in", "[config]") {
  CHECK(preset_names() == std::vector<std::string>{"edu", "v4p", "v5e", "v5p", "v6e"});
}

TEST_CASE("presets: derived peak bf16 FLOP/s is within 1% of the published per-chip figure", "[config]") {
  // How to Scale Your Model [tpus.md], per chip (shared/facts.md).
  const std::pair<const char*, double> published[] = {
      {"v5e", 1.97e14}, {"v5p", 4.59e14}, {"v4p", 2.75e14}, {"v6e", 9.2e14}};
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
  for (const EmbeddedFile& f : embedded_chip_presets()) {
    INFO(f.path);
    const ChipSpec spec = parse_chip_spec(f.content, std::string(f.path));
    for (const ParamSpec& p : chip_params()) {
      INFO(p.path);
      const auto it = spec.values.find(p.path);
      REQUIRE(it != spec.values.end());
      CHECK(it->second.provenance.kind != Provenance::Kind::kUser);
      CHECK(!it->second.provenance.text.empty());
    }
  }
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
  CHECK(layer_error(R"({"mxu": {"count": 0}})") == "user.json: field 'mxu.count': 0 is below the minimum 1");
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
