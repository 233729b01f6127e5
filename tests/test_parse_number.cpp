#include "common/parse_number.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace tpuemu {
namespace {

struct Row {
  const char* text;
  std::optional<std::uint64_t> value;
};

TEST_CASE("parse_unsigned: whole numbers only, never wrapped", "[units][parse]") {
  const Row rows[] = {
      {"0", 0},
      {"4096", 4096},
      {"1e3", 1000},
      {"1E6", 1000000},
      {"2.5e3", 2500},
      {"1.000", 1},
      {"18446744073709551615", UINT64_MAX},
      {"18446744073709551616", std::nullopt},  // 2^64
      {"1e20", std::nullopt},
      {"1e19", 10000000000000000000ULL},
      {"", std::nullopt},
      {"-1", std::nullopt},
      {"+1", std::nullopt},
      {" 1", std::nullopt},
      {"1 ", std::nullopt},
      {"1.5", std::nullopt},
      {"1e-3", std::nullopt},
      {"1e", std::nullopt},
      {"e3", std::nullopt},
      {".", std::nullopt},
      {"0x10", std::nullopt},
      {"12abc", std::nullopt},
      {"100:200", std::nullopt},
      {"1e99999999999999999999", std::nullopt},
  };
  for (const auto& row : rows) {
    INFO(row.text);
    CHECK(parse_unsigned(row.text) == row.value);
  }
}

TEST_CASE("parse_bytes: binary suffixes, overflow refused", "[units][parse]") {
  const Row rows[] = {
      {"65536", 65536},
      {"64K", 65536},
      {"64KiB", 65536},
      {"1M", 1ULL << 20},
      {"1MiB", 1ULL << 20},
      {"1G", 1ULL << 30},
      {"2T", 2ULL << 40},
      {"512B", 512},
      {"16777215T", 16777215ULL << 40},
      {"16777216T", std::nullopt},  // 2^64
      {"-1", std::nullopt},
      {"-1K", std::nullopt},
      {"1.5K", std::nullopt},
      {"K", std::nullopt},
      {"16E", std::nullopt},
      {"1KK", std::nullopt},
      {"", std::nullopt},
  };
  for (const auto& row : rows) {
    INFO(row.text);
    CHECK(parse_bytes(row.text) == row.value);
  }
}

}  // namespace
}  // namespace tpuemu
