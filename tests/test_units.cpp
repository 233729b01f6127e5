#include <catch2/catch.hpp>

#include "common/units.hpp"

using tpuemu::parse_quantity;
using tpuemu::Quantity;
using tpuemu::UnitError;

TEST_CASE("units: accepted spellings resolve to base units", "[units]") {
  struct Row {
    const char* text;
    Quantity kind;
    double expected;
  };
  const Row rows[] = {
      {"1.5GHz", Quantity::kFrequency, 1.5e9},
      {"940 MHz", Quantity::kFrequency, 9.4e8},
      {"1e9", Quantity::kFrequency, 1e9},
      {"45GB/s", Quantity::kBandwidth, 4.5e10},
      {"4.5e10B/s", Quantity::kBandwidth, 4.5e10},
      {"1.0e12", Quantity::kBandwidth, 1e12},
      {"2GiB/s", Quantity::kBandwidth, 2147483648.0},
      {"16GiB", Quantity::kBytes, 17179869184.0},
      {"16GB", Quantity::kBytes, 16e9},
      {"128MiB", Quantity::kBytes, 134217728.0},
      {"4096", Quantity::kBytes, 4096},
      {"1us", Quantity::kTime, 1e-6},
      {"500ns", Quantity::kTime, 5e-7},
      {"2 ms", Quantity::kTime, 2e-3},
      {"8", Quantity::kCycles, 8},
      {"8cycles", Quantity::kCycles, 8},
      {"4", Quantity::kCount, 4},
  };
  for (const Row& r : rows) {
    INFO(r.text);
    CHECK(parse_quantity(r.text, r.kind) == Approx(r.expected).epsilon(1e-12));
  }
}

TEST_CASE("units: rejected spellings name the problem", "[units]") {
  struct Row {
    const char* text;
    Quantity kind;
    const char* message;
  };
  const Row rows[] = {
      {"1.5GB/s", Quantity::kFrequency, "unit 'GB/s' in '1.5GB/s' is not a unit of frequency"},
      {"45GB", Quantity::kBandwidth, "unit 'GB' in '45GB' is not a unit of bandwidth"},
      {"-5GB/s", Quantity::kBandwidth, "bandwidth must not be negative"},
      {"fast", Quantity::kBandwidth, "expected a number with a unit, got 'fast'"},
      {"", Quantity::kBytes, "expected a size, got an empty string"},
      {"1.5", Quantity::kCount, "count must be a whole number"},
      {"3", Quantity::kCount, nullptr},
      {"7 apples", Quantity::kCount, "unit 'apples' in '7 apples' is not a unit of count"},
      {"inf", Quantity::kTime, "expected a finite time"},
      {"nan", Quantity::kTime, "expected a finite time"},
      {"1.5KiB", Quantity::kBytes, nullptr},
      {"0.5B", Quantity::kBytes, "size must be a whole number"},
  };
  for (const Row& r : rows) {
    INFO(r.text);
    if (r.message == nullptr) {
      CHECK_NOTHROW(parse_quantity(r.text, r.kind));
    } else {
      CHECK_THROWS_WITH(parse_quantity(r.text, r.kind), Catch::Contains(r.message));
    }
  }
}

TEST_CASE("units: formatting picks a readable prefix", "[units]") {
  CHECK(tpuemu::format_quantity(8.2e11, Quantity::kBandwidth) == "820 GB/s");
  CHECK(tpuemu::format_quantity(17179869184.0, Quantity::kBytes) == "16 GiB");
  CHECK(tpuemu::format_quantity(1.5e9, Quantity::kFrequency) == "1.5 GHz");
  CHECK(tpuemu::format_quantity(1e-6, Quantity::kTime) == "1 us");
  CHECK(tpuemu::format_quantity(5e-7, Quantity::kTime) == "500 ns");
}
