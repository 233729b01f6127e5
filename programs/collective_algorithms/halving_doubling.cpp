// Algorithm "halving-doubling": recursive halving (reduce-scatter) and
// recursive doubling (all-gather), log2 N steps each, for a group of a power
// of two chips (MPI's and ASTRA-sim's HalvingDoubling).
//
// Chunks c = 0..N-1 of Q bytes. Reduce-scatter step k = 0..m-1 (m = log2 N,
// bit b = N >> (k+1)): rank r holds the range of chunks whose bits above
// 2b match its own; it sends the half whose bit b differs from r's to its
// partner r XOR b (into the partner's receive slot k) and adds the partner's
// copy of the half it keeps to its own (into its work buffer). After the
// last step rank r holds chunk r summed over the group. All-gather step
// k = 0..m-1 (b = 1 << k): rank r sends the b chunks it holds to partner
// r XOR b, at the same place in the partner's output. All-reduce is the
// reduce-scatter, then the all-gather of the sums.
//
// Summation order: pairwise, a tree: after step k a kept element is the sum
// of the 2^(k+1) ranks that agree with r above bit b, each step adding two
// partial sums (a + b equals b + a in f32, and bf16 rounds its sum, so the
// pair's order does not matter); the reference replays the same steps.
//
// Scratch: the work buffer (V) then the receive slots of the steps
// (V/2 + V/4 + ... + Q). Reductions go through VMEM in tiles of at most
// 256 KiB, one tile at a time.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "programs/collective_algorithm.hpp"
#include "programs/collective_emitter.hpp"
#include "programs/collective_reference.hpp"

// Each algorithm file has its own namespace: unity builds compile several of
// them as one translation unit.
namespace tpuemu::programs::halving_doubling_algorithm {

namespace {

using Op = CollectivePlan::Op;

constexpr std::uint64_t kGranule = kCollectiveGranule;
constexpr std::uint64_t kMaxTileBytes = 256 * 1024;
constexpr int kAllocTiles = 0;
constexpr int kAllocFlags = 1;
// Flags: sends left, local DMAs (loads, stores, copies), then arrivals per
// step: reduce-scatter step k at kStepIn0 + k, all-gather step k at
// kStepIn0 + m + k. One flag per step: a later step's partner may send
// before this step's has (counts on one flag would then be satisfied early).
constexpr std::uint64_t kSent = 0;
constexpr std::uint64_t kLocal = 2;
constexpr std::uint64_t kStepIn0 = 3;

std::uint32_t log2_exact(std::uint64_t n) {
  std::uint32_t m = 0;
  while ((std::uint64_t{1} << m) < n) ++m;
  return m;
}

// Granules of one reduction tile for chunks of `qg` granules: the largest
// power of two <= 256 KiB dividing Q (a step's half, b x Q, is then a multiple).
std::uint64_t reduce_tile_granules(std::uint64_t qg) {
  std::uint64_t tg = 1;
  while (qg % (tg * 2) == 0 && tg * 2 * kGranule <= kMaxTileBytes) tg *= 2;
  return tg;
}

// On a torus, the partners of one step (r xor b) differ only along the one
// axis whose ranks b falls in, by a digit XOR d (d a power of two); every
// line of that axis exchanges at once along shortest routes (dimension-order:
// a tie at half the ring goes the positive way). The most transfers any
// directed link of a line carries, and the hops of the longest route.
struct TorusStep {
  std::uint64_t load = 1;
  std::uint64_t hops = 0;
};
TorusStep torus_step(const CollectivePlan& plan, const ici::Topology& topology, std::uint64_t b) {
  TorusStep out;
  for (std::size_t a : plan.axes) {
    const std::uint64_t stride = plan.rank_stride[a];
    const std::uint32_t len = topology.length(a);
    if (b < stride || b >= stride * len) continue;
    const std::uint64_t d = b / stride;
    std::vector<std::uint64_t> up(len, 0);    // link p -> p+1
    std::vector<std::uint64_t> down(len, 0);  // link p -> p-1
    for (std::uint32_t p = 0; p < len; ++p) {
      const auto q = static_cast<std::uint32_t>(p ^ d);
      const std::uint32_t fwd = (q + len - p) % len;
      const bool positive = topology.wraps(a) ? fwd <= len - fwd : q > p;
      const std::uint32_t hops = topology.axis_distance(a, p, q);
      out.hops = std::max<std::uint64_t>(out.hops, hops);
      for (std::uint32_t h = 0, at = p; h < hops; ++h) {
        if (positive) {
          ++up[at];
          at = (at + 1) % len;
        } else {
          ++down[at];
          at = (at + len - 1) % len;
        }
      }
    }
    out.load = std::max(*std::max_element(up.begin(), up.end()), *std::max_element(down.begin(), down.end()));
  }
  return out;
}

class HalvingDoublingGen : CollectiveEmitter {
 public:
  HalvingDoublingGen(const CollectiveSpec& spec, const CollectivePlan& plan, const ici::Topology& topology,
                     const ChipConfig& chip)
      : CollectiveEmitter(chip, kAllocFlags), spec_(spec), plan_(plan), topo_(topology), chip_(chip) {
    n_ = plan.group_size;
    m_ = log2_exact(n_);
    qg_ = plan.chunk_bytes / kGranule;
    // Tiles of a reduce step's half (b chunks): the largest power-of-two
    // number of granules <= 256 KiB dividing Q (b x Q is then a multiple).
    tg_ = reduce_tile_granules(qg_);
    tile_rows_ = (tg_ * kGranule + kAddGroupBytes - 1) / kAddGroupBytes * kAddGroupRows;
  }

