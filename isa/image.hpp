// Program <-> .tpub, the binary program image (layout in docs/tpub.md): an
// assembled Program with everything it holds, comments and source positions
// included, so tools can load a program without re-assembling it and still
// point at its source lines.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "isa/program.hpp"

namespace tpuemu::isa {

// The format version this build writes and the only one it reads.
inline constexpr std::uint16_t kImageVersion = 1;

// A malformed, truncated, unsupported or unreadable image. what() is
// "<origin>: <what is wrong> at byte offset N" for a problem inside the image,
// "<path>: <what failed>" for a file that cannot be read or written.
class ImageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A decoded program holds at most this many bytes of strings per image byte,
// plus kImageStringSlack (each string counted once per field holding it):
// strings are stored once and referenced by index, and without a bound a
// small image could make the decoder copy one long string millions of times.
inline constexpr std::uint64_t kImageStringExpansion = 64;
inline constexpr std::uint64_t kImageStringSlack = std::uint64_t{1} << 20;

// Contract: decode_image(encode_image(p)) == p, and p's name, files, comments,
// locs and SourceLocs come back unchanged, for every program whose opcodes
// are rows of the instruction table, whose enums hold declared values and
// whose strings stay within kImageStringExpansion.
// Throws ImageError only for a program too large for 32-bit counts and sizes.
std::vector<std::uint8_t> encode_image(const Program& program);

// Contract: for any bytes whatsoever, returns a Program or throws ImageError;
// never reads outside `bytes`, runs in time linear in its size and allocates
// memory bounded by a constant multiple of it. Every decoded opcode is a row
// of the instruction table and every enum holds a declared value.
// `origin` names the image in messages (a path, or a description).
Program decode_image(std::span<const std::uint8_t> bytes, const std::string& origin);

// File forms of the above; the path is the origin in messages.
void write_image(const std::string& path, const Program& program);
Program read_image(const std::string& path);

}  // namespace tpuemu::isa
