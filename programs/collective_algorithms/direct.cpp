// Algorithms "one-shot" and "two-shot": direct transfers between every pair
// of the group, NCCL's symmetric-memory kernels (FABRICS.md section 3). Best
// on switched fabrics, where every peer is one chip-to-chip hop away; on a
// torus each transfer takes its route's hops.
//
//   one-shot all-gather      rank r sends its chunk to the output chunk r of
//                            every peer (N-1 remote DMAs of Q).
//   one-shot reduce-scatter  rank r sends chunk j of its input to rank j's
//                            scratch; rank j sums its N contributions.
//   one-shot all-reduce      rank r sends its whole input to every peer's
//                            scratch; every rank sums all N inputs.
//   two-shot all-reduce      the one-shot reduce-scatter, then a one-shot
//                            all-gather of each rank's sum.
//   all-to-all               the shared direct program (ring family's).
// Peers in the order r+1, r+2, ... (mod N); the contribution of rank i lands
// in scratch slot (r - i) mod N - 1 of rank r (slots of the reduced length).
//
// Summation order: for every element, the group's inputs in rank order,
//   acc = x_0; acc = add(acc, x_i) for i = 1, ..., N-1,
// add as the ring family's (bf16 rounded at every step), so every rank of a
// one-shot or two-shot all-reduce holds the same bits.
//
// Reduction: in tiles of at most 256 KiB (dividing the reduced length),
// double-buffered: the N contributions of tile t+1 load from HBM into VMEM
// while tile t is summed in place into its first buffer and stored.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "programs/collective_algorithm.hpp"
#include "programs/collective_emitter.hpp"
#include "programs/collective_reference.hpp"

// Each algorithm file has its own namespace: unity builds compile several of
// them as one translation unit.
namespace tpuemu::programs::direct_algorithms {

namespace {

using Op = CollectivePlan::Op;

constexpr std::uint64_t kGranule = kCollectiveGranule;
constexpr std::uint64_t kMaxTileBytes = 256 * 1024;

// Flags.
constexpr std::uint64_t kSent = 0;    // remote sends left this chip (source side)
constexpr std::uint64_t kIn = 1;      // contributions (or all-gather chunks) arrived here
constexpr std::uint64_t kGather = 2;  // two-shot: reduced chunks arrived here
constexpr std::uint64_t kLocal = 3;   // local copies
constexpr std::uint64_t kLoad0 = 4;   // tile loads into set 0 / 1
constexpr std::uint64_t kStore0 = 6;  // tile stores from set 0 / 1
constexpr std::uint64_t kFlagCount = 8;
constexpr int kAllocTiles = 0;
constexpr int kAllocFlags = 1;

bool two_shot(const CollectiveSpec& spec) {
  return spec.algorithm == "two-shot";
}

// Bytes each rank reduces: V for a one-shot all-reduce, else Q.
std::uint64_t reduced_bytes(const CollectiveSpec& spec, const CollectivePlan& plan) {
  return plan.op == Op::kAllReduce && !two_shot(spec) ? plan.bytes : plan.chunk_bytes;
}

class DirectGen : CollectiveEmitter {
 public:
  DirectGen(const CollectiveSpec& spec, const CollectivePlan& plan, const ici::Topology& topology,
            const ChipConfig& chip)
      : CollectiveEmitter(chip, kAllocFlags), spec_(spec), plan_(plan), topo_(topology), chip_(chip) {
    n_ = plan.group_size;
    qg_ = plan.chunk_bytes / kGranule;
    if (plan.reduces()) {
      lg_ = reduced_bytes(spec, plan) / kGranule;
      // Tiles: the fewest that divide the length and fit 2 sets x N buffers in VMEM.
      const std::uint64_t vmem_tile = chip.vmem.size_bytes / (2 * n_) / kAddGroupBytes * kAddGroupBytes;
      const std::uint64_t max_tile = std::min(kMaxTileBytes, vmem_tile);
      if (max_tile == 0) {
        throw std::invalid_argument(fmt::format("collective {} {}: {} contributions of 16 KiB do not fit {}'s VMEM",
                                                spec.algorithm, spec.op, 2 * n_, chip.name));
      }
      tiles_ = std::max<std::uint64_t>(1, (lg_ * kGranule + max_tile - 1) / max_tile);
      while (lg_ % tiles_ != 0) ++tiles_;
      tg_ = lg_ / tiles_;
      tile_rows_ = (tg_ * kGranule + kAddGroupBytes - 1) / kAddGroupBytes * kAddGroupRows;
    }
  }

