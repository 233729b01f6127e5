// Algorithm "tree": all-reduce on a double binary tree (NCCL's Tree inside
// one domain): the array's two halves each reduce up one of two binary trees
// over the group's ranks and come back down it, both trees at once, so a
// rank is a leaf in one tree where it is an inner node in the other (for
// most ranks). 2 x depth steps instead of a ring's 2(N-1): for small
// messages on many ranks.
//
// Trees. Tree 0 splits the ranks [lo, hi] at mid = (lo + hi + 1) / 2: mid is
// the root, [lo, mid-1] its first child's subtree, [mid+1, hi] its second's.
// Tree 1 is tree 0 mirrored: rank r sits where rank N-1-r sits in tree 0.
// Tree t reduces and broadcasts bytes [t V/2, (t+1) V/2).
//
// Schedule, in tiles of at most 1 MiB of a half (the fewest that divide it;
// 1 MiB, not 256 KiB: 1.5x faster at 16 and 256 MiB on 8 x H100), tile by tile and tree 0 before tree 1 in
// each tile: up, a leaf sends its input tile to its parent's receive slot; an
// inner node waits for its first child's tile, adds it to its own in VMEM,
// then the second child's, and sends the sum to its parent (the root stores
// it in its output). Down, after every tile went up: a rank waits for its
// parent's tile in its output and sends it on to its children's outputs.
// Tiles of one sender to one receiver arrive in order, so a per-child flag
// counts them.
//
// Summation order, per element of half t: sum(node) = add(add(own, sum(first
// child)), sum(second child)), a missing child skipped; every rank receives
// the root's sum. add as the ring family's (bf16 rounded at every step).
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>

#include "programs/collective_algorithm.hpp"
#include "programs/collective_emitter.hpp"
#include "programs/collective_reference.hpp"