  std::string run() {
    header();
    prologue();
    std::uint64_t sent = 0;
    if (plan_.reduces()) {
      for (std::uint32_t k = 0; k < m_; ++k) sent += halving_step(k);
      // Chunk r, summed, from the work buffer to the output.
      emit(S::kSalu, fmt::format("%s19 = smul.u32 %s10, {}", qg_));
      emit(S::kSalu, "%s20 = sadd.s32 %s5, %s19");  // work chunk r
      emit(S::kSalu, plan_.op == Op::kAllReduce ? "%s21 = sadd.s32 %s4, %s19" : "%s21 = sadd.s32 %s4, 0");
      local_copy("%s20", "%s21", qg_);
    } else {
      emit(S::kSalu, fmt::format("%s19 = smul.u32 %s10, {}", qg_));
      emit(S::kSalu, "%s21 = sadd.s32 %s4, %s19");
      local_copy("%s3", "%s21", qg_);
    }
    if (plan_.op != Op::kReduceScatter) {
      for (std::uint32_t k = 0; k < m_; ++k) sent += doubling_step(k);
    }
    wait(flag(kSent), sent);
    w_.label("done");
    w_.bundle({});
    return w_.text();
  }

 private:
  [[nodiscard]] std::uint64_t flag_count() const { return kStepIn0 + 2 * m_; }
  [[nodiscard]] std::uint64_t topo_stride(std::size_t axis) const { return topology_stride(topo_, axis); }
  // Granules of the receive slot of reduce-scatter step k: after the work buffer (V).
  [[nodiscard]] std::uint64_t slot_offset(std::uint32_t k) const {
    std::uint64_t at = n_ * qg_;
    for (std::uint32_t i = 0; i < k; ++i) at += (n_ >> (i + 1)) * qg_;
    return at;
  }

  void header() {
    const std::string dt = plan_.bf16 ? "bf16" : "f32";
    const CollectiveShapes shapes = collective_shapes(spec_, topo_);
    w_.raw(fmt::format(
        "// Generated by tpuemu (programs/collective_algorithms/halving_doubling.cpp) for {}: {} halving-doubling {} "
        "of {} bytes over a group of {} chips of {} ({} steps each way).",
        chip_.name, spec_.op, dt, plan_.bytes, n_, topo_.shape(), m_));
    if (plan_.reduces()) {
      const std::uint64_t bytes = 2 * tile_rows_ * kCollectiveRowBytes;
      w_.raw(fmt::format("#allocation{} [shape = 'f32[{}]', space=vmem, size = 0x{:x}, tag = 'mine, received']",
                         kAllocTiles, bytes / 4, bytes));
    }
    w_.raw(fmt::format("#allocation{} [shape = 's32[{}]', space=sflag, size = 0x{:x}, tag = 'sync flags']", kAllocFlags,
                       flag_count(), flag_count() * 4));
    operand_bindings(plan_.bf16, shapes);
  }