  std::string run() {
    header();
    prologue();
    switch (plan_.op) {
      case Op::kAllGather:
        gather_phase(kIn, "%s3");
        w_.comment("this chip's chunk to its own output");
        emit(S::kSalu, fmt::format("%s20 = smul.u32 %s10, {}", qg_));
        emit(S::kSalu, "%s20 = sadd.s32 %s4, %s20");
        emit(S::kDma, fmt::format("{} = dma.hbm_to_hbm [thread:$0] /*src=*/%s3, /*size_in_granules=*/{}, "
                                  "/*dst=*/%s20, /*dst_syncflagno=*/{}",
                                  token(), qg_, flag(kLocal)));
        wait(flag(kIn), (n_ - 1) * qg_);
        wait(flag(kLocal), qg_);
        wait(flag(kSent), (n_ - 1) * qg_);
        break;
      case Op::kReduceScatter:
        scatter_phase();
        reduce_phase("%s4");
        wait(flag(kSent), (n_ - 1) * qg_);
        break;
      case Op::kAllReduce:
        if (two_shot(spec_)) {
          scatter_phase();
          emit(S::kSalu, fmt::format("%s37 = smul.u32 %s10, {}", qg_));
          emit(S::kSalu, "%s37 = sadd.s32 %s4, %s37");
          reduce_phase("%s37");
          gather_phase(kGather, "%s37");
          wait(flag(kGather), (n_ - 1) * qg_);
          wait(flag(kSent), 2 * (n_ - 1) * qg_);
        } else {
          broadcast_phase();
          reduce_phase("%s4");
          wait(flag(kSent), (n_ - 1) * lg_);
        }
        break;
      case Op::kAllToAll:
        throw std::logic_error("direct all-to-all is the shared program");
    }
    w_.label("done");
    w_.bundle({});
    return w_.text();
  }

 private:
  void header() {
    const std::string dt = plan_.bf16 ? "bf16" : "f32";
    const CollectiveShapes shapes = collective_shapes(spec_, topo_);
    w_.raw(fmt::format(
        "// Generated by tpuemu (programs/collective_algorithms/direct.cpp) for {}: {} {} {} of {} bytes over a group "
        "of {} chips of {}.",
        chip_.name, spec_.op, spec_.algorithm, dt, plan_.bytes, n_, topo_.shape()));
    if (plan_.reduces()) {
      w_.raw(fmt::format("// Reduction in {} tile{} of {} bytes.", tiles_, tiles_ == 1 ? "" : "s", tg_ * kGranule));
      const std::uint64_t bytes = 2 * n_ * tile_rows_ * kCollectiveRowBytes;
      w_.raw(
          fmt::format("#allocation{} [shape = 'f32[{}]', space=vmem, size = 0x{:x}, tag = 'contribution tiles "
                      "(set x rank)']",
                      kAllocTiles, bytes / 4, bytes));
    }
    w_.raw(fmt::format("#allocation{} [shape = 's32[{}]', space=sflag, size = 0x{:x}, tag = 'sync flags']", kAllocFlags,
                       kFlagCount, kFlagCount * 4));
    operand_bindings(plan_.bf16, shapes);
  }

  [[nodiscard]] std::uint64_t topo_stride(std::size_t axis) const { return topology_stride(topo_, axis); }

  // Core and topology checks; s6 chip, s7.. coordinates, s3/s4/s5 operand
  // granules, s10 rank r, s31 the group's rank-0 chip.
  void prologue() {
    identity_checks(topo_);
    emit(S::kSalu, "%s3 = sshll.u32 %s0, 4");
    emit(S::kSalu, "%s4 = sshll.u32 %s1, 4");
    if (collective_shapes(spec_, topo_).scratch_bytes != 0) emit(S::kSalu, "%s5 = sshll.u32 %s2, 4");
    group_rank(plan_, topo_);
    w_.flush();
  }

  void odometer_step() {
    std::vector<std::uint32_t> lengths;
    for (std::size_t a : plan_.axes) lengths.push_back(topo_.length(a));
    group_odometer_step(lengths, plan_.group_size);
  }

