// What every generated collective program (programs/collective_algorithms/)
// writes with: ops queued with the registers read off their text, labels,
// branches, sync-flag operands of one flag allocation, waits that consume
// what they waited for, and the bf16/f32 in-place add loop over VMEM.
#pragma once

#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "common/chip_config.hpp"
#include "ici/topology.hpp"
#include "programs/collectives.hpp"
#include "programs/llo_writer.hpp"

namespace tpuemu::programs {

inline constexpr std::uint64_t kCollectiveGranule = 32;
inline constexpr std::uint64_t kCollectiveRowBytes = 512;
inline constexpr std::uint64_t kAddGroupBytes = 16384;  // one add-loop iteration: 4 vregs
inline constexpr std::uint64_t kAddGroupRows = kAddGroupBytes / kCollectiveRowBytes;

// A 32-bit immediate as LLO prints it (negative values in unsigned form).
inline std::string llo_imm(std::int64_t v) {
  return std::to_string(static_cast<std::uint32_t>(v));
}

// Linear chip-id stride of a topology axis (x + X*(y + Y*z)).
inline std::uint64_t topology_stride(const ici::Topology& topology, std::size_t axis) {
  std::uint64_t s = 1;
  for (std::size_t a = 0; a < axis; ++a) s *= topology.length(a);
  return s;
}

class CollectiveEmitter {
 public:
  // `flag_allocation`: the id of the program's sync-flag allocation.
  CollectiveEmitter(const ChipConfig& chip, int flag_allocation) : w_(chip), flag_allocation_(flag_allocation) {}

 protected:
  using S = SlotClass;

  // Queues an op; the registers it reads and writes are read off its text
  // (%s.., %p.., %v.., %vm..; the destination is what precedes " = ").
  void emit(SlotClass slot, const std::string& text) {
    std::vector<std::string> reads;
    std::vector<std::string> writes;
    const auto eq = text.find(" = ");
    const bool reg_dest = eq != std::string::npos && text.size() > 1 && text[0] == '%' &&
                          std::isalpha(static_cast<unsigned char>(text[1]));
    auto scan = [&](std::size_t from, std::size_t to, std::vector<std::string>& out) {
      for (std::size_t i = from; i < to; ++i) {
        if (text[i] != '%' || i + 1 >= to || !std::isalpha(static_cast<unsigned char>(text[i + 1]))) continue;
        std::size_t e = i + 1;
        while (e < to && std::isalnum(static_cast<unsigned char>(text[e]))) ++e;
        out.push_back(text.substr(i + 1, e - i - 1));
        i = e - 1;
      }
    };
    if (reg_dest) {
      scan(0, eq, writes);
      scan(eq, text.size(), reads);
    } else {
      scan(0, text.size(), reads);
    }
    w_.op(slot, text, std::move(reads), std::move(writes));
  }
  std::string token() { return fmt::format("%{}", token_++); }
  void branch(const std::string& guard, const std::string& target) {
    emit(S::kBranch, fmt::format("{} = sbr.rel ({}) target = {}", token(), guard, target));
    w_.flush();
  }
  std::string label(const std::string& stem) { return fmt::format("{}_{}", stem, label_++); }
  [[nodiscard]] std::string flag(std::uint64_t index) const {
    return index == 0 ? fmt::format("[#allocation{}]", flag_allocation_)
                      : fmt::format("[#allocation{} + $0x{:x}]", flag_allocation_, index);
  }
  // A wait goes in a bundle after every op queued so far: one sharing the
  // bundle of the DMA it waits for could never be satisfied.
  void wait(const std::string& flag_operand, std::uint64_t amount, bool consume = true) {
    w_.flush();
    emit(S::kSync, fmt::format("{} = dma.done.wait {}, {}", token(), flag_operand, amount));
    if (consume) {
      emit(S::kSync,
           fmt::format("{} = vsyncadd {}, {}", token(), flag_operand, llo_imm(-static_cast<std::int64_t>(amount))));
    }
  }
  void sel(const std::string& dst, const std::string& pred, const std::string& on_true, const std::string& on_false) {
    emit(S::kSalu, fmt::format("%{} = scalar_select /*predicate=*/%{}, /*on_true=*/{}, /*on_false=*/{}", dst, pred,
                               on_true, on_false));
  }
  void add_imm(const std::string& dst, const std::string& src, std::int64_t v) {
    emit(S::kSalu, fmt::format("%{} = sadd.s32 %{}, {}", dst, src, llo_imm(v)));
  }

