// Algorithm "in-network": the switches reduce and multicast (NVLink SHARP,
// NCCL's NVLS; chip/in_network.hpp has the mechanism and its timing), for a
// group that is one whole switched domain (node:N / nvl:N over x, or one
// node of a fat tree: axis x).
//
//   reduce-scatter  for every rank j in order: dma.nvls.reduce of input
//                   chunk j to rank j (round j of the domain), so rank j
//                   receives the sum of chunk j.
//   all-gather      dma.nvls.multicast of the input to output chunk r of
//                   every rank.
//   all-reduce      the reduce-scatter into output chunk j of rank j, then a
//                   multicast of output chunk r to every rank.
// Each chip sends V (all-reduce, reduce-scatter) up into the switches and
// receives V (all-reduce, all-gather) from them: about half of a ring's
// 2(N-1)/N V each way for an all-reduce. Summation order: rank order, as
// the direct algorithms (summed in the switch).
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "programs/collective_algorithm.hpp"
#include "programs/collective_emitter.hpp"
#include "programs/collective_reference.hpp"

// Each algorithm file has its own namespace: unity builds compile several of
// them as one translation unit.
namespace tpuemu::programs::in_network_algorithm {

namespace {

using Op = CollectivePlan::Op;

constexpr std::uint64_t kSent = 0;
constexpr std::uint64_t kReduced = 1;
constexpr std::uint64_t kGathered = 2;
constexpr int kAllocFlags = 0;
constexpr std::uint64_t kPieceBytes = 64 * 1024;

class InNetworkGen : CollectiveEmitter {
 public:
  InNetworkGen(const CollectiveSpec& spec, const CollectivePlan& plan, const ici::Topology& topology,
               const ChipConfig& chip)
      : CollectiveEmitter(chip, kAllocFlags), spec_(spec), plan_(plan), topo_(topology), chip_(chip) {}

  std::string run() {
    const std::uint64_t n = plan_.group_size;
    const std::uint64_t qg = plan_.chunk_bytes / kCollectiveGranule;
    // Pieces of at most kPieceBytes (64 KiB: 512 KiB gave 1.56x the prediction at
    // 64 MiB on 8 x H100, 128 KiB 1.16x, 64 KiB 1.135x, 32 KiB 1.80x as the
    // issue costs grow) dividing the chunk: reductions of later
    // pieces climb while earlier ones come down and are multicast.
    std::uint64_t pieces = std::max<std::uint64_t>(1, (plan_.chunk_bytes + kPieceBytes - 1) / kPieceBytes);
    while (qg % pieces != 0) ++pieces;
    const std::uint64_t pg = qg / pieces;
    header();
    prologue();
    w_.comment(
        fmt::format("{} piece{} of {} bytes of each chunk", pieces, pieces == 1 ? "" : "s", pg * kCollectiveGranule));
    emit(S::kSalu, "%s12 = smov 0");  // the piece's granule offset in a chunk
    emit(S::kSalu, fmt::format("%s21 = smul.u32 %s10, {}", qg));
    emit(S::kSalu, "%s21 = sadd.s32 %s4, %s21");  // this rank's output chunk
    // Software-pipelined: the reductions of piece k+1 are issued before this
    // rank waits for its sum of piece k and multicasts it.
    if (plan_.reduces()) reduce_piece("%s12", n, qg, pg);
    const std::string loop = label("piece");
    const std::string last = label("last_piece");
    w_.label(loop);
    add_imm("s13", "s12", static_cast<std::int64_t>(pg));
    if (plan_.reduces()) {
      emit(S::kSalu, fmt::format("%p1 = scmp.ge.s32.totalorder %s13, {}", qg));
      branch("%p1", last);
      reduce_piece("%s13", n, qg, pg);
      w_.label(last);
      wait(flag(kReduced), pg);
    }
    if (plan_.op != Op::kReduceScatter) {
      // This rank's (reduced) piece to every rank's output chunk r.
      emit(S::kSalu, "%s22 = sadd.s32 %s21, %s12");
      emit(S::kSalu, plan_.op == Op::kAllReduce ? "%s23 = sadd.s32 %s22, 0" : "%s23 = sadd.s32 %s3, %s12");
      emit(S::kDma, fmt::format("{} = dma.nvls.multicast [thread:$0] /*src=*/%s23, /*size_in_granules=*/{}, "
                                "/*dst=*/%s22, /*src_syncflagno=*/{}, /*dst_syncflagno=*/{}",
                                token(), pg, flag(kSent), flag(kGathered)));
    }
    emit(S::kSalu, "%s12 = sadd.s32 %s13, 0");
    emit(S::kSalu, fmt::format("%p1 = scmp.lt.s32.totalorder %s13, {}", qg));
    branch("%p1", loop);
    std::uint64_t sent = 0;
    if (plan_.reduces()) sent += n * qg;
    if (plan_.op != Op::kReduceScatter) {
      sent += qg;
      wait(flag(kGathered), n * qg);
    }
    wait(flag(kSent), sent);
    w_.label("done");
    w_.bundle({});
    return w_.text();
  }