  // A loop over the peers j = r+1, ..., r+N-1 (mod N): s30 = j, s11 = the
  // offset o (1..N-1), s18 = j's chip; `body` issues the transfers.
  template <class F>
  void for_each_peer(const std::string& stem, F&& body) {
    emit(S::kSalu, "%s30 = sadd.s32 %s10, 0");
    for (std::size_t i = 0; i < plan_.axes.size(); ++i) {
      emit(S::kSalu, fmt::format("%s{} = sadd.s32 %s{}, 0", 24 + i, 7 + plan_.axes[i]));
    }
    odometer_step();
    emit(S::kSalu, "%s11 = smov 1");
    const std::string loop = label(stem);
    w_.label(loop);
    emit(S::kSalu, "%s18 = sadd.s32 %s31, 0");
    for (std::size_t i = 0; i < plan_.axes.size(); ++i) {
      emit(S::kSalu, fmt::format("%s17 = smul.u32 %s{}, {}", 24 + i, topo_stride(plan_.axes[i])));
      emit(S::kSalu, "%s18 = sadd.s32 %s18, %s17");
    }
    body();
    odometer_step();
    emit(S::kSalu, "%s11 = sadd.s32 %s11, 1");
    emit(S::kSalu, fmt::format("%p1 = scmp.lt.s32.totalorder %s11, {}", n_));
    branch("%p1", loop);
  }

  void remote(const std::string& src, std::uint64_t granules, const std::string& dst, std::uint64_t dst_flag) {
    emit(S::kDma, fmt::format("{} = dma.remote.hbm_to_hbm [thread:$0] /*src=*/{}, /*size_in_granules=*/{}, "
                              "/*chip=*/%s18, /*core=*/0, /*dst=*/{}, /*src_syncflagno=*/{}, /*dst_syncflagno=*/{}",
                              token(), src, granules, dst, flag(kSent), flag(dst_flag)));
  }

  // Chunk j of this chip's input to scratch slot o - 1 of rank j.
  void scatter_phase() {
    w_.comment(fmt::format("reduce-scatter: chunk j of the input to rank j, {} remote DMAs of {} bytes", n_ - 1,
                           plan_.chunk_bytes));
    for_each_peer("scatter", [&] {
      emit(S::kSalu, fmt::format("%s19 = smul.u32 %s30, {}", qg_));
      emit(S::kSalu, "%s19 = sadd.s32 %s3, %s19");
      emit(S::kSalu, fmt::format("%s20 = smul.u32 %s11, {}", qg_));
      emit(S::kSalu, "%s20 = sadd.s32 %s5, %s20");
      add_imm("s20", "s20", -static_cast<std::int64_t>(qg_));
      remote("%s19", qg_, "%s20", kIn);
    });
  }

  // The whole input to scratch slot o - 1 of every peer.
  void broadcast_phase() {
    w_.comment(fmt::format("one-shot: the input to every peer, {} remote DMAs of {} bytes", n_ - 1, plan_.bytes));
    for_each_peer("broadcast", [&] {
      emit(S::kSalu, fmt::format("%s20 = smul.u32 %s11, {}", lg_));
      emit(S::kSalu, "%s20 = sadd.s32 %s5, %s20");
      add_imm("s20", "s20", -static_cast<std::int64_t>(lg_));
      remote("%s3", lg_, "%s20", kIn);
    });
  }

  // `src` (Q bytes) to the output chunk r of every peer.
  void gather_phase(std::uint64_t dst_flag, const std::string& src) {
    w_.comment(fmt::format("all-gather: chunk r to every peer's output, {} remote DMAs of {} bytes", n_ - 1,
                           plan_.chunk_bytes));
    emit(S::kSalu, fmt::format("%s21 = smul.u32 %s10, {}", qg_));
    emit(S::kSalu, "%s21 = sadd.s32 %s4, %s21");
    for_each_peer("gather", [&] { remote(src, qg_, "%s21", dst_flag); });
  }

  // s21 = the HBM granule address of rank i's contribution (rank order) +
  // s13 (the tile's offset): this chip's own (s36) or scratch slot (r-i) mod N - 1.
  void contribution_address(std::uint64_t i) {
    add_imm("s20", "s10", -static_cast<std::int64_t>(i));
    emit(S::kSalu, "%p6 = scmp.lt.s32.totalorder %s20, 0");
    add_imm("s21", "s20", static_cast<std::int64_t>(n_));
    sel("s20", "p6", "%s21", "%s20");
    add_imm("s20", "s20", -1);
    emit(S::kSalu, fmt::format("%s21 = smul.u32 %s20, {}", lg_));
    emit(S::kSalu, "%s21 = sadd.s32 %s5, %s21");
    emit(S::kSalu, "%p7 = scmp.lt.s32.totalorder %s20, 0");
    sel("s21", "p7", "%s36", "%s21");
    emit(S::kSalu, "%s21 = sadd.s32 %s21, %s13");
  }

