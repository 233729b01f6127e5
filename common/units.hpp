// Parsing and printing of quantities with units, as written in chip presets:
// "1.5GHz", "1us", "4.5e10B/s", "45GB/s", "16GiB". Decimal prefixes (k, M, G,
// T) are powers of 1000, binary prefixes (Ki, Mi, Gi, Ti) powers of 1024.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace tpuemu {

// Kinds of quantity a parameter can hold, each with one canonical base unit.
enum class Quantity {
  kFrequency,  // Hz
  kBandwidth,  // B/s
  kBytes,      // B
  kTime,       // s
  kCycles,     // clock cycles (integer)
  kCount,      // plain integer
  kFraction,   // a plain number from 0 to 1 (e.g. a payload efficiency)
};

// Thrown with a message that names what was expected; callers add file and field.
class UnitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses `text` as a quantity of `kind` and returns it in the base unit.
// A bare number is taken in the base unit. Negative values, NaN, infinities,
// a unit of the wrong kind and trailing garbage are rejected.
double parse_quantity(std::string_view text, Quantity kind);

std::string_view base_unit(Quantity kind);
std::string_view quantity_name(Quantity kind);

// Human-readable form with a suitable prefix, e.g. 8.2e11 B/s -> "820 GB/s",
// 17179869184 B -> "16 GiB".
std::string format_quantity(double value, Quantity kind);

}  // namespace tpuemu