// Each algorithm file has its own namespace: unity builds compile several of
// them as one translation unit.
namespace tpuemu::programs::tree_algorithm {

namespace {

using Op = CollectivePlan::Op;

constexpr std::uint64_t kGranule = kCollectiveGranule;
constexpr std::uint64_t kMaxTileBytes = 1024 * 1024;
constexpr std::uint64_t kMaxRanks = 1024;  // the program selects each rank's links rank by rank
constexpr int kAllocTiles = 0;
constexpr int kAllocFlags = 1;
// Flags: leaf sends, local DMAs, broadcast sends, then per tree t: up sends
// of an inner node (its VMEM sum may be overwritten once one has left),
// arrivals from child 0 and child 1 (adjacent: a child names its flag by its
// index), arrivals from the parent.
constexpr std::uint64_t kLeafSent = 0;
constexpr std::uint64_t kLocal = 1;
constexpr std::uint64_t kDownSent = 2;
constexpr std::uint64_t kTreeFlags0 = 3;
constexpr std::uint64_t kFlagsPerTree = 4;
constexpr std::uint64_t kFlagCount = kTreeFlags0 + 2 * kFlagsPerTree;
std::uint64_t f_up_sent(int t) {
  return kTreeFlags0 + kFlagsPerTree * t;
}
std::uint64_t f_child_in(int t) {
  return f_up_sent(t) + 1;
}
std::uint64_t f_parent_in(int t) {
  return f_up_sent(t) + 3;
}

// One rank's place in a tree: -1 where there is none.
struct TreeNode {
  std::int64_t parent = -1;
  std::int64_t child[2] = {-1, -1};
  int index_at_parent = 0;  // 0: the parent's first child, 1: its second
};

std::vector<TreeNode> build_tree(std::uint64_t n, int tree) {
  std::vector<TreeNode> nodes(n);
  const std::function<std::int64_t(std::int64_t, std::int64_t)> build = [&](std::int64_t lo,
                                                                            std::int64_t hi) -> std::int64_t {
    if (lo > hi) return -1;
    const std::int64_t mid = (lo + hi + 1) / 2;
    const std::int64_t kids[2] = {build(lo, mid - 1), build(mid + 1, hi)};
    int at = 0;
    for (const std::int64_t k : kids) {
      if (k < 0) continue;
      nodes[static_cast<std::size_t>(mid)].child[at] = k;
      nodes[static_cast<std::size_t>(k)].parent = mid;
      nodes[static_cast<std::size_t>(k)].index_at_parent = at;
      ++at;
    }
    return mid;
  };
  build(0, static_cast<std::int64_t>(n) - 1);
  if (tree == 0) return nodes;
  const auto mirror = [&](std::int64_t r) { return r < 0 ? r : static_cast<std::int64_t>(n) - 1 - r; };
  std::vector<TreeNode> mirrored(n);
  for (std::uint64_t r = 0; r < n; ++r) {
    const TreeNode& a = nodes[r];
    TreeNode& b = mirrored[n - 1 - r];
    b.parent = mirror(a.parent);
    b.child[0] = mirror(a.child[0]);
    b.child[1] = mirror(a.child[1]);
    b.index_at_parent = a.index_at_parent;
  }
  return mirrored;
}

// The tile of a half of `half_granules`: the fewest tiles that divide it
// of at most kMaxTileBytes and a quarter of VMEM (the 4 buffers), in whole
// 16 KiB add groups.
std::uint64_t tile_granules(std::uint64_t half_granules, const ChipConfig& chip) {
  const std::uint64_t cap = std::max<std::uint64_t>(
      kAddGroupBytes, std::min(kMaxTileBytes, chip.vmem.size_bytes / 4 / kAddGroupBytes * kAddGroupBytes));
  std::uint64_t tiles = (half_granules * kGranule + cap - 1) / cap;
  while (half_granules % tiles != 0) ++tiles;
  return half_granules / tiles;
}

std::uint64_t tree_depth(const std::vector<TreeNode>& nodes) {
  std::uint64_t depth = 0;
  for (std::size_t r = 0; r < nodes.size(); ++r) {
    std::uint64_t d = 0;
    for (std::int64_t p = nodes[r].parent; p >= 0; p = nodes[static_cast<std::size_t>(p)].parent) ++d;
    depth = std::max(depth, d);
  }
  return depth;
}

class TreeGen : CollectiveEmitter {
 public:
  TreeGen(const CollectiveSpec& spec, const CollectivePlan& plan, const ici::Topology& topology, const ChipConfig& chip)
      : CollectiveEmitter(chip, kAllocFlags), spec_(spec), plan_(plan), topo_(topology), chip_(chip) {
    n_ = plan.group_size;
    hg_ = plan.bytes / 2 / kGranule;
    tg_ = tile_granules(hg_, chip);
    tile_rows_ = (tg_ * kGranule + kAddGroupBytes - 1) / kAddGroupBytes * kAddGroupRows;
    for (int t = 0; t < 2; ++t) trees_[t] = build_tree(n_, t);
    if (4 * tile_rows_ * kCollectiveRowBytes > chip.vmem.size_bytes) {
      throw std::invalid_argument(fmt::format("collective tree {}: 4 tiles of {} bytes do not fit {}'s VMEM", spec.op,
                                              tg_ * kGranule, chip.name));
    }
  }