  // The N loads of the tile at s13 into the set whose first row is %rows
  // (flag %load).
  void issue_loads(const std::string& rows, const std::string& load) {
    for (std::uint64_t i = 0; i < n_; ++i) {
      contribution_address(i);
      add_imm("s22", rows.substr(1), static_cast<std::int64_t>(i * tile_rows_));
      emit(S::kSalu, fmt::format("%s22 = scalar_lea.vmem [#allocation{}], %s22", kAllocTiles));
      emit(S::kSalu, "%s22 = sshll.u32 %s22, 4");
      emit(S::kDma, fmt::format("{} = dma.hbm_to_vmem [thread:$0] /*hbm=*/%s21, /*size_in_granules=*/{}, "
                                "/*vmem=*/%s22, /*dst_syncflagno=*/{}",
                                token(), tg_, load));
    }
  }

  // Waits for every contribution, then sums tile by tile into `out` (a
  // register holding the output's granule address). Registers: s12 tile,
  // s13 tile offset (granules), s14/s15 first row of the current/other set,
  // s32/s33 their load flags, s34/s35 their store flags, s36 this chip's own
  // contribution.
  void reduce_phase(const std::string& out) {
    w_.comment(fmt::format("reduce: {} contributions of {} bytes in rank order", n_, lg_ * kGranule));
    if (plan_.op == Op::kAllReduce && !two_shot(spec_)) {
      emit(S::kSalu, "%s36 = sadd.s32 %s3, 0");
    } else {
      emit(S::kSalu, fmt::format("%s36 = smul.u32 %s10, {}", qg_));
      emit(S::kSalu, "%s36 = sadd.s32 %s3, %s36");
    }
    wait(flag(kIn), (n_ - 1) * lg_);
    emit(S::kSalu, "%s12 = smov 0");
    emit(S::kSalu, "%s13 = smov 0");
    emit(S::kSalu, "%s14 = smov 0");
    emit(S::kSalu, fmt::format("%s15 = smov {}", n_ * tile_rows_));
    emit(S::kSalu, fmt::format("%s32 = scalar_lea.sflag {}, 0", flag(kLoad0)));
    emit(S::kSalu, fmt::format("%s33 = scalar_lea.sflag {}, 0", flag(kLoad0 + 1)));
    emit(S::kSalu, fmt::format("%s34 = scalar_lea.sflag {}, 0", flag(kStore0)));
    emit(S::kSalu, fmt::format("%s35 = scalar_lea.sflag {}, 0", flag(kStore0 + 1)));
    issue_loads("%s14", "%s32");
    const std::string loop = label("tile");
    const std::string no_prefetch = label("no_prefetch");
    const std::string no_store_wait = label("no_store_wait");
    w_.label(loop);
    // Prefetch tile t+1 into the other set once its last store has left.
    emit(S::kSalu, fmt::format("%p2 = scmp.ge.s32.totalorder %s12, {}", tiles_ - 1));
    branch("%p2", no_prefetch);
    emit(S::kSalu, "%p2 = scmp.eq.s32.totalorder %s12, 0");
    branch("%p2", no_store_wait);
    wait("%s35", tg_);
    w_.label(no_store_wait);
    add_imm("s13", "s13", static_cast<std::int64_t>(tg_));
    issue_loads("%s15", "%s33");
    add_imm("s13", "s13", -static_cast<std::int64_t>(tg_));
    w_.label(no_prefetch);
    wait("%s32", n_ * tg_);
    const std::uint64_t groups = tile_rows_ / kAddGroupRows;
    for (std::uint64_t i = 1; i < n_; ++i) {
      emit(S::kSalu, fmt::format("%s42 = scalar_lea.vmem [#allocation{}], %s14", kAllocTiles));
      add_imm("s43", "s14", static_cast<std::int64_t>(i * tile_rows_));
      emit(S::kSalu, fmt::format("%s43 = scalar_lea.vmem [#allocation{}], %s43", kAllocTiles));
      scheduled_add_loop(groups, plan_.bf16);
    }
    emit(S::kSalu, fmt::format("%s22 = scalar_lea.vmem [#allocation{}], %s14", kAllocTiles));
    emit(S::kSalu, "%s22 = sshll.u32 %s22, 4");
    emit(S::kSalu, fmt::format("%s23 = sadd.s32 {}, %s13", out));
    emit(S::kDma, fmt::format("{} = dma.vmem_to_hbm [thread:$0] /*vmem=*/%s22, /*size_in_granules=*/{}, "
                              "/*hbm=*/%s23, /*dst_syncflagno=*/%s34",
                              token(), tg_));
    // Swap the sets.
    for (const auto& [a, b] : {std::pair{"s14", "s15"}, std::pair{"s32", "s33"}, std::pair{"s34", "s35"}}) {
      emit(S::kSalu, fmt::format("%s17 = sadd.s32 %{}, 0", a));
      emit(S::kSalu, fmt::format("%{} = sadd.s32 %{}, 0", a, b));
      emit(S::kSalu, fmt::format("%{} = sadd.s32 %s17, 0", b));
      w_.flush();
    }
    add_imm("s13", "s13", static_cast<std::int64_t>(tg_));
    add_imm("s12", "s12", 1);
    emit(S::kSalu, fmt::format("%p2 = scmp.lt.s32.totalorder %s12, {}", tiles_));
    branch("%p2", loop);
    // The stores still in flight: the last tile's (now the other set) and,
    // with two tiles or more, the one before (now the current set).
    wait("%s35", tg_);
    if (tiles_ >= 2) wait("%s34", tg_);
  }

