// Semantics of the vector unit (VALU), the transcendental unit (EUP) and the
// cross-lane units (XLU). The arithmetic lives in vpu/; this file reads the
// operands, stages results and keeps the unit FIFOs with their ready times.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <string_view>

#include "chip/core.hpp"
#include "chip/semantics.hpp"
#include "vpu/eup.hpp"
#include "vpu/valu.hpp"
#include "vpu/xlu.hpp"

namespace tpuemu::chip {
namespace {

using vpu::VecArg;

VecArg arg(const Core& c, const ExecOp& op, std::size_t i) {
  const isa::Operand& o = op.op->operands[i];
  if (o.kind == isa::Operand::Kind::kReg && o.reg.cls == isa::RegClass::kVector) return vpu::vec(c.vregs[o.reg.index]);
  return vpu::splat(c.scalar_operand(op, i));
}

const vpu::Vreg& vreg(const Core& c, const ExecOp& op, std::size_t i) {
  return c.vregs[op.op->operands[i].reg.index];
}
const vpu::Vmask& mask(const Core& c, const ExecOp& op, std::size_t i) {
  return c.masks[op.op->operands[i].reg.index];
}

bool is_f32_arithmetic(isa::OpId id) {
  using isa::OpId;
  return id == OpId::kVaddF32 || id == OpId::kVsubF32 || id == OpId::kVmulF32 || id == OpId::kVmaxF32 ||
         id == OpId::kVminF32;
}

// Elementwise results of timing-only runs are discarded (Core::stage_vreg), so
// they are not computed; FLOPs still count.
void binary(Core& c, const ExecOp& op) {
  if (is_f32_arithmetic(op.id)) c.record_vpu_flops(vpu::kElements);
  if (!c.options.compute_numerics) return;
  vpu::valu_binary(op.id, arg(c, op, 0), arg(c, op, 1), c.stage_vreg(op));
}
void compare(Core& c, const ExecOp& op) {
  c.stage_mask(op) = vpu::valu_compare(op.id, arg(c, op, 0), arg(c, op, 1));
}
void unary(Core& c, const ExecOp& op) {
  if (!c.options.compute_numerics) return;
  vpu::valu_unary(op.id, arg(c, op, 0), c.stage_vreg(op));  // a staged buffer is no operand's
}
void pack(Core& c, const ExecOp& op) {
  if (!c.options.compute_numerics) return;
  c.stage_vreg(op) = vpu::vpack(op.id, arg(c, op, 0), arg(c, op, 1));
}

std::uint32_t token_of(const ExecOp& op) {
  if (op.op->dest_kind != isa::Op::DestKind::kToken) {
    throw ProgramFault(fmt::format("{} needs a result token (`%N = {} ...`) for its pop to name",
                                   isa::mnemonic_text(op.id, op.unit), isa::mnemonic_text(op.id, op.unit)));
  }
  return op.op->dest_token;
}

std::uint32_t xlu_index(const Core& c, const ExecOp& op) {
  if (op.unit >= c.transposers.size()) {
    throw ProgramFault(
        fmt::format("xlu{} does not exist: {} has {} XLUs per core", op.unit, c.chip.name, c.transposers.size()));
  }
  return op.unit;
}

// Queues a unit's result, faulting when its FIFO holds `depth` already (`what`
// names the FIFO, of XLU `xlu` when given, and `parameter` its depth's preset
// parameter; the name is formatted only for the fault).
void push_result(std::deque<Core::TokenResult>& fifo, Core::TokenResult result, std::uint64_t depth,
                 std::string_view what, std::string_view parameter, std::optional<std::uint32_t> xlu = std::nullopt) {
  if (fifo.size() >= depth) [[unlikely]] {
    throw ProgramFault(fmt::format("the {}{} is full ({} results, {}): pop results before pushing more", what,
                                   xlu ? fmt::format(" of xlu{}", *xlu) : std::string(), fifo.size(), parameter));
  }
  fifo.push_back(std::move(result));
}

void eup_push(Core& c, const ExecOp& op) {
  const std::uint64_t ready = c.now() + c.chip.latency(LatencyClass::kEup).value();
  push_result(c.eup_results, Core::TokenResult{ready, vpu::eup_apply(op.id, vreg(c, op, 0)), token_of(op)},
              c.chip.eup.fifo_depth, "EUP result FIFO", "eup.fifo_depth");
}

void permute_push(Core& c, const ExecOp& op, std::uint32_t x, std::uint64_t ready, vpu::Vreg value) {
  push_result(c.permute_results[x], Core::TokenResult{ready, std::move(value), token_of(op)}, c.chip.xlu.fifo_depth,
              "rotate/permute result FIFO", "xlu.fifo_depth", x);
}

void transpose(Core& c, const ExecOp& op) {
  const std::uint32_t x = xlu_index(c, op);
  vpu::TransposeChunk chunk;
  chunk.op = op.id;
  chunk.index = static_cast<std::uint32_t>(op.op->operands[0].integer);
  chunk.count = op.op->operands[0].chunk_count;
  chunk.narrow = op.op->operands[1].text == "narrow";
  chunk.width = c.scalar_operand(op, 3);
  auto results = c.transposers[x].feed(chunk, vreg(c, op, 2));
  const std::uint64_t ready = c.now() + c.chip.latency(LatencyClass::kXluTranspose).value();
  for (auto& r : results) {
    push_result(c.transpose_results[x], Core::TokenResult{ready, std::move(r)}, c.chip.xlu.fifo_depth, "transpose FIFO",
                "xlu.fifo_depth", x);
  }
}

// The oldest result of `results` when `token` names it; a fault when nothing
// is queued or the oldest is another push's.
const Core::TokenResult& oldest_named(const std::deque<Core::TokenResult>& results, std::uint32_t token,
                                      std::string_view unit) {
  if (results.empty()) {
    throw ProgramFault(fmt::format("pop of %{}: no {} op with that token is queued or in flight", token, unit));
  }
  if (results.front().token != token) {
    const bool queued =
        std::any_of(results.begin(), results.end(), [token](const Core::TokenResult& r) { return r.token == token; });
    throw ProgramFault(fmt::format("pop of %{}: the oldest {} result is %{}'s{} (the FIFO pops in issue order)", token,
                                   unit, results.front().token,
                                   queued ? "" : fmt::format(", and no %{} is queued", token)));
  }
  return results.front();
}

vpu::Vreg take(std::deque<Core::TokenResult>& results, std::uint32_t token, std::string_view unit) {
  (void)oldest_named(results, token, unit);
  vpu::Vreg v = std::move(results.front().value);
  results.pop_front();
  return v;
}

}  // namespace

void exec_VaddS32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_VsubS32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_VmulU32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_VandU32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_VorU32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_VxorU32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_VshllU32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_VshrlU32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_VshraS32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_VaddF32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_VsubF32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_VmulF32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_VmaxF32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_VminF32(Core& c, const ExecOp& op) {
  binary(c, op);
}
void exec_Vclz(Core& c, const ExecOp& op) {
  unary(c, op);
}
void exec_Vlaneseq(Core& c, const ExecOp& op) {
  c.stage_vreg(op) = vpu::vlaneseq();
}
void exec_Vstv(Core& c, const ExecOp& op) {
  c.stage_vreg(op) = vpu::vstv(c.scalar_operand(op, 0));
}
void exec_Vmov(Core& c, const ExecOp& op) {
  unary(c, op);
}
void exec_Vrng(Core& c, const ExecOp& op) {
  vpu::Vreg& out = c.stage_vreg(op);
  for (auto& w : out.words) w = c.next_random();
}
void exec_Setrngseed(Core& c, const ExecOp& op) {
  c.seed_random(vreg(c, op, 0).words[0]);
}

void exec_VcmpEqS32(Core& c, const ExecOp& op) {
  compare(c, op);
}
void exec_VcmpNeS32(Core& c, const ExecOp& op) {
  compare(c, op);
}
void exec_VcmpLtS32(Core& c, const ExecOp& op) {
  compare(c, op);
}
void exec_VcmpLeS32(Core& c, const ExecOp& op) {
  compare(c, op);
}
void exec_VcmpGtS32(Core& c, const ExecOp& op) {
  compare(c, op);
}
void exec_VcmpGeS32(Core& c, const ExecOp& op) {
  compare(c, op);
}
void exec_VcmpEqF32(Core& c, const ExecOp& op) {
  compare(c, op);
}
void exec_VcmpNeF32(Core& c, const ExecOp& op) {
  compare(c, op);
}
void exec_VcmpLtF32(Core& c, const ExecOp& op) {
  compare(c, op);
}
void exec_VcmpLeF32(Core& c, const ExecOp& op) {
  compare(c, op);
}
void exec_VcmpGtF32(Core& c, const ExecOp& op) {
  compare(c, op);
}
void exec_VcmpGeF32(Core& c, const ExecOp& op) {
  compare(c, op);
}
void exec_VcU32(Core& c, const ExecOp& op) {
  compare(c, op);
}
void exec_VweirdF32(Core& c, const ExecOp& op) {
  c.stage_mask(op) = vpu::vweird_f32(vreg(c, op, 0));
}
void exec_Vcmask(Core& c, const ExecOp& op) {
  c.stage_mask(op) = vpu::vcmask(op.value[0]);
}
void exec_Vmor(Core& c, const ExecOp& op) {
  c.stage_mask(op) = vpu::vmor(mask(c, op, 0), mask(c, op, 1));
}
void exec_Vsel(Core& c, const ExecOp& op) {
  c.stage_vreg(op) = vpu::vsel(mask(c, op, 0), arg(c, op, 1), arg(c, op, 2));
}

void exec_VcvtS32F32(Core& c, const ExecOp& op) {
  unary(c, op);
}
void exec_VcvtF32S32(Core& c, const ExecOp& op) {
  unary(c, op);
}
void exec_VcvtF32F8e4m3b11(Core& c, const ExecOp& op) {
  unary(c, op);
}
void exec_VunpackCLoBf16(Core& c, const ExecOp& op) {
  unary(c, op);
}
void exec_VunpackCHiBf16(Core& c, const ExecOp& op) {
  unary(c, op);
}
void exec_VunpackILoBf16(Core& c, const ExecOp& op) {
  unary(c, op);
}
void exec_VunpackC0F8e4m3b11(Core& c, const ExecOp& op) {
  unary(c, op);
}
void exec_VpackCBf16(Core& c, const ExecOp& op) {
  pack(c, op);
}
void exec_VpackCB16(Core& c, const ExecOp& op) {
  pack(c, op);
}
void exec_VpackCB8(Core& c, const ExecOp& op) {
  pack(c, op);
}
void exec_VrotSlane(Core& c, const ExecOp& op) {
  c.stage_vreg(op) = vpu::vrot_slane(vreg(c, op, 0), c.scalar_operand(op, 1));
}

void exec_Vpow2F32(Core& c, const ExecOp& op) {
  eup_push(c, op);
}
void exec_VrcpF32(Core& c, const ExecOp& op) {
  eup_push(c, op);
}
void exec_VtanhF32(Core& c, const ExecOp& op) {
  eup_push(c, op);
}
void exec_VpopEup(Core& c, const ExecOp& op) {
  c.stage_vreg(op) = take(c.eup_results, op.op->operands[0].token, "EUP");
}

void exec_VxposeStart(Core& c, const ExecOp& op) {
  transpose(c, op);
}
void exec_VxposeCont(Core& c, const ExecOp& op) {
  transpose(c, op);
}
void exec_VxposeEnd(Core& c, const ExecOp& op) {
  transpose(c, op);
}
void exec_VxposeStartEnd(Core& c, const ExecOp& op) {
  transpose(c, op);
}
void exec_VpopTrf(Core& c, const ExecOp& op) {
  auto& q = c.transpose_results[xlu_index(c, op)];
  c.stage_vreg(op) = std::move(q.front().value);
  q.pop_front();
}
void exec_VrotLaneB32(Core& c, const ExecOp& op) {
  const std::uint32_t x = xlu_index(c, op);
  const std::uint64_t ready = c.now() + c.chip.latency(LatencyClass::kXluRotate).value();
  permute_push(c, op, x, ready, vpu::rotate_lanes(vreg(c, op, 0), c.scalar_operand(op, 1)));
}
void exec_VsetPatternPermute(Core& c, const ExecOp& op) {
  c.permute_patterns[xlu_index(c, op)][token_of(op)] = vreg(c, op, 0);
}
void exec_Vperm(Core& c, const ExecOp& op) {
  const std::uint32_t x = xlu_index(c, op);
  const std::uint32_t pattern_token = op.op->operands[0].token;
  const auto it = c.permute_patterns[x].find(pattern_token);
  if (it == c.permute_patterns[x].end()) {
    throw ProgramFault(
        fmt::format("vperm names pattern %{}, which no vset.pattern.permute.xlu{} set", pattern_token, x));
  }
  const std::uint64_t ready = c.now() + c.chip.latency(LatencyClass::kXluPermute).value();
  permute_push(c, op, x, ready, vpu::permute_lanes(vreg(c, op, 1), it->second));
}
void exec_VpopPermute(Core& c, const ExecOp& op) {
  c.stage_vreg(op) = take(c.permute_results[xlu_index(c, op)], op.op->operands[0].token, "XLU rotate/permute");
}
void exec_Vpush(Core& c, const ExecOp& op) {
  const std::uint64_t ready = c.now() + c.chip.latency(LatencyClass::kPop).value();
  c.scalar_pushes[token_of(op)] = {ready, vreg(c, op, 0).words[0]};
}
void exec_Spop(Core& c, const ExecOp& op) {
  const auto it = c.scalar_pushes.find(op.op->operands[0].token);
  if (it == c.scalar_pushes.end()) {
    throw ProgramFault(fmt::format("spop of %{}: no vpush with that token", op.op->operands[0].token));
  }
  c.write_sreg(op, it->second.second);
  c.scalar_pushes.erase(it);
}

std::uint64_t ready_token_pop(Core& c, const ExecOp& op) {
  const std::uint32_t token = op.op->operands[0].token;
  c.set_stall_cause(StallCause::kFifo);
  if (op.id == isa::OpId::kSpop) {
    const auto it = c.scalar_pushes.find(token);
    if (it == c.scalar_pushes.end()) throw ProgramFault(fmt::format("spop of %{}: no vpush with that token", token));
    return it->second.first;
  }
  if (op.id == isa::OpId::kVpopEup) return oldest_named(c.eup_results, token, "EUP").ready_cycle;
  return oldest_named(c.permute_results[xlu_index(c, op)], token, "XLU rotate/permute").ready_cycle;
}

std::uint64_t ready_transpose_pop(Core& c, const ExecOp& op) {
  const auto& q = c.transpose_results[xlu_index(c, op)];
  if (q.empty()) {
    throw ProgramFault(
        fmt::format("pop from the empty transpose FIFO of xlu{}: no completed transpose is queued", op.unit));
  }
  c.set_stall_cause(StallCause::kFifo);
  return q.front().ready_cycle;
}

}  // namespace tpuemu::chip
