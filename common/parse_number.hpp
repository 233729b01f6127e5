// The one parser of integers typed by users: command-line options, ranges
// such as --trace-window 0:1e6, sizes such as 64K, and TPUEMU_* environment
// variables. Every form is whole: no sign, no blanks, no trailing text, and a
// value that does not fit 64 bits is refused rather than wrapped.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tpuemu {

// Decimal digits with an optional fraction and a non-negative exponent, whose
// value is a whole number: "4096", "1e6", "2.5e3". nullopt for anything else
// ("-1", "+1", " 1", "1.5", "1e-3", "0x10", "", overflow).
std::optional<std::uint64_t> parse_unsigned(std::string_view text);

// A whole number of bytes with an optional binary suffix: "65536", "64K",
// "64KiB", "1G", "2T", "512B" (K, M, G, T and KiB, MiB, GiB, TiB are powers of
// 1024, as in nccl-tests). nullopt when malformed or over 64 bits.
std::optional<std::uint64_t> parse_bytes(std::string_view text);

}  // namespace tpuemu
