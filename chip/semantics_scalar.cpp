// Semantics of the scalar unit: ALU, predicates, addresses, SMEM, control,
// operand bindings, trace/mode ops and the pod identity extensions.
#include <fmt/format.h>

#include <bit>

#include "chip/core.hpp"
#include "chip/semantics.hpp"

namespace tpuemu::chip {
namespace {

using Binary = std::uint32_t (*)(std::uint32_t, std::uint32_t);

template <Binary F>
void scalar_binary(Core& core, const ExecOp& op) {
  core.write_sreg(op, F(core.scalar_operand(op, 0), core.scalar_operand(op, 1)));
}

template <bool (*F)(std::int32_t, std::int32_t)>
void scalar_compare(Core& core, const ExecOp& op) {
  core.write_pred(op, F(static_cast<std::int32_t>(core.scalar_operand(op, 0)),
                        static_cast<std::int32_t>(core.scalar_operand(op, 1))));
}

std::uint32_t add(std::uint32_t a, std::uint32_t b) {
  return a + b;
}
std::uint32_t sub(std::uint32_t a, std::uint32_t b) {
  return a - b;
}
std::uint32_t mul(std::uint32_t a, std::uint32_t b) {
  return a * b;
}
std::uint32_t band(std::uint32_t a, std::uint32_t b) {
  return a & b;
}
std::uint32_t bor(std::uint32_t a, std::uint32_t b) {
  return a | b;
}
std::uint32_t bxor(std::uint32_t a, std::uint32_t b) {
  return a ^ b;
}
std::uint32_t shl(std::uint32_t a, std::uint32_t b) {
  return a << (b & 31U);
}
std::uint32_t shr(std::uint32_t a, std::uint32_t b) {
  return a >> (b & 31U);
}
std::uint32_t sra(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::uint32_t>(static_cast<std::int32_t>(a) >> (b & 31U));
}
bool eq(std::int32_t a, std::int32_t b) {
  return a == b;
}
bool ne(std::int32_t a, std::int32_t b) {
  return a != b;
}
bool lt(std::int32_t a, std::int32_t b) {
  return a < b;
}
bool le(std::int32_t a, std::int32_t b) {
  return a <= b;
}
bool gt(std::int32_t a, std::int32_t b) {
  return a > b;
}
bool ge(std::int32_t a, std::int32_t b) {
  return a >= b;
}

bool pred_operand(const Core& core, const ExecOp& op, std::size_t i) {
  return core.scalar_operand(op, i) != 0;
}

std::uint32_t smem_word_address(Core& core, const ExecOp& op, std::size_t i) {
  const isa::Operand& o = op.op->operands[i];
  std::uint32_t word = op.value[i];
  if (o.mem.base_reg) word = core.sregs[o.mem.base_reg->index] + static_cast<std::uint32_t>(o.mem.offset);
  core.check_range(core.smem, "SMEM", static_cast<std::uint64_t>(word) * 4, 4);
  return word;
}

}  // namespace

void exec_SaddS32(Core& c, const ExecOp& op) {
  scalar_binary<add>(c, op);
}
void exec_SsubS32(Core& c, const ExecOp& op) {
  scalar_binary<sub>(c, op);
}
void exec_SmulU32(Core& c, const ExecOp& op) {
  scalar_binary<mul>(c, op);
}
void exec_SandU32(Core& c, const ExecOp& op) {
  scalar_binary<band>(c, op);
}
void exec_SorU32(Core& c, const ExecOp& op) {
  scalar_binary<bor>(c, op);
}
void exec_SxorU32(Core& c, const ExecOp& op) {
  scalar_binary<bxor>(c, op);
}
void exec_SshllU32(Core& c, const ExecOp& op) {
  scalar_binary<shl>(c, op);
}
void exec_SshrlU32(Core& c, const ExecOp& op) {
  scalar_binary<shr>(c, op);
}
void exec_SshraS32(Core& c, const ExecOp& op) {
  scalar_binary<sra>(c, op);
}
void exec_ScmpEqS32(Core& c, const ExecOp& op) {
  scalar_compare<eq>(c, op);
}
void exec_ScmpNeS32(Core& c, const ExecOp& op) {
  scalar_compare<ne>(c, op);
}
void exec_ScmpLtS32(Core& c, const ExecOp& op) {
  scalar_compare<lt>(c, op);
}
void exec_ScmpLeS32(Core& c, const ExecOp& op) {
  scalar_compare<le>(c, op);
}
void exec_ScmpGtS32(Core& c, const ExecOp& op) {
  scalar_compare<gt>(c, op);
}
void exec_ScmpGeS32(Core& c, const ExecOp& op) {
  scalar_compare<ge>(c, op);
}
void exec_Pnand(Core& c, const ExecOp& op) {
  c.write_pred(op, !(pred_operand(c, op, 0) && pred_operand(c, op, 1)));
}
void exec_Por(Core& c, const ExecOp& op) {
  c.write_pred(op, pred_operand(c, op, 0) || pred_operand(c, op, 1));
}
void exec_Pneg(Core& c, const ExecOp& op) {
  c.write_pred(op, !pred_operand(c, op, 0));
}

// A guard with a kept register (`smov (%p, %s_old), v`) is handled by the
// issue loop: when the guard is false the op does not execute and the
// destination, which shares the kept register, keeps its value.
void exec_Smov(Core& c, const ExecOp& op) {
  c.write_sreg(op, c.scalar_operand(op, 0));
}
void exec_ScalarSelect(Core& c, const ExecOp& op) {
  c.write_sreg(op, pred_operand(c, op, 0) ? c.scalar_operand(op, 1) : c.scalar_operand(op, 2));
}
void exec_ScalarLeaVmem(Core& c, const ExecOp& op) {
  scalar_binary<add>(c, op);
}
void exec_ScalarLeaHbm(Core& c, const ExecOp& op) {
  scalar_binary<add>(c, op);
}
void exec_ScalarLeaSflag(Core& c, const ExecOp& op) {
  scalar_binary<add>(c, op);
}

void exec_Sld(Core& c, const ExecOp& op) {
  const std::uint32_t word = smem_word_address(c, op, 0);
  std::uint32_t v = 0;
  std::memcpy(&v, c.smem.data(static_cast<std::uint64_t>(word) * 4), 4);
  c.write_sreg(op, v);
}

void exec_Sst(Core& c, const ExecOp& op) {
  const std::uint32_t word = smem_word_address(c, op, 0);
  const std::uint32_t v = c.scalar_operand(op, 1);
  std::memcpy(c.smem.data(static_cast<std::uint64_t>(word) * 4), &v, 4);
}

void exec_ScalarParameterAddress(Core& c, const ExecOp& op) {
  const std::uint32_t k = op.value[0];
  if (k >= c.parameter_values.size()) {
    throw ProgramFault(
        fmt::format("parameter {} is not bound by the host ({} parameters)", k, c.parameter_values.size()));
  }
  c.write_sreg(op, c.parameter_values[k]);
}
// A cast annotates the value in its register: the dumps place it in the same
// bundle as the op producing that value (e.g. `sshll` and `int_to_ptr` of s1
// in one bundle), so it must not read the register's old value. Only a cast
// into another register moves anything; an in-place cast has no destination
// after decoding (exec_program.cpp).
static void int_to_ptr(Core& c, const ExecOp& op) {
  if (op.dest && op.op->operands[1].reg.index != op.dest->index) c.write_sreg(op, c.scalar_operand(op, 1));
}
void exec_IntToPtrHbm(Core& c, const ExecOp& op) {
  int_to_ptr(c, op);
}
void exec_IntToPtrVmem(Core& c, const ExecOp& op) {
  int_to_ptr(c, op);
}
// Both inputs of a phi share the result's register once allocated: nothing moves.
void exec_Sphi(Core&, const ExecOp&) {}

void exec_SbrRel(Core& c, const ExecOp& op) {
  c.branch_to(op.target_bundle);
}
void exec_ShaltErr(Core&, const ExecOp&) {
  throw ProgramFault("the program halted with an error (a bounds check failed)");
}
// `inlined_call %a, %b /* %add.3 = add(...) */`: the callee is named only in the comment.
void exec_InlinedCall(Core& c, const ExecOp& op) {
  const std::string& comment = op.op->comment;
  const auto start = comment.find('%');
  const auto end = comment.find(" =", start == std::string::npos ? 0 : start);
  if (start == std::string::npos || end == std::string::npos) {
    throw ProgramFault("inlined_call without a `/* %kernel = ... */` comment naming its kernel");
  }
  const std::string name = comment.substr(start + 1, end - start - 1);
  const auto it = c.callees.find(name);
  if (it == c.callees.end()) throw ProgramFault(fmt::format("inlined_call of kernel '{}', which was not loaded", name));
  std::vector<std::uint32_t> args;
  for (std::size_t i = 0; i < op.op->operands.size(); ++i) args.push_back(c.scalar_operand(op, i));
  c.call(*it->second, std::move(args));
}

void exec_InlinedCallOperandHbm(Core& c, const ExecOp& op) {
  const std::uint32_t index = op.op->operands[0].decl.index;
  const auto it = c.operand_values.find(index);
  if (it == c.operand_values.end()) throw ProgramFault(fmt::format("operand {} is not bound by the host", index));
  c.write_sreg(op, it->second);
}
void exec_InlinedCallOperandVmem(Core& c, const ExecOp& op) {
  exec_InlinedCallOperandHbm(c, op);
}
void exec_InlinedCallOperandScalar(Core& c, const ExecOp& op) {
  exec_InlinedCallOperandHbm(c, op);
}
void exec_CompilerSchedulingBarrier(Core&, const ExecOp&) {}

void exec_Vtrace(Core& c, const ExecOp& op) {
  c.trace_marker(c.scalar_operand(op, 0));
}
void exec_Vsettm(Core&, const ExecOp&) {}
// vdelay N: its bundle lasts N cycles (the next issues N cycles after it; N
// of 0 or 1 is an ordinary bundle, as the corpus's `vdelay 1` at the end of
// every TLP).
void exec_Vdelay(Core& c, const ExecOp& op) {
  // The literal as written (the syntax takes an integer only): 4294967295 is that many cycles, -1 a fault.
  const std::int64_t count = op.op->operands[0].integer;
  if (count < 0) throw ProgramFault(fmt::format("vdelay {}: the count of cycles must be 0 or more", count));
  c.hold_next_bundle(static_cast<std::uint64_t>(count));
}
void exec_VsetiarIar0(Core&, const ExecOp&) {}
void exec_VsetiarIar1(Core&, const ExecOp&) {}

// Identity: a lone chip is chip 0 of a 1x1x1 pod.
void exec_SidChip(Core& c, const ExecOp& op) {
  c.write_sreg(op, c.shared.identity.chip);
}
void exec_SidX(Core& c, const ExecOp& op) {
  c.write_sreg(op, c.shared.identity.coords[0]);
}
void exec_SidY(Core& c, const ExecOp& op) {
  c.write_sreg(op, c.shared.identity.coords[1]);
}
void exec_SidZ(Core& c, const ExecOp& op) {
  c.write_sreg(op, c.shared.identity.coords[2]);
}
void exec_SidCore(Core& c, const ExecOp& op) {
  c.write_sreg(op, c.core_index);
}
void exec_SidDimX(Core& c, const ExecOp& op) {
  c.write_sreg(op, c.shared.identity.dims[0]);
}
void exec_SidDimY(Core& c, const ExecOp& op) {
  c.write_sreg(op, c.shared.identity.dims[1]);
}
void exec_SidDimZ(Core& c, const ExecOp& op) {
  c.write_sreg(op, c.shared.identity.dims[2]);
}

}  // namespace tpuemu::chip
