#include "common/parse_number.hpp"

#include <array>
#include <string>
#include <utility>

namespace tpuemu {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Appends decimal digit `d` to `value`; false on overflow.
bool push_digit(std::uint64_t& value, unsigned d) {
  if (value > (UINT64_MAX - d) / 10) return false;
  value = value * 10 + d;
  return true;
}

}  // namespace

std::optional<std::uint64_t> parse_unsigned(std::string_view text) {
  std::size_t i = 0;
  std::string integral;
  std::string fraction;
  while (i < text.size() && is_digit(text[i])) integral += text[i++];
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && is_digit(text[i])) fraction += text[i++];
  }
  if (integral.empty() && fraction.empty()) return std::nullopt;
  std::uint64_t exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i == text.size()) return std::nullopt;
    while (i < text.size() && is_digit(text[i])) {
      if (!push_digit(exponent, static_cast<unsigned>(text[i++] - '0')) || exponent > 64) return std::nullopt;
    }
  }
  if (i != text.size()) return std::nullopt;
  // Shift the decimal point right by `exponent`; what stays behind it must be zeros.
  std::string digits = integral;
  std::size_t moved = 0;
  for (; moved < fraction.size() && moved < exponent; ++moved) digits += fraction[moved];
  for (std::size_t k = moved; k < fraction.size(); ++k) {
    if (fraction[k] != '0') return std::nullopt;
  }
  for (std::uint64_t k = moved; k < exponent; ++k) digits += '0';
  std::uint64_t value = 0;
  for (const char c : digits) {
    if (!push_digit(value, static_cast<unsigned>(c - '0'))) return std::nullopt;
  }
  return value;
}

std::optional<std::uint64_t> parse_bytes(std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, unsigned>, 9> kSuffixes{{
      {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"K", 10}, {"M", 20}, {"G", 30}, {"T", 40}, {"B", 0}}};
  unsigned shift = 0;
  for (const auto& [suffix, bits] : kSuffixes) {
    if (text.size() > suffix.size() && text.substr(text.size() - suffix.size()) == suffix) {
      text.remove_suffix(suffix.size());
      shift = bits;
      break;
    }
  }
  const auto value = parse_unsigned(text);
  if (!value || (shift > 0 && *value > (UINT64_MAX >> shift))) return std::nullopt;
  return *value << shift;
}

}  // namespace tpuemu