  // The operand bindings of the program contract (programs/collectives.hpp):
  // 0 input, 1 output, 2 scratch when shapes.scratch_bytes is not 0.
  void operand_bindings(bool bf16, const CollectiveShapes& shapes) {
    const std::string dt = bf16 ? "bf16" : "f32";
    const std::uint64_t el = bf16 ? 2 : 4;
    std::vector<std::string> bind = {
        fmt::format("%s0 = inlined_call_operand.hbm [shape: {}[{}], index: 0, kind: input, shape index: {{}}]", dt,
                    shapes.input_bytes / el),
        fmt::format("%s1 = inlined_call_operand.hbm [shape: {}[{}], index: 1, kind: output, shape index: {{}}]", dt,
                    shapes.output_bytes / el)};
    if (shapes.scratch_bytes != 0) {
      bind.push_back(
          fmt::format("%s2 = inlined_call_operand.hbm [shape: f32[{}], index: 2, kind: output, shape index: {{}}]",
                      shapes.scratch_bytes / 4));
    }
    w_.bundle(bind, "operand bindings (2: scratch)");
  }

  // Cores other than 0 go to "done"; the program halts with an error
  // (shalt.err) if sid.dim_* differ from `topology`; s6 = the chip id.
  // Uses s17, s18, p0, p3.
  void identity_checks(const ici::Topology& topology) {
    emit(S::kSalu, "%s17 = sid.core");
    emit(S::kSalu, "%p0 = scmp.ne.s32.totalorder %s17, 0");
    branch("%p0", "done");
    static constexpr const char* kDimOps[] = {"sid.dim_x", "sid.dim_y", "sid.dim_z"};
    for (std::size_t a = 0; a < topology.axis_count(); ++a) {
      emit(S::kSalu, fmt::format("%s18 = {}", kDimOps[a]));
      emit(S::kSalu, fmt::format("%p3 = scmp.ne.s32.totalorder %s18, {}", topology.length(a)));
      emit(S::kMisc, fmt::format("{} = shalt.err (%p3)", token()));
    }
    emit(S::kSalu, "%s6 = sid.chip");
  }

  // s7 + a = this chip's coordinate on each participating axis a, s10 its
  // group rank, s31 the id of its group's rank-0 chip. Uses s17.
  void group_rank(const CollectivePlan& plan, const ici::Topology& topology) {
    static constexpr const char* kCoordOps[] = {"sid.x", "sid.y", "sid.z"};
    emit(S::kSalu, "%s10 = smov 0");
    emit(S::kSalu, "%s31 = sadd.s32 %s6, 0");
    for (std::size_t a : plan.axes) {
      emit(S::kSalu, fmt::format("%s{} = {}", 7 + a, kCoordOps[a]));
      emit(S::kSalu, fmt::format("%s17 = smul.u32 %s{}, {}", 7 + a, plan.rank_stride[a]));
      emit(S::kSalu, "%s10 = sadd.s32 %s10, %s17");
      emit(S::kSalu, fmt::format("%s17 = smul.u32 %s{}, {}", 7 + a, topology_stride(topology, a)));
      emit(S::kSalu, "%s31 = ssub.s32 %s31, %s17");
    }
  }

