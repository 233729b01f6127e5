// Strong types shared by every unit: cycles, emulated time, chip/core ids and
// addresses in each memory space. They make "cycles + bytes" a compile error.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string_view>

namespace tpuemu {

// a / b rounded up (b > 0): tiles, chunks, granules.
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}

// Contract: a StrongInt supports only the operations that make sense for every
// quantity it is used for: comparison, +/- with its own kind, scaling by a
// plain integer. Anything else goes through value().
template <class Tag, class Rep>
class StrongInt {
 public:
  using rep = Rep;
  constexpr StrongInt() = default;
  constexpr explicit StrongInt(Rep v) : value_(v) {}
  [[nodiscard]] constexpr Rep value() const { return value_; }

  constexpr auto operator<=>(const StrongInt&) const = default;
  constexpr StrongInt& operator+=(StrongInt o) {
    value_ += o.value_;
    return *this;
  }
  constexpr StrongInt& operator-=(StrongInt o) {
    value_ -= o.value_;
    return *this;
  }
  friend constexpr StrongInt operator+(StrongInt a, StrongInt b) { return StrongInt(a.value_ + b.value_); }
  friend constexpr StrongInt operator-(StrongInt a, StrongInt b) { return StrongInt(a.value_ - b.value_); }
  friend constexpr StrongInt operator*(StrongInt a, Rep k) { return StrongInt(a.value_ * k); }
  friend constexpr StrongInt operator*(Rep k, StrongInt a) { return StrongInt(a.value_ * k); }
  friend std::ostream& operator<<(std::ostream& os, StrongInt v) { return os << v.value_; }

 private:
  Rep value_{};
};

struct CyclesTag {};
struct PicosecondsTag {};
struct ChipIdTag {};
struct CoreIdTag {};

// Clock cycles of one chip's clock.
using Cycles = StrongInt<CyclesTag, std::uint64_t>;
// Emulated (simulated) time in picoseconds, the pod-wide time base.
using EmuTime = StrongInt<PicosecondsTag, std::uint64_t>;
// Linear chip id in a pod: x + X*(y + Y*z).
using ChipId = StrongInt<ChipIdTag, std::uint32_t>;
// TensorCore index inside a chip (0, or 0..1 on megacore chips).
using CoreId = StrongInt<CoreIdTag, std::uint32_t>;

// Memory spaces a program can name. Addresses in different spaces never mix.
enum class MemorySpace : std::uint8_t { kHbm, kVmem, kSmem, kSflag };

// The space's name as LLO writes it (`space=vmem`).
constexpr std::string_view memory_space_name(MemorySpace space) {
  switch (space) {
    case MemorySpace::kHbm:
      return "hbm";
    case MemorySpace::kVmem:
      return "vmem";
    case MemorySpace::kSmem:
      return "smem";
    case MemorySpace::kSflag:
      return "sflag";
  }
  return "?";
}

template <MemorySpace Space>
struct AddressTag {};

// Byte address in one memory space. The ISA's row (512 B) and granule (32 B)
// addresses are converted at the instruction boundary, never stored as bytes
// of another space.
template <MemorySpace Space>
using Address = StrongInt<AddressTag<Space>, std::uint64_t>;
using HbmAddress = Address<MemorySpace::kHbm>;
using VmemAddress = Address<MemorySpace::kVmem>;
using SmemAddress = Address<MemorySpace::kSmem>;
// Sync flags are addressed by index, not by byte.
using SflagIndex = Address<MemorySpace::kSflag>;

}  // namespace tpuemu

template <class Tag, class Rep>
struct std::hash<tpuemu::StrongInt<Tag, Rep>> {
  std::size_t operator()(tpuemu::StrongInt<Tag, Rep> v) const noexcept { return std::hash<Rep>{}(v.value()); }
};
