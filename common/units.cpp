#include "common/units.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <utility>

namespace tpuemu {
namespace {

struct UnitSuffix {
  std::string_view suffix;
  double scale;
};

constexpr std::array kFrequencyUnits{UnitSuffix{"Hz", 1.0}, UnitSuffix{"kHz", 1e3}, UnitSuffix{"MHz", 1e6},
                                     UnitSuffix{"GHz", 1e9}, UnitSuffix{"THz", 1e12}};
constexpr std::array kByteUnits{UnitSuffix{"B", 1.0},
                                UnitSuffix{"kB", 1e3},
                                UnitSuffix{"KB", 1e3},
                                UnitSuffix{"MB", 1e6},
                                UnitSuffix{"GB", 1e9},
                                UnitSuffix{"TB", 1e12},
                                UnitSuffix{"KiB", 1024.0},
                                UnitSuffix{"MiB", 1048576.0},
                                UnitSuffix{"GiB", 1073741824.0},
                                UnitSuffix{"TiB", 1099511627776.0}};
constexpr std::array kTimeUnits{UnitSuffix{"s", 1.0}, UnitSuffix{"ms", 1e-3}, UnitSuffix{"us", 1e-6},
                                UnitSuffix{"ns", 1e-9}, UnitSuffix{"ps", 1e-12}};
constexpr std::array kCycleUnits{UnitSuffix{"cycles", 1.0}, UnitSuffix{"cycle", 1.0}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <std::size_t N>
std::string list_units(const std::array<UnitSuffix, N>& units, std::string_view per = "") {
  std::string out;
  for (const auto& u : units) {
    if (!out.empty()) out += ", ";
    out += u.suffix;
    out += per;
  }
  return out;
}

template <std::size_t N>
const UnitSuffix* find_unit(const std::array<UnitSuffix, N>& units, std::string_view suffix) {
  for (const auto& u : units) {
    if (u.suffix == suffix) return &u;
  }
  return nullptr;
}

// Splits "4.5e10B/s" into 4.5e10 and "B/s". Throws on a missing number.
std::pair<double, std::string_view> split_number(std::string_view text) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  double value = 0;
  auto [ptr, ec] = std::from_chars(begin, end, value, std::chars_format::general);
  if (ec != std::errc() || ptr == begin) {
    throw UnitError(fmt::format("expected a number with a unit, got '{}'", text));
  }
  return {value, trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)))};
}

}  // namespace

std::string_view base_unit(Quantity kind) {
  switch (kind) {
    case Quantity::kFrequency:
      return "Hz";
    case Quantity::kBandwidth:
      return "B/s";
    case Quantity::kBytes:
      return "B";
    case Quantity::kTime:
      return "s";
    case Quantity::kCycles:
      return "cycles";
    case Quantity::kCount:
    case Quantity::kFraction:
      return "";
  }
  return "";
}

std::string_view quantity_name(Quantity kind) {
  switch (kind) {
    case Quantity::kFrequency:
      return "frequency";
    case Quantity::kBandwidth:
      return "bandwidth";
    case Quantity::kBytes:
      return "size";
    case Quantity::kTime:
      return "time";
    case Quantity::kCycles:
      return "cycle count";
    case Quantity::kCount:
      return "count";
    case Quantity::kFraction:
      return "fraction";
  }
  return "";
}

double parse_quantity(std::string_view raw, Quantity kind) {
  const std::string_view text = trim(raw);
  if (text.empty()) throw UnitError(fmt::format("expected a {}, got an empty string", quantity_name(kind)));
  auto [number, suffix] = split_number(text);
  if (std::isnan(number) || std::isinf(number)) {
    throw UnitError(fmt::format("expected a finite {}, got '{}'", quantity_name(kind), text));
  }
  if (number < 0) throw UnitError(fmt::format("{} must not be negative, got '{}'", quantity_name(kind), text));

  double scale = 1.0;
  if (!suffix.empty()) {
    const UnitSuffix* unit = nullptr;
    std::string expected;
    switch (kind) {
      case Quantity::kFrequency:
        unit = find_unit(kFrequencyUnits, suffix);
        expected = list_units(kFrequencyUnits);
        break;
      case Quantity::kBandwidth:
        if (suffix.size() > 2 && suffix.substr(suffix.size() - 2) == "/s") {
          unit = find_unit(kByteUnits, suffix.substr(0, suffix.size() - 2));
        }
        expected = list_units(kByteUnits, "/s");
        break;
      case Quantity::kBytes:
        unit = find_unit(kByteUnits, suffix);
        expected = list_units(kByteUnits);
        break;
      case Quantity::kTime:
        unit = find_unit(kTimeUnits, suffix);
        expected = list_units(kTimeUnits);
        break;
      case Quantity::kCycles:
        unit = find_unit(kCycleUnits, suffix);
        expected = "cycles";
        break;
      case Quantity::kCount:
      case Quantity::kFraction:
        expected = "no unit";
        break;
    }
    if (unit == nullptr) {
      throw UnitError(fmt::format("unit '{}' in '{}' is not a unit of {} (expected {})", suffix, text,
                                  quantity_name(kind), expected));
    }
    scale = unit->scale;
  }
  const double value = number * scale;
  if (kind == Quantity::kCycles || kind == Quantity::kCount || kind == Quantity::kBytes) {
    if (value != std::floor(value) || value > 1.8e19) {
      throw UnitError(fmt::format("{} must be a whole number, got '{}'", quantity_name(kind), text));
    }
  }
  return value;
}

std::string format_quantity(double value, Quantity kind) {
  auto scaled = [&](std::string_view base, bool binary) {
    static constexpr std::array<std::string_view, 5> kDecimal{"", "k", "M", "G", "T"};
    static constexpr std::array<std::string_view, 5> kBinary{"", "Ki", "Mi", "Gi", "Ti"};
    const double step = binary ? 1024.0 : 1000.0;
    std::size_t i = 0;
    double v = value;
    while (i + 1 < kDecimal.size() && v >= step) {
      v /= step;
      ++i;
    }
    return fmt::format("{:g} {}{}", v, binary ? kBinary[i] : kDecimal[i], base);
  };
  switch (kind) {
    case Quantity::kFrequency:
      return scaled("Hz", false);
    case Quantity::kBandwidth:
      return scaled("B/s", false);
    case Quantity::kBytes: {
      // Binary prefixes when the value is an exact power-of-two multiple, decimal otherwise.
      const bool binary = value >= 1024 && std::fmod(value, 1024.0) == 0;
      return scaled("B", binary);
    }
    case Quantity::kTime: {
      if (value == 0) return "0 s";
      static constexpr std::array<std::pair<double, std::string_view>, 4> kScales{
          {{1.0, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}}};
      for (const auto& [scale, unit] : kScales) {
        if (value >= scale) return fmt::format("{:g} {}", value / scale, unit);
      }
      return fmt::format("{:g} ps", value / 1e-12);
    }
    case Quantity::kCycles:
      return fmt::format("{:g} cycles", value);
    case Quantity::kCount:
    case Quantity::kFraction:
      return fmt::format("{:g}", value);
  }
  return fmt::format("{:g}", value);
}

}  // namespace tpuemu
