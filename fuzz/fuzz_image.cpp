// libFuzzer target: arbitrary bytes as a .tpub image. The decoder must reject
// them with an ImageError or return a program that re-encodes to an image
// decoding to the same program, field for field, and re-encoding to the same
// bytes. Any other exception, a crash, a sanitizer report or a trap is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <vector>

#include "fuzz/same_program.hpp"
#include "isa/image.hpp"

namespace {

[[noreturn]] void broken(const char* property) {
  std::fprintf(stderr, "fuzz_image: %s does not hold for the decoded program\n", property);
  __builtin_trap();
}

}  // namespace

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
  if (!tpuemu::fuzz::same_program(again, program)) broken("decode_image(encode_image(p)) == p");
  if (encode_image(again) != image) broken("encode_image(decode_image(image)) == image");
  return 0;
}