  const CollectiveSpec& spec_;
  const CollectivePlan& plan_;
  const ici::Topology& topo_;
  const ChipConfig& chip_;
  std::uint64_t n_ = 1;
  std::uint64_t qg_ = 0;         // chunk Q, granules
  std::uint64_t lg_ = 0;         // reduced length, granules
  std::uint64_t tiles_ = 0;      // tiles of the reduction
  std::uint64_t tg_ = 0;         // one tile, granules
  std::uint64_t tile_rows_ = 0;  // VMEM rows of one tile buffer (whole add-loop groups)
};

class DirectAlgorithm final : public CollectiveAlgorithm {
 public:
  DirectAlgorithm(std::string name, std::string summary) : name_(std::move(name)), summary_(std::move(summary)) {}

  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] std::string_view summary() const override { return summary_; }
  [[nodiscard]] std::string refusal(Op op, const std::vector<std::size_t>& /*axes*/,
                                    const ici::Topology& /*topology*/) const override {
    if (name_ == "two-shot" && op != Op::kAllReduce && op != Op::kAllToAll) {
      return "two-shot is an all-reduce algorithm (a reduce-scatter, then an all-gather, each one direct shot); "
             "use one-shot for a lone all-gather or reduce-scatter";
    }
    return "";
  }
  [[nodiscard]] std::uint64_t scratch_bytes(const CollectivePlan& plan,
                                            const ici::Topology& /*topology*/) const override {
    if (!plan.reduces()) return 0;
    const bool whole = plan.op == Op::kAllReduce && name_ == "one-shot";
    return (plan.group_size - 1) * (whole ? plan.bytes : plan.chunk_bytes);
  }
  [[nodiscard]] std::string generate(const CollectiveSpec& spec, const CollectivePlan& plan,
                                     const ici::Topology& topology, const ChipConfig& chip) const override {
    return DirectGen(spec, plan, topology, chip).run();
  }
  [[nodiscard]] std::vector<std::vector<std::uint8_t>> reference(
      const CollectivePlan& plan, const ici::Topology& topology,
      const std::vector<std::vector<std::uint8_t>>& inputs) const override {
    return collective_detail::rank_order_reference(plan, topology, inputs);
  }
  [[nodiscard]] CollectivePrediction predict(const CollectiveSpec& spec, const CollectivePlan& plan,
                                             const ici::Topology& topology, const ChipConfig& chip) const override;