  // Core and topology checks; s3/s4/s5 operand granules, s10 rank r, s31 the group's rank-0 chip.
  void prologue() {
    identity_checks(topo_);
    emit(S::kSalu, "%s3 = sshll.u32 %s0, 4");
    emit(S::kSalu, "%s4 = sshll.u32 %s1, 4");
    if (plan_.reduces()) emit(S::kSalu, "%s5 = sshll.u32 %s2, 4");
    group_rank(plan_, topo_);
    w_.flush();
  }

  // s18 = the chip of rank r XOR b (digits by shifts and masks: every
  // participating axis is a power of two long).
  void partner_chip(std::uint64_t b) {
    emit(S::kSalu, fmt::format("%s16 = sxor.u32 %s10, {}", b));
    emit(S::kSalu, "%s18 = sadd.s32 %s31, 0");
    for (std::size_t a : plan_.axes) {
      emit(S::kSalu, fmt::format("%s17 = sshrl.u32 %s16, {}", log2_exact(plan_.rank_stride[a])));
      emit(S::kSalu, fmt::format("%s17 = sand.u32 %s17, {}", topo_.length(a) - 1));
      emit(S::kSalu, fmt::format("%s17 = smul.u32 %s17, {}", topo_stride(a)));
      emit(S::kSalu, "%s18 = sadd.s32 %s18, %s17");
    }
  }

  void local_copy(const std::string& src, const std::string& dst, std::uint64_t granules) {
    emit(S::kDma, fmt::format("{} = dma.hbm_to_hbm [thread:$0] /*src=*/{}, /*size_in_granules=*/{}, /*dst=*/{}, "
                              "/*dst_syncflagno=*/{}",
                              token(), src, granules, dst, flag(kLocal)));
    wait(flag(kLocal), granules);
  }

  // Reduce-scatter step k; returns the granules it sent.
  std::uint64_t halving_step(std::uint32_t k) {
    const std::uint64_t b = n_ >> (k + 1);
    const std::uint64_t half = b * qg_;
    w_.comment(fmt::format("halving step {}: exchange {} bytes with rank r xor {}", k, half * kGranule, b));
    partner_chip(b);
    // s12 = keep start, s13 = send start (chunks): base = r & ~(2b-1), keep = base + (r & b).
    emit(S::kSalu, fmt::format("%s12 = sand.u32 %s10, {}", (n_ - 1) & ~(2 * b - 1)));
    emit(S::kSalu, fmt::format("%s14 = sand.u32 %s10, {}", b));
    emit(S::kSalu, "%s13 = sadd.s32 %s12, 0");
    emit(S::kSalu, "%s12 = sadd.s32 %s12, %s14");  // keep
    emit(S::kSalu, fmt::format("%s13 = sadd.s32 %s13, {}", b));
    emit(S::kSalu, "%s13 = ssub.s32 %s13, %s14");  // send
    emit(S::kSalu, fmt::format("%s12 = smul.u32 %s12, {}", qg_));
    emit(S::kSalu, fmt::format("%s13 = smul.u32 %s13, {}", qg_));
    const std::string src_base = k == 0 ? "%s3" : "%s5";  // input, then the work buffer
    emit(S::kSalu, fmt::format("%s19 = sadd.s32 {}, %s13", src_base));
    emit(S::kSalu, fmt::format("%s20 = sadd.s32 %s5, {}", slot_offset(k)));
    emit(S::kDma, fmt::format("{} = dma.remote.hbm_to_hbm [thread:$0] /*src=*/%s19, /*size_in_granules=*/{}, "
                              "/*chip=*/%s18, /*core=*/0, /*dst=*/%s20, /*src_syncflagno=*/{}, /*dst_syncflagno=*/{}",
                              token(), half, flag(kSent), flag(kStepIn0 + k)));
    wait(flag(kStepIn0 + k), half);
    // work[keep] = src[keep] + slot, tile by tile: s22 mine, s23 received, s24 out, s25 tiles left.
    emit(S::kSalu, fmt::format("%s22 = sadd.s32 {}, %s12", src_base));
    emit(S::kSalu, fmt::format("%s23 = sadd.s32 %s5, {}", slot_offset(k)));
    emit(S::kSalu, "%s24 = sadd.s32 %s5, %s12");
    emit(S::kSalu, fmt::format("%s25 = smov {}", half / tg_));
    emit(S::kSalu, fmt::format("%s26 = scalar_lea.vmem [#allocation{}], 0", kAllocTiles));
    emit(S::kSalu, "%s26 = sshll.u32 %s26, 4");
    emit(S::kSalu, fmt::format("%s27 = scalar_lea.vmem [#allocation{}], {}", kAllocTiles, tile_rows_));
    emit(S::kSalu, "%s27 = sshll.u32 %s27, 4");
    const std::string loop = label("halve");
    w_.label(loop);
    emit(S::kDma, fmt::format("{} = dma.hbm_to_vmem [thread:$0] /*hbm=*/%s22, /*size_in_granules=*/{}, /*vmem=*/%s26, "
                              "/*dst_syncflagno=*/{}",
                              token(), tg_, flag(kLocal)));
    emit(S::kDma, fmt::format("{} = dma.hbm_to_vmem [thread:$0] /*hbm=*/%s23, /*size_in_granules=*/{}, /*vmem=*/%s27, "
                              "/*dst_syncflagno=*/{}",
                              token(), tg_, flag(kLocal)));
    wait(flag(kLocal), 2 * tg_);
    emit(S::kSalu, fmt::format("%s42 = scalar_lea.vmem [#allocation{}], 0", kAllocTiles));
    emit(S::kSalu, fmt::format("%s43 = scalar_lea.vmem [#allocation{}], {}", kAllocTiles, tile_rows_));
    scheduled_add_loop(tile_rows_ / kAddGroupRows, plan_.bf16);
    emit(S::kDma, fmt::format("{} = dma.vmem_to_hbm [thread:$0] /*vmem=*/%s26, /*size_in_granules=*/{}, /*hbm=*/%s24, "
                              "/*dst_syncflagno=*/{}",
                              token(), tg_, flag(kLocal)));
    wait(flag(kLocal), tg_);
    add_imm("s22", "s22", static_cast<std::int64_t>(tg_));
    add_imm("s23", "s23", static_cast<std::int64_t>(tg_));
    add_imm("s24", "s24", static_cast<std::int64_t>(tg_));
    emit(S::kSalu, "%s25 = ssub.s32 %s25, 1");
    emit(S::kSalu, "%p2 = scmp.gt.s32.totalorder %s25, 0");
    branch("%p2", loop);
    return half;
  }

