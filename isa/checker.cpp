#include "isa/checker.hpp"

#include <fmt/format.h>

namespace tpuemu::isa {
namespace {

Diagnostic at(const Program& program, const SourceLoc& loc, std::string message) {
  Diagnostic d;
  d.file = loc.file < program.files.size() ? program.files[loc.file] : std::string("<program>");
  d.line = loc.line;
  d.column = loc.column;
  d.message = std::move(message);
  return d;
}

std::uint64_t register_count(const ChipConfig& chip, RegClass cls) {
  switch (cls) {
    case RegClass::kScalar:
      return chip.scalar.sregs;
    case RegClass::kVector:
      return chip.vpu.vregs;
    case RegClass::kMask:
      return chip.vpu.mask_regs;
    case RegClass::kPredicate:
      return chip.scalar.predicates;
  }
  return 0;
}

std::string_view register_param(RegClass cls) {
  switch (cls) {
    case RegClass::kScalar:
      return "scalar.sregs";
    case RegClass::kVector:
      return "vpu.vregs";
    case RegClass::kMask:
      return "vpu.mask_regs";
    case RegClass::kPredicate:
      return "scalar.predicates";
  }
  return "";
}

// Bytes a memory space holds on `chip`.
std::uint64_t space_capacity(const ChipConfig& chip, MemorySpace space) {
  switch (space) {
    case MemorySpace::kVmem:
      return chip.vmem.size_bytes;
    case MemorySpace::kSmem:
      return chip.smem.size_bytes;
    case MemorySpace::kSflag:
      return chip.sflag.count * 4;
    case MemorySpace::kHbm:
      return chip.hbm.size_bytes;
  }
  return 0;
}

std::string_view space_param(MemorySpace space) {
  switch (space) {
    case MemorySpace::kVmem:
      return "vmem.size";
    case MemorySpace::kSmem:
      return "smem.size";
    case MemorySpace::kSflag:
      return "sflag.count";
    case MemorySpace::kHbm:
      return "hbm.size";
  }
  return "";
}

// Every allocation lies inside its memory space on `chip`.
void check_allocations(const Program& program, const ChipConfig& chip, std::vector<Diagnostic>& violations) {
  for (const Allocation& a : program.allocations) {
    const std::uint64_t offset = a.offset.value_or(0);
    const std::uint64_t capacity = space_capacity(chip, a.space);
    std::uint64_t end = 0;
    if (__builtin_add_overflow(offset, a.size, &end) || end > capacity) {
      violations.push_back(at(program, a.source,
                              fmt::format("#allocation{}{} (offset 0x{:x}, size 0x{:x}) does not fit {}: {} has {} "
                                          "bytes of it ({})",
                                          a.id, a.spill ? "_spill" : "", offset, a.size, memory_space_name(a.space),
                                          chip.name, capacity, space_param(a.space))));
    }
  }
}

}  // namespace

CheckResult check_program(const Program& program, const ChipConfig& chip) {
  CheckResult result;
  ProgramSummary& s = result.summary;
  s.bundles = program.bundles.size();
  auto check_reg = [&](const Reg& r, const Op& op) {
    const std::uint64_t count = register_count(chip, r.cls);
    if (r.index >= count) {
      result.violations.push_back(
          at(program, op.source,
             fmt::format("%{}{} does not exist on {}: it has {} ({}), %{}0..%{}{}", reg_prefix(r.cls), r.index,
                         chip.name, count, register_param(r.cls), reg_prefix(r.cls), reg_prefix(r.cls), count - 1)));
    }
  };
  check_allocations(program, chip, result.violations);
  for (const Bundle& bundle : program.bundles) {
    std::array<std::size_t, kSlotClassCount> in_bundle{};
    // The register writes of the bundle so far: two ops of a bundle writing
    // one register leave its value undefined (their writes are not ordered),
    // unless both are predicated (the compiler's exclusive pair, p and !p).
    // Pseudo ops write nothing (int_to_ptr and sphi name the register they
    // read, e.g. `%s149_s7 = sshll ... ;; %s150_s7 = int_to_ptr.vmem %s149_s7`).
    std::vector<const Op*> writers;
    for (const Op& op : bundle.ops) {
      if (op.dest_kind == Op::DestKind::kReg && op_info(op.opcode).slot != SlotClass::kPseudo) {
        for (const Op* other : writers) {
          if (other->dest_reg.cls != op.dest_reg.cls || other->dest_reg.index != op.dest_reg.index) continue;
          if (other->guard && op.guard) continue;
          result.violations.push_back(at(
              program, op.source,
              fmt::format("%{}{} is written twice in one bundle (also by the op at {}:{}): the writes of one bundle "
                          "are not ordered, so its value would be undefined",
                          reg_prefix(op.dest_reg.cls), op.dest_reg.index, other->source.line, other->source.column)));
          break;
        }
        writers.push_back(&op);
      }
      // sphi is a no-op once registers are allocated: its result and inputs
      // must be one register (`%s580_s16 = sphi %s611_s16, %s21_s16`), or
      // the result would silently keep what it held.
      if (op.opcode == OpId::kSphi && op.dest_kind == Op::DestKind::kReg) {
        for (const Operand& o : op.operands) {
          if (o.kind == Operand::Kind::kReg && o.reg.cls == op.dest_reg.cls && o.reg.index == op.dest_reg.index) {
            continue;
          }
          result.violations.push_back(
              at(program, op.source,
                 fmt::format("sphi: its result %{}{} and every input must be one register (a phi is a no-op once "
                             "registers are allocated; {} would not reach the result)",
                             reg_prefix(op.dest_reg.cls), op.dest_reg.index,
                             o.kind == Operand::Kind::kReg ? fmt::format("%{}{}", reg_prefix(o.reg.cls), o.reg.index)
                                                           : std::string("an immediate input"))));
          break;
        }
      }
      const OpInfo& info = op_info(op.opcode);
      ++s.ops;
      ++in_bundle[static_cast<std::size_t>(info.slot)];
      // Unit index against the preset.
      const std::uint64_t units = info.unit_kind == UnitKind::kMxu   ? chip.mxu.count
                                  : info.unit_kind == UnitKind::kXlu ? chip.xlu.count
                                                                     : 1;
      if (info.unit_kind == UnitKind::kMxu && chip.mxu.count == 0) {
        result.violations.push_back(at(
            program, op.source,
            fmt::format("{}: {} has no MXU (mxu.count 0: its matrix units are not modelled, so MXU ops are TPU-only)",
                        mnemonic_text(op.opcode, op.unit), chip.name)));
      } else if (info.unit_kind == UnitKind::kMxu && chip.mxu.size > chip.vpu.lanes) {
        result.violations.push_back(at(
            program, op.source,
            fmt::format("{}: {}'s {}x{} MXU is not modelled (the model's vreg interface to an MXU is {} lanes "
                        "wide, mxu.size at most vpu.lanes); programs without MXU ops run",
                        mnemonic_text(op.opcode, op.unit), chip.name, chip.mxu.size, chip.mxu.size, chip.vpu.lanes)));
      } else if (info.unit_kind != UnitKind::kNone && op.unit >= units) {
        result.violations.push_back(
            at(program, op.source,
               fmt::format("{}: {} has {} {} per core ({}0..{}{})", mnemonic_text(op.opcode, op.unit), chip.name, units,
                           info.unit_kind == UnitKind::kMxu ? "MXUs" : "XLUs",
                           info.unit_kind == UnitKind::kMxu ? "mxu" : "xlu",
                           info.unit_kind == UnitKind::kMxu ? "mxu" : "xlu", units - 1)));
      }
      if (op.dest_kind == Op::DestKind::kReg) check_reg(op.dest_reg, op);
      if (op.guard) check_reg(*op.guard, op);
      if (op.guard_fallback) check_reg(*op.guard_fallback, op);
      for (const Operand& o : op.operands) {
        if (o.kind == Operand::Kind::kReg) check_reg(o.reg, op);
        if (o.kind == Operand::Kind::kMem && o.mem.base_reg) check_reg(*o.mem.base_reg, op);
        if (o.kind == Operand::Kind::kMem && o.mem.sublane_mask_reg) check_reg(*o.mem.sublane_mask_reg, op);
      }
    }
    for (std::size_t c = 0; c < kSlotClassCount; ++c) {
      s.ops_per_slot[c] += in_bundle[c];
      s.max_per_bundle[c] = std::max(s.max_per_bundle[c], in_bundle[c]);
      const auto cls = static_cast<SlotClass>(c);
      if (cls == SlotClass::kPseudo) continue;
      const std::uint64_t capacity = chip.slot_capacity_of(cls);
      if (in_bundle[c] > capacity) {
        const std::string address = bundle.address ? fmt::format("0x{:x}", *bundle.address) : std::string("?");
        result.violations.push_back(
            at(program, bundle.source,
               fmt::format("bundle {} has {} {} ops, but {} has {} {} slot{} per bundle (slots.{})", address,
                           in_bundle[c], to_string(cls), chip.name, capacity, to_string(cls), capacity == 1 ? "" : "s",
                           preset_key(cls))));
      }
    }
  }
  return result;
}

std::string summary_line(const std::string& name, const ProgramSummary& summary) {
  std::string classes;
  for (std::size_t c = 0; c < kSlotClassCount; ++c) {
    if (summary.ops_per_slot[c] == 0) continue;
    if (!classes.empty()) classes += ", ";
    classes += fmt::format("{} {}", to_string(static_cast<SlotClass>(c)), summary.ops_per_slot[c]);
  }
  return fmt::format("{}: {} bundles, {} ops ({})", name, summary.bundles, summary.ops, classes);
}

}  // namespace tpuemu::isa