 private:
  std::string name_;
  std::string summary_;
};

// On a torus: the most bytes one direction of one link carries when every
// member of a group sends `pair_bytes` to every other at once, routed as
// ici's dimension-order routing does (axis by axis, the short way round a
// wrapping axis, a tie +). Each line along axis a carries, for each pair of
// coordinates on a, the traffic of N / L_a pairs (the route's coordinates on
// the axes before a are the destination's, after a the source's), so the
// busiest link is that of a line of L_a chips with every pair sending N / L_a
// times as much.
double torus_busiest_link_bytes(const CollectivePlan& plan, const ici::Topology& topology, double pair_bytes) {
  double busiest = 0;
  for (std::size_t a : plan.axes) {
    const std::uint32_t l = topology.length(a);
    const bool wraps = topology.wraps(a);
    std::vector<std::uint64_t> plus(l, 0);
    std::vector<std::uint64_t> minus(l, 0);
    for (std::uint32_t from = 0; from < l; ++from) {
      for (std::uint32_t to = 0; to < l; ++to) {
        if (from == to) continue;
        const std::uint32_t up = (to + l - from) % l;
        if (wraps ? up <= l - up : to > from) {
          for (std::uint32_t i = 0; i < (wraps ? up : to - from); ++i) ++plus[(from + i) % l];
        } else {
          const std::uint32_t down = wraps ? l - up : from - to;
          for (std::uint32_t i = 1; i <= down; ++i) ++minus[(from + l - i) % l];
        }
      }
    }
    std::uint64_t most = 0;
    for (std::uint32_t i = 0; i < l; ++i) most = std::max({most, plus[i], minus[i]});
    busiest = std::max(busiest, static_cast<double>(most) * static_cast<double>(plan.group_size / l) * pair_bytes);
  }
  return busiest;
}

// Every chip sends all its transfers at once through its egress B (the sum
// of its links: every NVLink, its NIC across nodes, or all its ICI links on
// a torus); on a torus no faster than the busiest link carries the shot's
// transfers (torus_busiest_link_bytes at the one-way payload rate); one
// chip-to-chip latency per shot (on a torus: the group's farthest hop count
// x ici.hop_latency); a reduction reads its N contributions from HBM. On a
// switched fabric each shot's N-1 DMAs also pay their store-and-forward
// through the switch (SwitchedHop::store_and_forward). A group over a fat
// tree's nodes sends to the members of its node over its NVLinks and to the
// others over its NIC at once: per shot the slower of the two.
CollectivePrediction DirectAlgorithm::predict(const CollectiveSpec& spec, const CollectivePlan& plan,
                                              const ici::Topology& topology, const ChipConfig& chip) const {
  CollectivePrediction p;
  const auto v = static_cast<double>(plan.bytes);
  const auto n = static_cast<double>(plan.group_size);
  const double q = v / n;
  double egress = chip.switched_egress();
  double hop = 0;
  std::optional<SwitchedHop> one;
  if (topology.switched()) {
    one = switched_hop(plan, topology, chip);
    egress = one->egress;
    hop = one->latency;
  } else {
    std::uint64_t hops = 0;
    for (std::size_t a : plan.axes) hops += topology.wraps(a) ? topology.length(a) / 2 : topology.length(a) - 1;
    hop = static_cast<double>(hops) * chip.ici.hop_latency_s;
  }
  double sent = 0;  // bytes out of one chip
  double shots = 1;
  double reduce_read = 0;
  switch (plan.op) {
    case Op::kAllGather:
      sent = (n - 1) * q;
      break;
    case Op::kReduceScatter:
      sent = (n - 1) * q;
      reduce_read = n * q;
      break;
    case Op::kAllReduce:
      if (name_ == "two-shot") {
        sent = 2 * (n - 1) * q;
        shots = 2;
        reduce_read = n * q;
      } else {
        sent = (n - 1) * v;
        reduce_read = n * v;
      }
      break;
    case Op::kAllToAll:
      sent = (n - 1) * q / n;
      break;
  }
  if (plan.axes.empty()) sent = 0;
  // Bytes from each member to each other per shot: one-shot all-reduce its
  // whole input, all-to-all a block, every other shot a chunk.
  const double pair_bytes = plan.op == Op::kAllReduce && name_ != "two-shot" ? v : plan.op == Op::kAllToAll ? q / n : q;
  const double links = topology.switched() || plan.axes.empty()
                           ? 0
                           : shots * torus_busiest_link_bytes(plan, topology, pair_bytes) / chip.link_payload_rate();
  double out = sent / egress;
  std::string split;
  if (one && one->spans_nodes && !plan.axes.empty()) {
    const std::vector<std::uint64_t> nodes = member_nodes(plan, topology);
    const auto in_node = static_cast<double>(std::count(nodes.begin(), nodes.end(), nodes.front()) - 1);
    const double across = n - 1 - in_node;
    const double nvlink = switched_hop_between(false, topology, chip).egress;
    out = shots * std::max(in_node * pair_bytes / nvlink, across * pair_bytes / egress);
    split = fmt::format(
        " (per shot max({:g} peers in the node x bytes / B_nvlink = {:g} B/s, {:g} in other nodes x "
        "bytes / B)",
        in_node, nvlink, across);
  }
  p.bandwidth_seconds = std::max(out, links) + reduce_read / chip.hbm.bandwidth;
  // Switched: each shot's N-1 DMAs leave at once and pass the switch store-and-forward.
  const double forward =
      one && !plan.axes.empty()
          ? shots * one->store_and_forward(static_cast<std::uint64_t>(pair_bytes), plan.group_size - 1)
          : 0;
  // On a torus a shot's N-1 sends from HBM go at most dma.max_in_flight at
  // a time, each holding its slot about hbm.latency: every further wave of
  // them waits that long (all-reduce at 64 KiB on v5p 4x4x4, 63 sends per
  // shot: 16.03 us measured, 13.17 predicted without this term, 13.75 with
  // hbm.latency 0, 14.74 with 128 in flight; on 8x8x8, 511 sends: 50.87 us,
  // 25.94 without, 36.56 and 37.55).
  const double waves =
      topology.switched() || plan.axes.empty()
          ? 0
          : std::ceil(static_cast<double>(plan.group_size - 1) / static_cast<double>(chip.dma.max_in_flight)) - 1;
  const double queue = shots * waves * chip.hbm.latency_s;
  // The reduction's tiles each wait for their loads and their store (2 L_hbm
  // a tile; the double buffering hides little of it: two-shot at 256 MiB on
  // fat-tree:2x8, 64 tiles, measured 68 us above the prediction without this
  // term; on tori, counted since session 24: v5p 4x4x4 over z, one-shot
  // reduce-scatter of 64 KiB 1.41x -> 1.02x its prediction, and 83 -> 94 of
  // 99 one-shot / two-shot runs on 11 tori within 15 %).
  const double reduced = plan.op == Op::kAllReduce && name_ != "two-shot" ? v : q;
  const double tiles = reduce_read > 0 ? std::ceil(reduced / static_cast<double>(kMaxTileBytes)) : 0;
  const double reduce_waits = tiles * 2 * chip.hbm.latency_s;
  p.latency_seconds = plan.axes.empty() ? 0 : shots * hop + forward + queue + reduce_waits;
  p.seconds = p.bandwidth_seconds + p.latency_seconds;
  p.formula = fmt::format(
      "{} {} on {}: {} + contributions read / HBM bandwidth + {} x T_hop{}{}; V = {} B, N = {}, "
      "B = {:g} B/s, T_hop = {:g} s{}",
      spec.op, spec.algorithm, topology.shape(),
      topology.switched() ? "bytes out of a chip / B" + split
                          : "max(bytes out of a chip / B, the busiest link's bytes per shot x shots / W_oneway)",
      shots, forward > 0 ? fmt::format(" + store-and-forward through the switch {:g} s", forward) : "",
      fmt::format("{}{}",
                  queue > 0 ? fmt::format(" + {:g} x {:g} waves of dma.max_in_flight sends x L_hbm", shots, waves) : "",
                  reduce_waits > 0 ? fmt::format(" + the reduction's {:g} tiles x 2 L_hbm", tiles) : ""),
      plan.bytes, plan.group_size, egress, hop,
      topology.switched() ? ""
                          : fmt::format(" (torus: dimension-order routes, the busiest link {:g} B per shot, W_oneway "
                                        "= {:g} B/s)",
                                        plan.axes.empty() ? 0.0 : torus_busiest_link_bytes(plan, topology, pair_bytes),
                                        chip.link_payload_rate()));
  return p;
}

const CollectiveAlgorithmRegistrar kOneShot{std::make_unique<DirectAlgorithm>(
    "one-shot",
    "every rank sends to every peer at once (all-reduce: its whole input; reduce-scatter: chunk j to rank j) and "
    "sums the N contributions in rank order")};
const CollectiveAlgorithmRegistrar kTwoShot{std::make_unique<DirectAlgorithm>(
    "two-shot", "all-reduce as a direct reduce-scatter (rank j sums chunk j in rank order) then a direct all-gather")};

}  // namespace

}  // namespace tpuemu::programs::direct_algorithms