 private:
  // Chunk j's piece at granule offset `offset` to rank j, for every j (round
  // j + n x piece of the domain).
  void reduce_piece(const std::string& offset, std::uint64_t n, std::uint64_t qg, std::uint64_t pg) {
    for (std::uint64_t j = 0; j < n; ++j) {
      emit(S::kSalu, fmt::format("%s19 = sadd.s32 %s3, {}", llo_imm(static_cast<std::int64_t>(j * qg))));
      emit(S::kSalu, fmt::format("%s19 = sadd.s32 %s19, {}", offset));
      emit(S::kSalu, fmt::format("%s20 = sadd.s32 %s4, {}",
                                 llo_imm(static_cast<std::int64_t>(plan_.op == Op::kAllReduce ? j * qg : 0))));
      emit(S::kSalu, fmt::format("%s20 = sadd.s32 %s20, {}", offset));
      emit(S::kSalu, fmt::format("%s18 = sadd.s32 %s31, {}", j));
      emit(S::kDma, fmt::format("{} = dma.nvls.reduce [thread:$0] /*src=*/%s19, /*size_in_granules=*/{}, "
                                "/*chip=*/%s18, /*dst=*/%s20, /*src_syncflagno=*/{}, /*dst_syncflagno=*/{}, "
                                "/*bf16=*/{}",
                                token(), pg, flag(kSent), flag(kReduced), plan_.bf16 ? 1 : 0));
      w_.flush();
    }
  }

  void header() {
    const std::string dt = plan_.bf16 ? "bf16" : "f32";
    const CollectiveShapes shapes = collective_shapes(spec_, topo_);
    w_.raw(fmt::format(
        "// Generated by tpuemu (programs/collective_algorithms/in_network.cpp) for {}: {} in-network {} of {} bytes "
        "over the {} chips of a switched domain of {}.",
        chip_.name, spec_.op, dt, plan_.bytes, plan_.group_size, topo_.shape()));
    w_.raw(fmt::format("#allocation{} [shape = 's32[3]', space=sflag, size = 0xc, tag = 'sync flags']", kAllocFlags));
    operand_bindings(plan_.bf16, shapes);
  }

  // Core and topology checks; s3/s4 operand granules, s10 rank r (the x
  // coordinate), s31 the domain's first chip (rank 0).
  void prologue() {
    identity_checks(topo_);
    emit(S::kSalu, "%s10 = sid.x");
    emit(S::kSalu, "%s3 = sshll.u32 %s0, 4");
    emit(S::kSalu, "%s4 = sshll.u32 %s1, 4");
    emit(S::kSalu, "%s31 = ssub.s32 %s6, %s10");
    w_.flush();
  }

