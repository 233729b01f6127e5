// libFuzzer target: arbitrary bytes as a .tpub image. The decoder must reject
// them with an ImageError or return a program that re-encodes to an image
// decoding to the same program, field for field, and re-encoding to the same
// bytes. Any other exception, a crash, a sanitizer report or a trap is a bug.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fuzz/same_program.hpp"
#include "isa/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpuemu::isa;
  Program program;
  try {
    program = decode_image(std::span<const std::uint8_t>(data, size), "fuzz.tpub");
  } catch (const ImageError&) {
    return 0;
  }
  const std::vector<std::uint8_t> image = encode_image(program);
  const Program again = decode_image(image, "fuzz-reencoded.tpub");
  if (!tpuemu::fuzz::same_program(again, program)) __builtin_trap();
  if (encode_image(again) != image) __builtin_trap();
  return 0;
}