  std::string run() {
    header();
    prologue();
    const std::uint64_t tiles = hg_ / tg_;
    w_.comment(fmt::format("up: {} tiles of {} bytes per tree", tiles, tg_ * kGranule));
    tile_loop("up", [&](int t) { up_tile(t); });
    for (int t = 0; t < 2; ++t) {
      // The last up send of an inner node with a parent; a leaf's sends.
      if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", parent(t)), [&] {
        if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", child(t, 0)),
                    [&] { wait(flag(f_up_sent(t)), tg_); });
      });
    }
    w_.comment("down: the root's sums to every rank");
    tile_loop("down", [&](int t) { down_tile(t); });
    for (int t = 0; t < 2; ++t) {
      if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", parent(t)), [&] {
        if_register(fmt::format("%p1 = scmp.ge.s32.totalorder %{}, 0", child(t, 0)),
                    [&] { wait(flag(kLeafSent), hg_); });
      });
      for (int c = 0; c < 2; ++c) {
        if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", child(t, c)),
                    [&] { wait(flag(kDownSent), hg_); });
      }
    }
    w_.label("done");
    w_.bundle({});
    return w_.text();
  }

 private:
  // Registers: s3/s4/s5 operands in granules, s10 rank, s31 the group's
  // rank-0 chip; per tree t from s32 + 5t: parent, child 0 and child 1 as
  // chip-id offsets from s31 (-1: none), this rank's receive slot at its
  // parent (granules from the scratch base) and its child index; s11 the
  // tile's granule offset in the half, s12..s30 temporaries.
  static std::string parent(int t) { return fmt::format("s{}", 32 + 5 * t); }
  static std::string child(int t, int c) { return fmt::format("s{}", 33 + 5 * t + c); }
  static std::string slot_at_parent(int t) { return fmt::format("s{}", 35 + 5 * t); }
  static std::string index_at_parent(int t) { return fmt::format("s{}", 36 + 5 * t); }
  [[nodiscard]] std::uint64_t slot(int t, int c) const { return (2 * static_cast<std::uint64_t>(t) + c) * hg_; }
  [[nodiscard]] std::string vmem(int t, int which) const {
    const std::uint64_t off = (2 * static_cast<std::uint64_t>(t) + which) * tile_rows_;
    return off == 0 ? fmt::format("[#allocation{}]", kAllocTiles)
                    : fmt::format("[#allocation{} + $0x{:x}]", kAllocTiles, off);
  }

  void header() {
    const std::string dt = plan_.bf16 ? "bf16" : "f32";
    const CollectiveShapes shapes = collective_shapes(spec_, topo_);
    w_.raw(fmt::format(
        "// Generated by tpuemu (programs/collective_algorithms/tree.cpp) for {}: all-reduce tree {} of {} bytes over "
        "a group of {} chips of {} (two binary trees of depth {} and {}).",
        chip_.name, dt, plan_.bytes, n_, topo_.shape(), tree_depth(trees_[0]), tree_depth(trees_[1])));
    const std::uint64_t bytes = 4 * tile_rows_ * kCollectiveRowBytes;
    w_.raw(fmt::format("#allocation{} [shape = 'f32[{}]', space=vmem, size = 0x{:x}, tag = 'per tree: sum, received']",
                       kAllocTiles, bytes / 4, bytes));
    w_.raw(fmt::format("#allocation{} [shape = 's32[{}]', space=sflag, size = 0x{:x}, tag = 'sync flags']", kAllocFlags,
                       kFlagCount, kFlagCount * 4));
    operand_bindings(plan_.bf16, shapes);
  }

  // Chip-id offset of rank r from the group's rank-0 chip.
  [[nodiscard]] std::int64_t chip_offset(std::int64_t r) const {
    if (r < 0) return -1;
    std::int64_t off = 0;
    for (std::size_t a : plan_.axes) {
      const auto digit = static_cast<std::uint64_t>(r) / plan_.rank_stride[a] % topo_.length(a);
      off += static_cast<std::int64_t>(digit * topology_stride(topo_, a));
    }
    return off;
  }

  // Checks, operands, rank, and each tree's links, selected rank by rank.
  void prologue() {
    identity_checks(topo_);
    emit(S::kSalu, "%s3 = sshll.u32 %s0, 4");
    emit(S::kSalu, "%s4 = sshll.u32 %s1, 4");
    emit(S::kSalu, "%s5 = sshll.u32 %s2, 4");
    group_rank(plan_, topo_);
    for (int t = 0; t < 2; ++t) {
      for (const std::string& r : {parent(t), child(t, 0), child(t, 1), slot_at_parent(t), index_at_parent(t)}) {
        emit(S::kSalu, fmt::format("%{} = smov 0", r));
      }
    }
    for (std::uint64_t r = 0; r < n_; ++r) {
      emit(S::kSalu, fmt::format("%p6 = scmp.eq.s32.totalorder %s10, {}", r));
      for (int t = 0; t < 2; ++t) {
        const TreeNode& node = trees_[t][r];
        auto pick = [&](const std::string& reg, std::int64_t value) { sel(reg, "p6", llo_imm(value), "%" + reg); };
        pick(parent(t), chip_offset(node.parent));
        pick(child(t, 0), chip_offset(node.child[0]));
        pick(child(t, 1), chip_offset(node.child[1]));
        pick(slot_at_parent(t), static_cast<std::int64_t>(slot(t, node.index_at_parent)));
        pick(index_at_parent(t), node.index_at_parent);
      }
    }
    w_.flush();
  }

  // Runs `body` unless the predicate p1 that `compare` sets holds.
  template <class F>
  void if_register(const std::string& compare, F&& body) {
    emit(S::kSalu, compare);
    const std::string skip = label("skip");
    branch("%p1", skip);
    body();
    w_.label(skip);
  }

  // for s11 = 0, tg, 2 tg, ... < hg: body(tree 0); body(tree 1).
  template <class F>
  void tile_loop(const std::string& stem, F&& body) {
    emit(S::kSalu, "%s11 = smov 0");
    const std::string loop = label(stem);
    w_.label(loop);
    for (int t = 0; t < 2; ++t) body(t);
    add_imm("s11", "s11", static_cast<std::int64_t>(tg_));
    emit(S::kSalu, fmt::format("%p2 = scmp.lt.s32.totalorder %s11, {}", hg_));
    branch("%p2", loop);
  }

  // s12 = the tile's granule offset in the array (half t).
  void tile_offset(int t) {
    emit(S::kSalu, fmt::format("%s12 = sadd.s32 %s11, {}", static_cast<std::uint64_t>(t) * hg_));
  }

  // Up, one tile of tree t.
  void up_tile(int t) {
    w_.comment(fmt::format("tree {} up", t));
    tile_offset(t);
    const std::string leaf = label("leaf");
    const std::string end = label("up_end");
    emit(S::kSalu, fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", child(t, 0)));
    branch("%p1", leaf);
    // Inner node: its VMEM sum is free once the previous tile's send left.
    if_register("%p1 = scmp.eq.s32.totalorder %s11, 0", [&] {
      if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", parent(t)),
                  [&] { wait(flag(f_up_sent(t)), tg_); });
    });
    emit(S::kSalu, fmt::format("%s13 = scalar_lea.vmem {}, 0", vmem(t, 0)));
    emit(S::kSalu, "%s13 = sshll.u32 %s13, 4");
    emit(S::kSalu, fmt::format("%s14 = scalar_lea.vmem {}, 0", vmem(t, 1)));
    emit(S::kSalu, "%s14 = sshll.u32 %s14, 4");
    emit(S::kSalu, "%s15 = sadd.s32 %s3, %s12");
    emit(S::kDma, fmt::format("{} = dma.hbm_to_vmem [thread:$0] /*hbm=*/%s15, /*size_in_granules=*/{}, /*vmem=*/%s13, "
                              "/*dst_syncflagno=*/{}",
                              token(), tg_, flag(kLocal)));
    for (int c = 0; c < 2; ++c) {
      auto add_child = [&] {
        wait(flag(f_child_in(t) + c), tg_);
        emit(S::kSalu, fmt::format("%s16 = sadd.s32 %s5, {}", slot(t, c)));
        emit(S::kSalu, "%s16 = sadd.s32 %s16, %s11");
        emit(S::kDma, fmt::format("{} = dma.hbm_to_vmem [thread:$0] /*hbm=*/%s16, /*size_in_granules=*/{}, "
                                  "/*vmem=*/%s14, /*dst_syncflagno=*/{}",
                                  token(), tg_, flag(kLocal)));
        wait(flag(kLocal), c == 0 ? 2 * tg_ : tg_);
        emit(S::kSalu, fmt::format("%s42 = scalar_lea.vmem {}, 0", vmem(t, 0)));
        emit(S::kSalu, fmt::format("%s43 = scalar_lea.vmem {}, 0", vmem(t, 1)));
        scheduled_add_loop(tile_rows_ / kAddGroupRows, plan_.bf16);
      };
      if (c == 0) {
        add_child();
      } else {
        if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", child(t, 1)), add_child);
      }
    }
    const std::string root = label("root");
    emit(S::kSalu, fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", parent(t)));
    branch("%p1", root);
    send_up(t, "vmem_to_hbm", "%s13", flag(f_up_sent(t)));
    emit(S::kSalu, "%p1 = scmp.eq.s32.totalorder %s11, %s11");
    branch("%p1", end);
    w_.label(root);
    emit(S::kSalu, "%s15 = sadd.s32 %s4, %s12");
    emit(S::kDma, fmt::format("{} = dma.vmem_to_hbm [thread:$0] /*vmem=*/%s13, /*size_in_granules=*/{}, /*hbm=*/%s15, "
                              "/*dst_syncflagno=*/{}",
                              token(), tg_, flag(kLocal)));
    wait(flag(kLocal), tg_);
    emit(S::kSalu, "%p1 = scmp.eq.s32.totalorder %s11, %s11");
    branch("%p1", end);
    w_.label(leaf);
    emit(S::kSalu, "%s15 = sadd.s32 %s3, %s12");
    send_up(t, "hbm_to_hbm", "%s15", flag(kLeafSent));
    w_.label(end);
  }

  // The tile at `src` to this rank's receive slot at its parent, counted on
  // the parent's flag for this child.
  void send_up(int t, const std::string& kind, const std::string& src, const std::string& src_flag) {
    emit(S::kSalu, fmt::format("%s17 = sadd.s32 %s31, %{}", parent(t)));
    emit(S::kSalu, fmt::format("%s18 = sadd.s32 %s5, %{}", slot_at_parent(t)));
    emit(S::kSalu, "%s18 = sadd.s32 %s18, %s11");
    emit(S::kSalu, fmt::format("%s19 = scalar_lea.sflag {}, %{}", flag(f_child_in(t)), index_at_parent(t)));
    emit(S::kDma, fmt::format("{} = dma.remote.{} [thread:$0] /*src=*/{}, /*size_in_granules=*/{}, /*chip=*/%s17, "
                              "/*core=*/0, /*dst=*/%s18, /*src_syncflagno=*/{}, /*dst_syncflagno=*/%s19",
                              token(), kind, src, tg_, src_flag));
  }

  // Down, one tile of tree t: from the parent (the root has it), on to the children.
  void down_tile(int t) {
    w_.comment(fmt::format("tree {} down", t));
    tile_offset(t);
    if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", parent(t)),
                [&] { wait(flag(f_parent_in(t)), tg_); });
    emit(S::kSalu, "%s15 = sadd.s32 %s4, %s12");
    for (int c = 0; c < 2; ++c) {
      if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", child(t, c)), [&] {
        emit(S::kSalu, fmt::format("%s17 = sadd.s32 %s31, %{}", child(t, c)));
        emit(S::kDma, fmt::format("{} = dma.remote.hbm_to_hbm [thread:$0] /*src=*/%s15, /*size_in_granules=*/{}, "
                                  "/*chip=*/%s17, /*core=*/0, /*dst=*/%s15, /*src_syncflagno=*/{}, "
                                  "/*dst_syncflagno=*/{}",
                                  token(), tg_, flag(kDownSent), flag(f_parent_in(t))));
      });
    }
  }

  const CollectiveSpec& spec_;
  const CollectivePlan& plan_;
  const ici::Topology& topo_;
  const ChipConfig& chip_;
  std::uint64_t n_ = 1;
  std::uint64_t hg_ = 0;  // half the array, granules
  std::uint64_t tg_ = 1;  // tile, granules
  std::uint64_t tile_rows_ = 0;
  std::vector<TreeNode> trees_[2];
};