  // Rank j += 1 (mod group_size) in s30, with its digits on the group's
  // axes (lengths, the first listed axis fastest) in s24, s25, ...; uses s17,
  // p6, p7.
  void group_odometer_step(const std::vector<std::uint32_t>& lengths, std::uint64_t group_size) {
    emit(S::kSalu, "%s24 = sadd.s32 %s24, 1");
    emit(S::kSalu, fmt::format("%p6 = scmp.eq.s32.totalorder %s24, {}", lengths[0]));
    sel("s24", "p6", "0", "%s24");
    for (std::size_t i = 1; i < lengths.size(); ++i) {
      const std::string d = fmt::format("s{}", 24 + i);
      add_imm("s17", d, 1);
      sel(d, "p6", "%s17", "%" + d);
      emit(S::kSalu, fmt::format("%p6 = scmp.eq.s32.totalorder %{}, {}", d, lengths[i]));
      sel(d, "p6", "0", "%" + d);
    }
    emit(S::kSalu, "%s30 = sadd.s32 %s30, 1");
    emit(S::kSalu, fmt::format("%p7 = scmp.eq.s32.totalorder %s30, {}", group_size));
    sel("s30", "p7", "0", "%s30");
  }

  // A += B elementwise over `groups` x 16 KiB of VMEM: A at VMEM row s42, B
  // at s43 (both advanced; s44 counts down, p4 is the loop's guard), 4 vregs
  // per iteration, scheduled by the writer; bf16 is widened, added in f32 and
  // rounded back (vpack's first operand is the high half, so the positions
  // round-trip). Uses v0..v27.
  void scheduled_add_loop(std::uint64_t groups, bool bf16) {
    emit(S::kSalu, fmt::format("%s44 = smov {}", groups));
    const std::string loop = label("add");
    w_.label(loop);
    for (int g = 0; g < 4; ++g) {
      emit(S::kLoad, fmt::format("%v{} = vld [vmem:[%s42 + $0x{:x}] sm:$0xff]", 2 * g, 8 * g));
      emit(S::kLoad, fmt::format("%v{} = vld [vmem:[%s43 + $0x{:x}] sm:$0xff]", 2 * g + 1, 8 * g));
    }
    for (int g = 0; g < 4; ++g) {
      if (bf16) {
        const int b = 12 + 4 * g;
        emit(S::kValu, fmt::format("%v{} = vunpack.c.l.bf16 %v{}", b, 2 * g));
        emit(S::kValu, fmt::format("%v{} = vunpack.c.h.bf16 %v{}", b + 1, 2 * g));
        emit(S::kValu, fmt::format("%v{} = vunpack.c.l.bf16 %v{}", b + 2, 2 * g + 1));
        emit(S::kValu, fmt::format("%v{} = vunpack.c.h.bf16 %v{}", b + 3, 2 * g + 1));
        emit(S::kValu, fmt::format("%v{0} = vadd.f32 %v{0}, %v{1}", b, b + 2));
        emit(S::kValu, fmt::format("%v{0} = vadd.f32 %v{0}, %v{1}", b + 1, b + 3));
        emit(S::kValu, fmt::format("%v{} = vpack.c.bf16 %v{}, %v{}", 8 + g, b + 1, b));
      } else {
        emit(S::kValu, fmt::format("%v{} = vadd.f32 %v{}, %v{}", 8 + g, 2 * g, 2 * g + 1));
      }
    }
    for (int g = 0; g < 4; ++g) {
      emit(S::kStore,
           fmt::format("{} = vst [vmem:[%s42 + $0x{:x}] sm:$0xff] /*vst_source=*/%v{}", token(), 8 * g, 8 + g));
    }
    add_imm("s42", "s42", static_cast<std::int64_t>(kAddGroupRows));
    add_imm("s43", "s43", static_cast<std::int64_t>(kAddGroupRows));
    emit(S::kSalu, "%s44 = ssub.s32 %s44, 1");
    emit(S::kSalu, "%p4 = scmp.gt.s32.totalorder %s44, 0");
    branch("%p4", loop);
  }

  LloWriter w_;

 private:
  int flag_allocation_;
  std::uint32_t token_ = 100;
  int label_ = 0;
};

}  // namespace tpuemu::programs
