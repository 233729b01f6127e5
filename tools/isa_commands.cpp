#include "tools/isa_commands.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "api/program_loader.hpp"
#include "chip/exec_program.hpp"
#include "isa/assembler.hpp"
#include "isa/checker.hpp"
#include "isa/image.hpp"
#include "isa/reference.hpp"
#include "tools/cli.hpp"
#include "tools/options.hpp"

namespace tpuemu::cli {

using api::load_program;
namespace {

// Fills Diagnostic::line_text from the source file, for a caret display.
void fill_line_text(isa::Diagnostic& d) {
  if (!d.line_text.empty() || d.line == 0) return;
  static std::map<std::string, std::vector<std::string>> cache;
  auto it = cache.find(d.file);
  if (it == cache.end()) {
    std::vector<std::string> lines;
    std::ifstream in(d.file);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    it = cache.emplace(d.file, std::move(lines)).first;
  }
  if (d.line <= it->second.size()) d.line_text = it->second[d.line - 1];
}

bool write_text(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    fmt::print("{}", text);
    return true;
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    fmt::print(stderr, "tpuemu: cannot write '{}'\n", path);
    return false;
  }
  return true;
}

}  // namespace

int check_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  add_chip_options(options);
  options.add_options()("files", po::value<std::vector<std::string>>(), "LLO files to check");
  po::positional_options_description positional;
  positional.add("files", -1);
  bool help = false;
  const auto vm = parse_options("check", "FILE... [--chip NAME] [--chip-file FILE] [--set PATH=VALUE]...", args,
                                options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  if (vm->count("files") == 0U) {
    fmt::print(stderr, "tpuemu check: no input files (usage: tpuemu check FILE...)\n");
    return kExitBadInput;
  }
  ChipConfig chip;
  try {
    chip = load_chip(chip_request(*vm));
  } catch (const ConfigError& e) {
    fmt::print(stderr, "tpuemu check: {}\n", e.what());
    return kExitBadInput;
  }
  bool all_ok = true;
  for (const auto& file : (*vm)["files"].as<std::vector<std::string>>()) {
    isa::Program program;
    try {
      program = load_program(file);
    } catch (const isa::AsmError& e) {
      fmt::print(stderr, "{}\n", e.what());
      all_ok = false;
      continue;
    } catch (const isa::ImageError& e) {
      fmt::print(stderr, "tpuemu check: {}\n", e.what());
      all_ok = false;
      continue;
    }
    isa::CheckResult result = isa::check_program(program, chip);
    // What `run` refuses when it decodes the program (a branch to no bundle, an
    // operand declared twice, ...), as an error of this check too.
    std::string decode_error;
    if (result.violations.empty()) {
      try {
        (void)chip::decode_program(program, chip);
      } catch (const std::exception& e) {
        decode_error = e.what();
      }
    }
    const std::size_t errors = result.violations.size() + (decode_error.empty() ? 0 : 1);
    fmt::print("{}{}\n", isa::summary_line(program.name, result.summary),
               errors == 0 ? std::string() : fmt::format(": {} error{}", errors, errors == 1 ? "" : "s"));
    std::fflush(stdout);  // keep the summary before its diagnostics when both streams share a terminal
    for (auto& d : result.violations) {
      fill_line_text(d);
      fmt::print(stderr, "{}\n", isa::format_diagnostic(d));
    }
    if (!decode_error.empty()) fmt::print(stderr, "{}\n", decode_error);
    if (errors != 0) all_ok = false;
  }
  return all_ok ? kExitOk : kExitBadInput;
}

int asm_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  options.add_options()("input", po::value<std::string>(), "LLO file")(
      "output,o", po::value<std::string>(), "program image to write (default: INPUT with .tpub)");
  po::positional_options_description positional;
  positional.add("input", 1);
  bool help = false;
  const auto vm = parse_options("asm", "PROGRAM.llo [-o PROGRAM.tpub]", args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  if (vm->count("input") == 0U) {
    fmt::print(stderr, "tpuemu asm: no input file (usage: tpuemu asm PROGRAM.llo -o PROGRAM.tpub)\n");
    return kExitBadInput;
  }
  const std::string input = (*vm)["input"].as<std::string>();
  std::string output = vm->count("output") != 0U ? (*vm)["output"].as<std::string>() : input;
  if (vm->count("output") == 0U) output = output.substr(0, output.rfind('.')) + ".tpub";
  try {
    isa::write_image(output, load_program(input));
  } catch (const isa::AsmError& e) {
    fmt::print(stderr, "{}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {  // ImageError on an unwritable output
    fmt::print(stderr, "tpuemu asm: {}\n", e.what());
    return kExitBadInput;
  }
  return kExitOk;
}

int disasm_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  options.add_options()("input", po::value<std::string>(), "program image (.tpub) or LLO file")(
      "output,o", po::value<std::string>()->default_value("-"), "output file (default: stdout)");
  po::positional_options_description positional;
  positional.add("input", 1);
  bool help = false;
  const auto vm = parse_options("disasm", "PROGRAM.tpub [-o PROGRAM.llo]", args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  if (vm->count("input") == 0U) {
    fmt::print(stderr, "tpuemu disasm: no input file (usage: tpuemu disasm PROGRAM.tpub)\n");
    return kExitBadInput;
  }
  try {
    const isa::Program program = load_program((*vm)["input"].as<std::string>());
    return write_text((*vm)["output"].as<std::string>(), isa::disassemble(program)) ? kExitOk : kExitBadInput;
  } catch (const isa::AsmError& e) {
    fmt::print(stderr, "{}\n", e.what());
  } catch (const isa::ImageError& e) {
    fmt::print(stderr, "tpuemu disasm: {}\n", e.what());
  }
  return kExitBadInput;
}

int isa_doc_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  options.add_options()("output,o", po::value<std::string>()->default_value("-"), "output file (default: stdout)");
  po::positional_options_description positional;
  bool help = false;
  const auto vm = parse_options("isa-doc", "[-o docs/ISA.md]", args, options, positional, help);
  if (!vm) return help ? kExitOk : kExitBadInput;
  return write_text((*vm)["output"].as<std::string>(), isa::isa_reference_markdown()) ? kExitOk : kExitBadInput;
}

}  // namespace tpuemu::cli
