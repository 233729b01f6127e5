// libFuzzer target: arbitrary bytes as LLO text. The assembler must reject
// them with an AsmError or return a program that survives the disassembler
// (assemble(disassemble(p)) == p) and the .tpub image (field for field).
// Any other exception, a crash, a sanitizer report or a trap is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/same_program.hpp"
#include "isa/assembler.hpp"
#include "isa/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tpuemu::isa;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Program program;
  try {
    program = assemble(text, "fuzz.llo");
  } catch (const AsmError&) {
    return 0;
  }
  // An AsmError from here on escapes: the disassembler printed text its own
  // assembler rejects.
  const Program reassembled = assemble(disassemble(program), "fuzz-disassembled.llo");
  if (!(reassembled == program)) __builtin_trap();
  const Program decoded = decode_image(encode_image(program), "fuzz.tpub");
  if (!tpuemu::fuzz::same_program(decoded, program)) __builtin_trap();
  return 0;
}
