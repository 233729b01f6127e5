#include <catch2/catch.hpp>
#include <type_traits>

#include "common/types.hpp"

using namespace tpuemu;

TEST_CASE("types: strong types add within their kind only", "[types]") {
  Cycles a(5);
  a += Cycles(3);
  CHECK(a == Cycles(8));
  CHECK(a * 2U == Cycles(16));
  CHECK(Cycles(2) < Cycles(3));
  // Distinct kinds do not convert into each other.
  STATIC_REQUIRE_FALSE(std::is_convertible_v<Cycles, EmuTime>);
  STATIC_REQUIRE_FALSE(std::is_convertible_v<HbmAddress, VmemAddress>);
  STATIC_REQUIRE_FALSE(std::is_convertible_v<std::uint64_t, Cycles>);
  STATIC_REQUIRE_FALSE(std::is_convertible_v<ChipId, CoreId>);
}