  const CollectiveSpec& spec_;
  const CollectivePlan& plan_;
  const ici::Topology& topo_;
  const ChipConfig& chip_;
};

class InNetworkAlgorithm final : public CollectiveAlgorithm {
 public:
  [[nodiscard]] std::string_view name() const override { return "in-network"; }
  [[nodiscard]] std::string_view summary() const override {
    return "the switches sum the ranks' chunks and multicast the result (NVLink SHARP / NVLS); sums in rank order";
  }
  [[nodiscard]] std::string refusal(Op op, const std::vector<std::size_t>& axes,
                                    const ici::Topology& topology) const override {
    if (!topology.switched()) {
      return fmt::format(
          "in-network needs switches that reduce and multicast (NVLS, SHARP); the torus {} has none: "
          "use ring, bidir-ring, multi-axis, one-shot or two-shot",
          topology.shape());
    }
    if (op == Op::kAllToAll) return "in-network has no all-to-all (the switches reduce and multicast): use one-shot";
    if (axes.size() != 1 || axes[0] != 0) {
      return fmt::format(
          "in-network reduces within one switched domain: the group must be axis x of {} (the "
          "chips of one {}), not the axes given",
          topology.shape(), topology.fabric() == "fat-tree" ? "node" : "domain");
    }
    return "";
  }
  [[nodiscard]] std::string chip_refusal(const ChipConfig& chip) const override {
    if (chip.fabric.nvls != 0) return "";
    return fmt::format(
        "in-network needs switches that reduce and multicast (NVLS, Hopper and later; fabric.nvls); {}'s have "
        "none: use ring, two-shot or one-shot",
        chip.name);
  }
  // NCCL enables NVLS with the Simple protocol only (src/graph/tuning.cc).
  [[nodiscard]] bool runs_protocol(std::string_view protocol) const override {
    return protocol.empty() || protocol == "Simple";
  }
  [[nodiscard]] std::string_view protocol_params(std::string_view protocol) const override {
    return protocol == "Simple" ? "NVLS" : protocol;
  }
  [[nodiscard]] std::uint64_t scratch_bytes(const CollectivePlan& /*plan*/,
                                            const ici::Topology& /*topology*/) const override {
    return 0;
  }
  [[nodiscard]] std::string generate(const CollectiveSpec& spec, const CollectivePlan& plan,
                                     const ici::Topology& topology, const ChipConfig& chip) const override {
    return InNetworkGen(spec, plan, topology, chip).run();
  }
  [[nodiscard]] std::vector<std::vector<std::uint8_t>> reference(
      const CollectivePlan& plan, const ici::Topology& topology,
      const std::vector<std::vector<std::uint8_t>>& inputs) const override {
    return collective_detail::rank_order_reference(plan, topology, inputs);
  }
  // Up into the switches V (reductions) + Q (a multicast's), down Q (a
  // reduction's result) + V (a multicast's), through a chip's NVLinks B;
  // one chip-to-chip latency (ChipConfig::switched_hop_latency) per phase.
  [[nodiscard]] CollectivePrediction predict(const CollectiveSpec& spec, const CollectivePlan& plan,
                                             const ici::Topology& topology, const ChipConfig& chip) const override {
    CollectivePrediction p;
    const auto v = static_cast<double>(plan.bytes);
    const double q = v / static_cast<double>(plan.group_size);
    const double b = chip.switched_egress();
    const double hop = chip.switched_hop_latency();
    double phases = 1;
    double most = v;  // the larger of the bytes up and down one chip's links
    if (plan.op == Op::kAllReduce) {
      phases = 2;
      most = v + q;
    }
    p.bandwidth_seconds = plan.axes.empty() ? 0 : most / b;
    p.latency_seconds = plan.axes.empty() ? 0 : phases * hop;
    p.seconds = p.bandwidth_seconds + p.latency_seconds;
    p.formula = fmt::format(
        "{} in-network on {}: {} / B + {} x T_hop; V = {} B, N = {}, B = {:g} B/s (every NVLink of a chip), T_hop = "
        "{:g} s",
        spec.op, topology.shape(), plan.op == Op::kAllReduce ? "(V + V/N)" : "V", phases, plan.bytes, plan.group_size,
        b, hop);
    return p;
  }
};

const CollectiveAlgorithmRegistrar kInNetworkRegistrar{std::make_unique<InNetworkAlgorithm>()};

}  // namespace

}  // namespace tpuemu::programs::in_network_algorithm
