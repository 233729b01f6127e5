// libFuzzer target: arbitrary bytes as LLO text. The assembler must reject
// them with an AsmError or return a program that survives the disassembler
// (assemble(disassemble(p)) == p) and the .tpub image (field for field).
// Any other exception, a crash, a sanitizer report or a trap is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "fuzz/same_program.hpp"
#include "isa/assembler.hpp"
#include "isa/image.hpp"

namespace {

[[noreturn]] void broken(const char* property, const std::string& disassembly) {
  std::fprintf(stderr, "fuzz_assembler: %s does not hold; the program disassembles to:\n%s\n", property,
               disassembly.c_str());
  __builtin_trap();
}

}  // namespace

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
  const std::string text_again = disassemble(program);
  const Program reassembled = assemble(text_again, "fuzz-disassembled.llo");
  if (!(reassembled == program)) broken("assemble(disassemble(p)) == p", text_again);
  const Program decoded = decode_image(encode_image(program), "fuzz.tpub");
  if (!tpuemu::fuzz::same_program(decoded, program)) broken("decode_image(encode_image(p)) == p", text_again);
  return 0;
}