  // All-gather step k: the 2^k chunks this rank holds in the output to its
  // partner's output; returns the granules it sent.
  std::uint64_t doubling_step(std::uint32_t k) {
    const std::uint64_t b = std::uint64_t{1} << k;
    const std::uint64_t held = b * qg_;
    w_.comment(fmt::format("doubling step {}: {} bytes to rank r xor {}", k, held * kGranule, b));
    partner_chip(b);
    emit(S::kSalu, fmt::format("%s12 = sand.u32 %s10, {}", (n_ - 1) & ~(b - 1)));
    emit(S::kSalu, fmt::format("%s12 = smul.u32 %s12, {}", qg_));
    emit(S::kSalu, "%s19 = sadd.s32 %s4, %s12");
    emit(S::kDma, fmt::format("{} = dma.remote.hbm_to_hbm [thread:$0] /*src=*/%s19, /*size_in_granules=*/{}, "
                              "/*chip=*/%s18, /*core=*/0, /*dst=*/%s19, /*src_syncflagno=*/{}, /*dst_syncflagno=*/{}",
                              token(), held, flag(kSent), flag(kStepIn0 + m_ + k)));
    wait(flag(kStepIn0 + m_ + k), held);
    return held;
  }

  const CollectiveSpec& spec_;
  const CollectivePlan& plan_;
  const ici::Topology& topo_;
  const ChipConfig& chip_;
  std::uint64_t n_ = 1;
  std::uint32_t m_ = 0;
  std::uint64_t qg_ = 0;
  std::uint64_t tg_ = 1;
  std::uint64_t tile_rows_ = 0;
};

class HalvingDoublingAlgorithm final : public CollectiveAlgorithm {
 public:
  [[nodiscard]] std::string_view name() const override { return "halving-doubling"; }
  [[nodiscard]] std::string_view summary() const override {
    return "recursive halving (reduce-scatter) and doubling (all-gather) with partner r xor 2^k, log2 N steps; "
           "needs a power-of-two group; sums pairwise (a tree)";
  }
  [[nodiscard]] std::string refusal(Op /*op*/, const std::vector<std::size_t>& axes,
                                    const ici::Topology& topology) const override {
    std::uint64_t n = 1;
    for (std::size_t a : axes) n *= topology.length(a);
    if ((n & (n - 1)) != 0) {
      return fmt::format("halving-doubling needs a group of a power of two chips; this one has {}", n);
    }
    return "";
  }
  [[nodiscard]] std::uint64_t scratch_bytes(const CollectivePlan& plan,
                                            const ici::Topology& /*topology*/) const override {
    if (!plan.reduces()) return 0;
    return 2 * plan.bytes - plan.chunk_bytes;  // work V + slots V/2 + ... + Q
  }
  [[nodiscard]] std::string generate(const CollectiveSpec& spec, const CollectivePlan& plan,
                                     const ici::Topology& topology, const ChipConfig& chip) const override {
    return HalvingDoublingGen(spec, plan, topology, chip).run();
  }
  // Replays the steps on host floats.
  [[nodiscard]] std::vector<std::vector<std::uint8_t>> reference(
      const CollectivePlan& plan, const ici::Topology& topology,
      const std::vector<std::vector<std::uint8_t>>& inputs) const override {
    using namespace collective_detail;
    const std::uint64_t out_bytes = plan.op == Op::kAllReduce ? plan.bytes : plan.chunk_bytes;
    const std::size_t el = plan.bf16 ? 2 : 4;
    const std::uint64_t q = plan.chunk_bytes / el;  // elements per chunk
    std::vector<std::vector<std::uint8_t>> outputs(inputs.size(), std::vector<std::uint8_t>(out_bytes));
    for (const std::vector<ChipId>& members : collective_groups(plan, topology)) {
      const std::uint64_t n = members.size();
      std::vector<std::vector<float>> data;
      for (const ChipId c : members) data.push_back(load_elements(inputs[c.value()].data(), plan.bytes, plan.bf16));
      for (std::uint64_t b = n / 2; b >= 1; b /= 2) {
        std::vector<std::vector<float>> next = data;
        for (std::uint64_t r = 0; r < n; ++r) {
          const std::uint64_t keep = (r & ~(2 * b - 1) & (n - 1)) + (r & b);
          std::vector<float> mine(data[r].begin() + static_cast<std::ptrdiff_t>(keep * q),
                                  data[r].begin() + static_cast<std::ptrdiff_t>((keep + b) * q));
          const std::vector<float> theirs(data[r ^ b].begin() + static_cast<std::ptrdiff_t>(keep * q),
                                          data[r ^ b].begin() + static_cast<std::ptrdiff_t>((keep + b) * q));
          accumulate(mine, theirs, plan.bf16);
          std::copy(mine.begin(), mine.end(), next[r].begin() + static_cast<std::ptrdiff_t>(keep * q));
        }
        data = std::move(next);
        if (b == 1) break;
      }
      for (std::uint64_t r = 0; r < n; ++r) {
        std::uint8_t* out = outputs[members[r].value()].data();
        if (plan.op == Op::kReduceScatter) {
          std::vector<float> chunk(data[r].begin() + static_cast<std::ptrdiff_t>(r * q),
                                   data[r].begin() + static_cast<std::ptrdiff_t>((r + 1) * q));
          store_elements(chunk, out, plan.bf16);
        } else {
          for (std::uint64_t c = 0; c < n; ++c) {
            std::vector<float> chunk(data[c].begin() + static_cast<std::ptrdiff_t>(c * q),
                                     data[c].begin() + static_cast<std::ptrdiff_t>((c + 1) * q));
            store_elements(chunk, out + c * plan.chunk_bytes, plan.bf16);
          }
        }
      }
    }
    return outputs;
  }
  // What the program does, step by step (each step waits for the one before):
  // - step k (partner r xor b) moves b x Q bytes: on a switched fabric over
  //   one chip-to-chip hop striped over every NVLink (B = the chip's egress;
  //   its partner sends to it alone, so nothing contends); on a torus over
  //   the partner's route, whose busiest link carries `load` transfers of
  //   the line at once (torus_step: on a ring of 16 the steps to rank r xor 8
  //   put 8 routes on a link), so b x Q x load / W, plus hops x T_hop;
  // - a halving step then reduces its b x Q bytes tile by tile, one tile at a
  //   time: two loads from HBM (2 x tile at the HBM bandwidth) and a store (a
  //   tile), each waited for: 2 x L_hbm + 3 x tile / HBM bandwidth per tile;
  // - on a switched fabric each step's DMA also pays its store-and-forward
  //   through the switch (SwitchedHop::store_and_forward);
  // - one local copy (hbm_to_hbm) of chunk r: L_hbm + 2Q / HBM bandwidth.
  // Not in it: the VPU's add loop and the scalar work around the DMAs (a few
  // per cent of a tile's time).
  [[nodiscard]] CollectivePrediction predict(const CollectiveSpec& spec, const CollectivePlan& plan,
                                             const ici::Topology& topology, const ChipConfig& chip) const override {
    CollectivePrediction p;
    const std::uint64_t n = plan.group_size;
    const double q = static_cast<double>(plan.chunk_bytes);
    const bool switched = topology.switched();
    const SwitchedHop one = switched_hop(plan, topology, chip);
    const double bw = switched ? one.egress : chip.link_payload_rate();
    // A group over a fat tree's nodes: a step whose partner (member r XOR b)
    // shares r's node goes over NVLinks, the others over the NICs.
    const std::vector<std::uint64_t> nodes =
        switched && one.spans_nodes ? member_nodes(plan, topology) : std::vector<std::uint64_t>{};
    const SwitchedHop in_node = switched_hop_between(false, topology, chip);
    std::uint64_t node_steps = 0;
    const double hbm_bw = chip.hbm.bandwidth;
    const double hbm_latency = chip.hbm.latency_s;
    const double tile = static_cast<double>(reduce_tile_granules(plan.chunk_bytes / kGranule) * kGranule);
    double bandwidth = 0;
    double latency = 0;
    double forward = 0;
    std::uint64_t worst_load = 1;
    const bool reduce = plan.reduces();
    const bool gather = plan.op != Op::kReduceScatter;
    for (std::uint64_t b = 1; b < n; b *= 2) {
      const double bytes = static_cast<double>(b) * q;
      double load = 1;
      double hop = one.latency;
      double step_bw = bw;
      const SwitchedHop* step_hop = &one;
      if (!nodes.empty() && nodes[0] == nodes[b]) {
        hop = in_node.latency;
        step_bw = in_node.egress;
        step_hop = &in_node;
        ++node_steps;
      }
      if (!switched) {
        const TorusStep step = torus_step(plan, topology, b);
        load = static_cast<double>(step.load);
        hop = static_cast<double>(step.hops) * chip.ici.hop_latency_s;
        worst_load = std::max(worst_load, step.load);
      }
      const int phases = (reduce ? 1 : 0) + (gather ? 1 : 0);
      bandwidth += phases * bytes * load / step_bw;
      latency += phases * hop;
      // Switched: the step's one DMA through the switch, store-and-forward.
      if (switched) forward += phases * step_hop->store_and_forward(b * plan.chunk_bytes);
      if (reduce) {
        const double tiles = bytes / tile;
        bandwidth += tiles * 3 * tile / hbm_bw;
        latency += tiles * 2 * hbm_latency;
      }
    }
    bandwidth += 2 * q / hbm_bw;
    latency += hbm_latency;
    p.bandwidth_seconds = plan.axes.empty() ? 0 : bandwidth;
    p.latency_seconds = plan.axes.empty() ? 0 : latency + forward;
    p.seconds = p.bandwidth_seconds + p.latency_seconds;
    p.formula = fmt::format(
        "{} halving-doubling on {}: sum over steps of (bytes of the step x link load / B + partner's latency{}{}) + "
        "L_hbm + 2Q/H; V = {} B, N = {}, B = {:g} B/s{}, H = {:g} B/s, L_hbm = {:g} s{}{}",
        spec.op, topology.shape(), switched ? " + the step's store-and-forward through the switch" : "",
        reduce ? " + per tile of a halving step 2 L_hbm + 3 tile/H" : "", plan.bytes, n, bw,
        switched ? "" : fmt::format(" (link load up to {})", worst_load), hbm_bw, hbm_latency,
        reduce ? fmt::format(", tile = {:g} B", tile) : "",
        nodes.empty() ? ""
                      : fmt::format("; {} of the steps within a node (B_nvlink = {:g} B/s, its T_hop), the others "
                                    "across nodes (B, the NIC's T_hop)",
                                    node_steps, in_node.egress));
    return p;
  }
};

const CollectiveAlgorithmRegistrar kHalvingDoublingRegistrar{std::make_unique<HalvingDoublingAlgorithm>()};

}  // namespace

}  // namespace tpuemu::programs::halving_doubling_algorithm
