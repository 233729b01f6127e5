#include "chip/exec_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>

#include "chip/fault.hpp"
#include "chip/semantics.hpp"

namespace tpuemu::chip {
namespace {

std::uint32_t symbol_value(const isa::Program& program, const isa::SymbolRef& sym, const isa::Op& op,
                           std::int64_t extra_offset, const std::map<MemorySpace, std::uint64_t>& allocation_base) {
  for (const auto& a : program.allocations) {
    if (a.id != sym.allocation || a.spill != sym.spill) continue;
    const auto base_it = allocation_base.find(a.space);
    const std::uint64_t offset = a.offset.value_or(0) + (base_it == allocation_base.end() ? 0 : base_it->second);
    std::int64_t base = 0;
    switch (a.space) {
      case MemorySpace::kVmem:
        base = static_cast<std::int64_t>(offset / 512);
        break;  // rows
      case MemorySpace::kSflag:
        base = static_cast<std::int64_t>(offset / 4);
        break;  // flag index
      case MemorySpace::kSmem:
        base = static_cast<std::int64_t>(offset / 4);
        break;  // word
      case MemorySpace::kHbm:
        base = static_cast<std::int64_t>(offset / 512);
        break;
    }
    return static_cast<std::uint32_t>(base + sym.offset + extra_offset);
  }
  throw LoadError(
      fmt::format("{}: #allocation{}{} is not declared: declare it (`#allocation{} [space=..., size = ...]`) "
                  "or load the dump's post-delay-converter file, which holds the allocation table",
                  describe_source(program, op), sym.allocation, sym.spill ? "_spill" : "", sym.allocation));
}

// Ops that read f32 values take their immediates as floats; an integer
// literal there means its value (docs/ISA.md, "Reading the tables").
bool takes_float_immediates(const isa::OpInfo& info) {
  if (info.id == isa::OpId::kVpackCBf16) return true;  // packs f32 values to bf16 (`vpack.c.bf16 1, %v1` packs 1.0)
  return info.slot == SlotClass::kValu && info.mnemonic.find(".f32") != std::string_view::npos &&
         info.mnemonic.find("vcvt") == std::string_view::npos;
}

}  // namespace

std::optional<std::pair<std::string, std::vector<std::uint64_t>>> parse_shape(std::string_view text) {
  const auto open = text.find('[');
  if (open == std::string_view::npos || open == 0 || !text.ends_with(']')) return std::nullopt;
  std::pair<std::string, std::vector<std::uint64_t>> out;
  out.first = std::string(text.substr(0, open));
  std::string_view dims = text.substr(open + 1, text.size() - open - 2);
  while (!dims.empty()) {
    const auto comma = dims.find(',');
    const std::string_view d = dims.substr(0, comma);
    std::uint64_t v = 0;
    if (d.empty()) return std::nullopt;
    for (char c : d) {
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + static_cast<std::uint64_t>(c - '0');
      if (v > (1ULL << 40)) return std::nullopt;
    }
    out.second.push_back(v);
    dims = comma == std::string_view::npos ? std::string_view{} : dims.substr(comma + 1);
  }
  return out;
}

std::string describe_source(const isa::Program& program, const isa::Op& op) {
  std::string out = op.source.file < program.files.size() ? program.files[op.source.file] : std::string("<program>");
  out += fmt::format(":{}:{}", op.source.line, op.source.column);
  if (!op.loc.empty()) out += " " + op.loc;
  return out;
}

std::map<MemorySpace, std::uint64_t> allocation_ends(const isa::Program& program) {
  std::map<MemorySpace, std::uint64_t> ends;
  for (const auto& a : program.allocations) {
    ends[a.space] = std::max(ends[a.space], a.offset.value_or(0) + a.size);
  }
  // Keep VMEM rows and tiles aligned.
  if (ends.count(MemorySpace::kVmem) != 0U) ends[MemorySpace::kVmem] = (ends[MemorySpace::kVmem] + 4095) / 4096 * 4096;
  return ends;
}

ExecProgram decode_program(const isa::Program& program, const ChipConfig& chip,
                           const std::map<MemorySpace, std::uint64_t>& allocation_base) {
  ExecProgram out;
  out.program = &program;
  std::map<std::uint32_t, std::uint32_t> bundle_of_address;
  for (std::size_t b = 0; b < program.bundles.size(); ++b) {
    bundle_of_address.emplace(program.bundles[b].address.value_or(static_cast<std::uint32_t>(b)),
                              static_cast<std::uint32_t>(b));
  }
  for (std::size_t b = 0; b < program.bundles.size(); ++b) {
    const isa::Bundle& bundle = program.bundles[b];
    ExecBundle eb;
    eb.first_op = static_cast<std::uint32_t>(out.ops.size());
    eb.op_count = static_cast<std::uint32_t>(bundle.ops.size());
    eb.address = bundle.address.value_or(static_cast<std::uint32_t>(b));
    for (const isa::Op& op : bundle.ops) {
      ExecOp e;
      e.op = &op;
      e.info = &isa::op_info(op.opcode);
      e.id = op.opcode;
      e.unit = op.unit;
      e.exec = semantics_of(op.opcode);
      e.ready = readiness_of(op.opcode);
      e.latency = static_cast<std::uint32_t>(chip.latency(e.info->latency).value());
      e.bundle = static_cast<std::uint32_t>(b);
      if (op.operands.size() > e.value.size()) {
        throw LoadError(fmt::format("{}: {} has {} operands; at most {} are supported", describe_source(program, op),
                                    isa::mnemonic_text(op.opcode, op.unit), op.operands.size(), e.value.size()));
      }
      if (op.guard) {
        e.guard = static_cast<std::int16_t>(op.guard->index);
        e.guard_negated = op.guard_negated;
        e.sources.push_back({isa::RegClass::kPredicate, op.guard->index});
      }
      if (op.guard_fallback) e.sources.push_back({op.guard_fallback->cls, op.guard_fallback->index});
      if (op.dest_kind == isa::Op::DestKind::kReg) e.dest = RegRef{op.dest_reg.cls, op.dest_reg.index};
      const bool float_imms = takes_float_immediates(*e.info);
      for (std::size_t i = 0; i < op.operands.size(); ++i) {
        const isa::Operand& o = op.operands[i];
        switch (o.kind) {
          case isa::Operand::Kind::kReg:
            e.sources.push_back({o.reg.cls, o.reg.index});
            break;
          case isa::Operand::Kind::kInt:
            e.value[i] = float_imms ? std::bit_cast<std::uint32_t>(static_cast<float>(o.integer))
                                    : static_cast<std::uint32_t>(o.integer);
            break;
          case isa::Operand::Kind::kFloat:
            e.value[i] = o.float_bits;
            break;
          case isa::Operand::Kind::kSymbol:
            e.value[i] = symbol_value(program, o.symbol, op, 0, allocation_base);
            break;
          case isa::Operand::Kind::kMem:
            if (o.mem.base_reg) {
              e.sources.push_back({o.mem.base_reg->cls, o.mem.base_reg->index});
              e.value[i] = static_cast<std::uint32_t>(o.mem.offset);
            } else if (o.mem.base_symbol) {
              e.value[i] = symbol_value(program, *o.mem.base_symbol, op, o.mem.offset, allocation_base);
            }
            if (o.mem.sublane_mask_reg)
              e.sources.push_back({o.mem.sublane_mask_reg->cls, o.mem.sublane_mask_reg->index});
            break;
          case isa::Operand::Kind::kTarget: {
            // Kernels: bundleno is the target's address. TLP dumps print fewer bundles than the
            // program has, so their bundleno matches no address; the target is the bundle that
            // starts the branch's region (its comment says "Start/End empty region R").
            const auto it = bundle_of_address.find(o.target.bundleno);
            const auto by_region = [&]() -> std::optional<std::uint32_t> {
              if (o.target.region < 0) return std::nullopt;
              const std::string marks[] = {fmt::format("Start/End empty region {} ", o.target.region),
                                           fmt::format("Start region {} ", o.target.region)};
              for (const std::string& mark : marks) {
                for (std::size_t t = 0; t < program.bundles.size(); ++t) {
                  const std::string comment = program.bundles[t].comment + " ";
                  for (std::size_t pos = comment.find(mark); pos != std::string::npos;
                       pos = comment.find(mark, pos + 1)) {
                    if (pos == 0 || comment[pos - 1] == ' ' || comment[pos - 1] == '*')
                      return static_cast<std::uint32_t>(t);
                  }
                }
              }
              return std::nullopt;
            };
            if (it != bundle_of_address.end()) {
              e.target_bundle = it->second;
            } else if (const auto t = by_region()) {
              e.target_bundle = *t;
            } else {
              throw LoadError(
                  fmt::format("{}: branch target bundleno = {} is not the address of a bundle of this program"
                              "{}",
                              describe_source(program, op), o.target.bundleno,
                              o.target.region >= 0 ? fmt::format(", and no bundle starts region {}", o.target.region)
                                                   : std::string()));
            }
            break;
          }
          default:
            break;
        }
      }
      // Casts and phis whose input already sits in the result's register move
      // nothing: they neither wait for nor write a register.
      const bool in_place = (op.opcode == isa::OpId::kIntToPtrHbm || op.opcode == isa::OpId::kIntToPtrVmem ||
                             op.opcode == isa::OpId::kSphi) &&
                            e.dest && std::all_of(op.operands.begin(), op.operands.end(), [&](const isa::Operand& o) {
                              return o.kind != isa::Operand::Kind::kReg || o.reg.index == e.dest->index;
                            });
      if (in_place) {
        e.dest.reset();
        e.sources.clear();
        if (op.guard) e.sources.push_back({isa::RegClass::kPredicate, op.guard->index});
      }
      if (op.opcode == isa::OpId::kInlinedCallOperandHbm || op.opcode == isa::OpId::kInlinedCallOperandVmem ||
          op.opcode == isa::OpId::kInlinedCallOperandScalar) {
        const isa::OperandDecl& decl = op.operands.at(0).decl;
        OperandBinding binding;
        binding.index = decl.index;
        binding.space = op.opcode == isa::OpId::kInlinedCallOperandHbm    ? "hbm"
                        : op.opcode == isa::OpId::kInlinedCallOperandVmem ? "vmem"
                                                                          : "<no memory space>";
        binding.is_output = decl.kind == "output";
        const auto shape = parse_shape(decl.shape);
        if (!shape) {
          throw LoadError(
              fmt::format("{}: operand shape '{}' is not like f32[8,128]", describe_source(program, op), decl.shape));
        }
        binding.dtype = shape->first;
        binding.shape = shape->second;
        for (const auto& existing : out.bindings) {
          if (existing.index == binding.index) {
            throw LoadError(
                fmt::format("{}: operand index {} is bound twice", describe_source(program, op), binding.index));
          }
        }
        out.bindings.push_back(std::move(binding));
      }
      out.ops.push_back(std::move(e));
    }
    out.bundles.push_back(eb);
  }
  std::sort(out.bindings.begin(), out.bindings.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  return out;
}

}  // namespace tpuemu::chip