class TreeAlgorithm final : public CollectiveAlgorithm {
 public:
  [[nodiscard]] std::string_view name() const override { return "tree"; }
  [[nodiscard]] std::string_view summary() const override {
    return "all-reduce on a double binary tree (each half of the array up one tree and back down, both at once, "
           "2 x depth steps); sums own + first child + second child at every node";
  }
  [[nodiscard]] std::string refusal(Op op, const std::vector<std::size_t>& axes,
                                    const ici::Topology& topology) const override {
    if (op != Op::kAllReduce && op != Op::kAllToAll) {
      return "tree is an all-reduce algorithm (NCCL's Tree); use ring, bidir-ring or one-shot for a lone "
             "all-gather or reduce-scatter";
    }
    std::uint64_t n = 1;
    for (std::size_t a : axes) n *= topology.length(a);
    if (n < 2) return "tree needs a group of at least 2 ranks; this one has 1";
    if (n > kMaxRanks) return fmt::format("tree runs on at most {} ranks; this group has {}", kMaxRanks, n);
    return "";
  }
  [[nodiscard]] std::uint64_t directions() const override { return 2; }  // V splits into two halves
  [[nodiscard]] std::uint64_t scratch_bytes(const CollectivePlan& plan,
                                            const ici::Topology& /*topology*/) const override {
    return 2 * plan.bytes;  // per tree, a receive slot of V/2 per child
  }
  [[nodiscard]] std::string generate(const CollectiveSpec& spec, const CollectivePlan& plan,
                                     const ici::Topology& topology, const ChipConfig& chip) const override {
    return TreeGen(spec, plan, topology, chip).run();
  }
  [[nodiscard]] std::vector<std::vector<std::uint8_t>> reference(
      const CollectivePlan& plan, const ici::Topology& topology,
      const std::vector<std::vector<std::uint8_t>>& inputs) const override {
    using namespace collective_detail;
    std::vector<std::vector<std::uint8_t>> outputs(inputs.size(), std::vector<std::uint8_t>(plan.bytes));
    const std::uint64_t half = plan.bytes / 2;
    for (const std::vector<ChipId>& members : collective_groups(plan, topology)) {
      const std::uint64_t n = members.size();
      for (int t = 0; t < 2; ++t) {
        const std::vector<TreeNode> nodes = build_tree(n, t);
        const std::function<std::vector<float>(std::int64_t)> sum = [&](std::int64_t r) {
          std::vector<float> acc =
              load_elements(inputs[members[static_cast<std::size_t>(r)].value()].data() + t * half, half, plan.bf16);
          for (const std::int64_t c : nodes[static_cast<std::size_t>(r)].child) {
            if (c >= 0) accumulate(acc, sum(c), plan.bf16);
          }
          return acc;
        };
        std::int64_t root = 0;
        while (nodes[static_cast<std::size_t>(root)].parent >= 0) root = nodes[static_cast<std::size_t>(root)].parent;
        const std::vector<float> total = sum(root);
        for (const ChipId c : members) store_elements(total, outputs[c.value()].data() + t * half, plan.bf16);
      }
    }
    return outputs;
  }
  // Up then down each tree: 2 x depth chip-to-chip steps of T_hop plus a
  // tile's time on the link and an inner node's HBM round trips (its loads,
  // the root's store) per step, the pipeline's fill; every tile's round trips
  // on an inner node's core, both trees; a rank sends about 2V (V/2 up per
  // tree, V down in the tree where it is an inner node) through its egress B
  // (torus: one link, routes of several hops). Optimistic at large sizes: an
  // inner node's tiles go one at a time (README, "Switched fabrics").
  [[nodiscard]] CollectivePrediction predict(const CollectiveSpec& spec, const CollectivePlan& plan,
                                             const ici::Topology& topology, const ChipConfig& chip) const override {
    CollectivePrediction p;
    const std::uint64_t n = plan.group_size;
    const auto v = static_cast<double>(plan.bytes);
    double bw = chip.link_payload_rate();
    double hop = chip.ici.hop_latency_s;
    if (topology.switched()) {
      const SwitchedHop one = switched_hop(plan, topology, chip);
      bw = one.egress;
      hop = one.latency;
    }
    const auto depth = static_cast<double>(std::max(tree_depth(build_tree(n, 0)), tree_depth(build_tree(n, 1))));
    const double tile = static_cast<double>(tile_granules(plan.bytes / 2 / kGranule, chip) * kGranule);
    const double tiles = v / 2 / tile;
    const double hbm = chip.hbm.latency_s;
    p.latency_seconds = 2 * depth * (hop + tile / bw + 2 * hbm) + 2 * 2 * tiles * hbm;
    p.bandwidth_seconds = 2 * v / bw;
    p.seconds = p.latency_seconds + p.bandwidth_seconds;
    p.formula = fmt::format(
        "all-reduce tree on {}: 2*depth*(T_hop + tile/B + 2*L_hbm) + 4*tiles*L_hbm + 2V/B; V = {} B, N = {}, depth = "
        "{:g}, tile = {:g} B, tiles = {:g} per half, B = {:g} B/s, T_hop = {:g} s, L_hbm = {:g} s",
        topology.shape(), plan.bytes, n, depth, tile, tiles, bw, hop, hbm);
    (void)spec;
    return p;
  }
};

const CollectiveAlgorithmRegistrar kTreeRegistrar{std::make_unique<TreeAlgorithm>()};

}  // namespace

}  // namespace tpuemu::programs::tree_algorithm
