// Algorithm "tree": all-reduce on a double binary tree (NCCL's Tree inside
// one domain): the array's two halves each reduce up one of two binary trees
// over the group's ranks and come back down it, both trees at once, so a
// rank is a leaf in one tree where it is an inner node in the other (for
// most ranks). 2 x depth steps instead of a ring's 2(N-1): for small
// messages on many ranks.
//
// Trees: NCCL's double binary tree (build_tree): in tree 0 the odd ranks are
// leaves, tree 1 is tree 0 mirrored (an even group) or shifted by one (odd).
// Tree t reduces and broadcasts bytes [t V/2, (t+1) V/2).
//
// Schedule, in tiles of at most 1 MiB of a half (the fewest that divide it),
// software-pipelined as NCCL pipelines its chunks through a tree: iteration
// i of the up loop handles, in tree 0 then tree 1, tile i - kLag x height of
// that tree (a leaf tile i), and of the down loop tile i - kLag x depth, so
// what a rank waits for was sent kLag iterations before (kLag). Up: a leaf
// sends its input tile to its parent's receive slot (at most kWindow tiles
// in flight); an inner node loads its own tile and its first child's, adds,
// then the second child's, and sends the sum to its parent from one of two
// VMEM sums (so the send overlaps the next tile), the root stores it in its
// output. Down, after every tile went up: a rank waits for its parent's tile
// in its output and sends it on to its children's outputs (at most kWindow
// tiles in flight per child). Tiles of one sender to one receiver arrive in
// order, so a per-child flag counts them.
//
// Summation order, per element of half t: sum(node) = add(add(own, sum(first
// child)), sum(second child)), a missing child skipped; every rank receives
// the root's sum. add as the ring family's (bf16 rounded at every step).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <tuple>

#include "ici/routing.hpp"
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
// Flags: local DMAs, then per tree t: up sends of an inner node from its
// VMEM sum 0 and sum 1 (a sum may be overwritten once its send has left),
// arrivals from child 0 and child 1 (adjacent: a child names its flag by its
// index), arrivals from the parent, a leaf's up sends, the down sends to
// child 0 and to child 1.
constexpr std::uint64_t kLocal = 0;
constexpr std::uint64_t kTreeFlags0 = 1;
constexpr std::uint64_t kFlagsPerTree = 8;
constexpr std::uint64_t kFlagCount = kTreeFlags0 + 2 * kFlagsPerTree;
// Tiles a leaf's up stream and each down stream keep in flight: the next
// waits until the one `kWindow` tiles back has left. A stream's tiles then go
// out one after another, as NCCL's pipelined chunks do, instead of sharing the
// chip's egress round-robin and all arriving at the end (the first tile of a
// leaf that sent its 128 tiles at once arrived after all of them); two cover
// a hop's latency at the egress rate (3.4 us x 370.8 GB/s = 1.26 MB < 2 MiB).
constexpr std::uint64_t kWindow = 2;
// Software pipelining (TreeGen::tile_loop): on the way up a rank of height h
// in a tree handles, in iteration i of the loop, tile i - kLag h of that
// tree; on the way down a rank of depth d tile i - kLag d. What it waits for
// (its children's tile, its parent's) was then sent kLag iterations before,
// so a wait in one tree seldom holds up the other: in lockstep (every rank on
// tile i of both trees) a rank's two trees chained its neighbours into a
// round trip per tile (on 8 ranks down: 4 -> 2 -> 3 -> 5 -> 4, 37 us a tile).
constexpr std::uint64_t kLag = 2;
std::uint64_t f_up_sent(int t, int sum = 0) {
  return kTreeFlags0 + kFlagsPerTree * t + sum;
}
std::uint64_t f_child_in(int t) {
  return f_up_sent(t) + 2;
}
std::uint64_t f_parent_in(int t) {
  return f_up_sent(t) + 4;
}
std::uint64_t f_leaf_sent(int t) {
  return f_up_sent(t) + 5;
}
std::uint64_t f_down_sent(int t, int c) {
  return f_up_sent(t) + 6 + c;
}

// One rank's place in a tree: -1 where there is none.
struct TreeNode {
  std::int64_t parent = -1;
  std::int64_t child[2] = {-1, -1};
  int index_at_parent = 0;  // 0: the parent's first child, 1: its second
};

// NCCL's binary tree (src/graph/trees.cc, ncclGetBtree): rank r with lowest
// set bit b has parent (r ^ b) | 2b (r ^ b if that is past the group) and
// children r - b/2, r + b/2 (the second, while past the group, r + b/4,
// ...): odd ranks are leaves, rank 0 the root with the one child 2^k/2. Tree
// 1 (ncclGetDtree) is tree 0 mirrored (rank r where rank N-1-r sits) for an
// even group, shifted by one (rank r where r-1 sits) for an odd one, so every
// rank is an inner node in at most one of the two trees (an even group: even
// ranks in tree 0, odd ones in tree 1) and each sends about 2V in all.
std::vector<TreeNode> build_tree(std::uint64_t n, int tree) {
  const auto size = static_cast<std::int64_t>(n);
  std::vector<TreeNode> base(n);
  for (std::int64_t r = 0; r < size; ++r) {
    std::int64_t bit = 1;
    while (bit < size && (bit & r) == 0) bit <<= 1;
    std::int64_t down[2] = {-1, -1};
    if (r == 0) {
      down[1] = size > 1 ? bit >> 1 : -1;
    } else {
      std::int64_t lowbit = bit >> 1;
      down[0] = lowbit == 0 ? -1 : r - lowbit;
      down[1] = lowbit == 0 ? -1 : r + lowbit;
      while (down[1] >= size) {
        down[1] = lowbit == 0 ? -1 : r + lowbit;
        lowbit >>= 1;
      }
    }
    int at = 0;  // children packed in order: a node with one child has it first
    for (const std::int64_t c : down) {
      if (c < 0) continue;
      base[static_cast<std::size_t>(r)].child[at] = c;
      base[static_cast<std::size_t>(c)].parent = r;
      base[static_cast<std::size_t>(c)].index_at_parent = at;
      ++at;
    }
  }
  if (tree == 0) return base;
  // Tree 1: rank r plays base rank from(r); to() maps a base rank back.
  const bool mirror = n % 2 == 0;
  const auto from = [&](std::int64_t r) { return mirror ? size - 1 - r : (r - 1 + size) % size; };
  const auto to = [&](std::int64_t x) { return x < 0 ? x : (mirror ? size - 1 - x : (x + 1) % size); };
  std::vector<TreeNode> out(n);
  for (std::int64_t r = 0; r < size; ++r) {
    const TreeNode& a = base[static_cast<std::size_t>(from(r))];
    TreeNode& b = out[static_cast<std::size_t>(r)];
    b.parent = to(a.parent);
    b.child[0] = to(a.child[0]);
    b.child[1] = to(a.child[1]);
    b.index_at_parent = a.index_at_parent;
  }
  return out;
}

// The tile of a half of `half_granules`: the fewest tiles that divide it
// of at most kMaxTileBytes and a sixth of VMEM (the 6 buffers), in whole
// 16 KiB add groups.
std::uint64_t tile_granules(std::uint64_t half_granules, const ChipConfig& chip) {
  const std::uint64_t cap = std::max<std::uint64_t>(
      kAddGroupBytes, std::min(kMaxTileBytes, chip.vmem.size_bytes / 6 / kAddGroupBytes * kAddGroupBytes));
  std::uint64_t tiles = (half_granules * kGranule + cap - 1) / cap;
  while (half_granules % tiles != 0) ++tiles;
  return half_granules / tiles;
}

// A rank's height in its tree (a leaf 0; a node one more than its highest
// child) and its depth (the root 0; a child one more than its parent).
std::uint64_t node_height(const std::vector<TreeNode>& nodes, std::int64_t r) {
  std::uint64_t h = 0;
  for (const std::int64_t c : nodes[static_cast<std::size_t>(r)].child) {
    if (c >= 0) h = std::max(h, 1 + node_height(nodes, c));
  }
  return h;
}
std::uint64_t node_depth(const std::vector<TreeNode>& nodes, std::int64_t r) {
  std::uint64_t d = 0;
  for (std::int64_t p = nodes[static_cast<std::size_t>(r)].parent; p >= 0;
       p = nodes[static_cast<std::size_t>(p)].parent) {
    ++d;
  }
  return d;
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
    if (6 * tile_rows_ * kCollectiveRowBytes > chip.vmem.size_bytes) {
      throw std::invalid_argument(fmt::format("collective tree {}: 6 tiles of {} bytes do not fit {}'s VMEM", spec.op,
                                              tg_ * kGranule, chip.name));
    }
  }

  std::string run() {
    header();
    prologue();
    const std::uint64_t tiles = hg_ / tg_;
    w_.comment(fmt::format("up: {} tiles of {} bytes per tree", tiles, tg_ * kGranule));
    tile_loop("up", max_lag(true), [&](int t) {
      leaf_tile(t);
      inner_tile(t);
    });
    for (int t = 0; t < 2; ++t) {
      // The last up send of an inner node with a parent; a leaf's sends.
      if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", parent(t)), [&] {
        if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", child(t, 0)), [&] {
          for (int sum = 0; sum < 2 && static_cast<std::uint64_t>(sum) < tiles; ++sum) {
            wait(flag(f_up_sent(t, sum)), tg_);
          }
        });
      });
    }
    w_.comment("down: the root's sums to every rank");
    tile_loop("down", max_lag(false), [&](int t) { down_tile(t); });
    // The sends still in flight: the last kWindow tiles (or fewer) of each stream.
    const std::uint64_t last = std::min(tiles, kWindow) * tg_;
    for (int t = 0; t < 2; ++t) {
      if_register(fmt::format("%p1 = scmp.ge.s32.totalorder %{}, 0", child(t, 0)),
                  [&] { wait(flag(f_leaf_sent(t)), last); });
      for (int c = 0; c < 2; ++c) {
        if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", child(t, c)),
                    [&] { wait(flag(f_down_sent(t, c)), last); });
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
  // This rank's lags in tree t (granules): kLag x height x tile up, kLag x depth x tile down.
  static std::string up_lag(int t) { return fmt::format("s{}", 45 + t); }
  static std::string down_lag(int t) { return fmt::format("s{}", 47 + t); }
  // Which of tree t's two VMEM sums the next inner tile uses (0, 1).
  static std::string sum_parity(int t) { return fmt::format("s{}", 49 + t); }
  // The largest lag of any rank in either tree (granules).
  [[nodiscard]] std::uint64_t max_lag(bool up) const {
    std::uint64_t most = 0;
    for (int t = 0; t < 2; ++t) {
      for (std::uint64_t r = 0; r < n_; ++r) {
        const auto rank = static_cast<std::int64_t>(r);
        most = std::max(most, up ? node_height(trees_[t], rank) : node_depth(trees_[t], rank));
      }
    }
    return most * kLag * tg_;
  }
  [[nodiscard]] std::uint64_t slot(int t, int c) const { return (2 * static_cast<std::uint64_t>(t) + c) * hg_; }
  [[nodiscard]] std::string vmem(int t, int which) const {
    const std::uint64_t off = (3 * static_cast<std::uint64_t>(t) + which) * tile_rows_;
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
    const std::uint64_t bytes = 6 * tile_rows_ * kCollectiveRowBytes;
    w_.raw(fmt::format(
        "#allocation{} [shape = 'f32[{}]', space=vmem, size = 0x{:x}, tag = 'per tree: sum 0, sum 1, received']",
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
      for (const std::string& r : {parent(t), child(t, 0), child(t, 1), slot_at_parent(t), index_at_parent(t),
                                   up_lag(t), down_lag(t), sum_parity(t)}) {
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
        const auto rank = static_cast<std::int64_t>(r);
        pick(up_lag(t), static_cast<std::int64_t>(node_height(trees_[t], rank) * kLag * tg_));
        pick(down_lag(t), static_cast<std::int64_t>(node_depth(trees_[t], rank) * kLag * tg_));
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

  // Software pipelining: iteration i (s21 = i tg) of a loop does, in each
  // tree t, the tile i - lag (s11 = its granules in the half), where lag is
  // this rank's up_lag or down_lag in that tree (granules); iterations whose
  // tile is out of [0, tiles) skip the tree. body(tree 0); body(tree 1).
  template <class F>
  void tile_loop(const std::string& stem, std::uint64_t max_lag_granules, F&& body) {
    const bool up = stem == "up";
    emit(S::kSalu, "%s21 = smov 0");
    const std::string loop = label(stem);
    w_.label(loop);
    for (int t = 0; t < 2; ++t) {
      emit(S::kSalu, fmt::format("%s11 = ssub.s32 %s21, %{}", up ? up_lag(t) : down_lag(t)));
      const std::string skip = label("idle");
      emit(S::kSalu, "%p1 = scmp.lt.s32.totalorder %s11, 0");
      branch("%p1", skip);
      emit(S::kSalu, fmt::format("%p1 = scmp.ge.s32.totalorder %s11, {}", hg_));
      branch("%p1", skip);
      body(t);
      w_.label(skip);
    }
    add_imm("s21", "s21", static_cast<std::int64_t>(tg_));
    emit(S::kSalu, fmt::format("%p2 = scmp.lt.s32.totalorder %s21, {}", hg_ + max_lag_granules));
    branch("%p2", loop);
  }

  // s12 = the tile's granule offset in the array (half t).
  void tile_offset(int t) {
    emit(S::kSalu, fmt::format("%s12 = sadd.s32 %s11, {}", static_cast<std::uint64_t>(t) * hg_));
  }

  // Up, one tile of tree t where this rank is a leaf: its input tile to its
  // parent, once the one kWindow tiles back has left.
  void leaf_tile(int t) {
    w_.comment(fmt::format("tree {} up, a leaf", t));
    if_register(fmt::format("%p1 = scmp.ge.s32.totalorder %{}, 0", child(t, 0)), [&] {
      window_wait(f_leaf_sent(t));
      tile_offset(t);
      emit(S::kSalu, "%s15 = sadd.s32 %s3, %s12");
      send_up(t, "hbm_to_hbm", "%s15", flag(f_leaf_sent(t)));
    });
  }

  // Up, one tile of tree t where this rank is an inner node.
  void inner_tile(int t) {
    w_.comment(fmt::format("tree {} up, an inner node", t));
    const std::string end = label("up_end");
    emit(S::kSalu, fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", child(t, 0)));
    branch("%p1", end);
    tile_offset(t);
    // Inner node: sums alternate between two VMEM buffers (s22: the rows of
    // this tile's, by the parity in sum(t)), so a tile's send overlaps the
    // next tile's loads and adds; a buffer is free once the send from it two
    // tiles back has left (s23: its flag).
    emit(S::kSalu, fmt::format("%s22 = smul.u32 %{}, {}", sum_parity(t), tile_rows_));
    add_imm("s22", "s22", static_cast<std::int64_t>(3 * static_cast<std::uint64_t>(t) * tile_rows_));
    emit(S::kSalu, fmt::format("%s23 = scalar_lea.sflag {}, %{}", flag(f_up_sent(t)), sum_parity(t)));
    if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %s11, {}", 2 * tg_), [&] {
      if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %{}, 0", parent(t)), [&] { wait("%s23", tg_); });
    });
    emit(S::kSalu, fmt::format("%s13 = scalar_lea.vmem [#allocation{}], %s22", kAllocTiles));
    emit(S::kSalu, "%s13 = sshll.u32 %s13, 4");
    emit(S::kSalu, fmt::format("%s14 = scalar_lea.vmem {}, 0", vmem(t, 2)));
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
        emit(S::kSalu, fmt::format("%s42 = scalar_lea.vmem [#allocation{}], %s22", kAllocTiles));
        emit(S::kSalu, fmt::format("%s43 = scalar_lea.vmem {}, 0", vmem(t, 2)));
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
    send_up(t, "vmem_to_hbm", "%s13", "%s23");
    emit(S::kSalu, "%p1 = scmp.eq.s32.totalorder %s11, %s11");
    branch("%p1", end);
    w_.label(root);
    emit(S::kSalu, "%s15 = sadd.s32 %s4, %s12");
    emit(S::kDma, fmt::format("{} = dma.vmem_to_hbm [thread:$0] /*vmem=*/%s13, /*size_in_granules=*/{}, /*hbm=*/%s15, "
                              "/*dst_syncflagno=*/{}",
                              token(), tg_, flag(kLocal)));
    wait(flag(kLocal), tg_);
    w_.label(end);
    emit(S::kSalu, fmt::format("%{0} = sxor.u32 %{0}, 1", sum_parity(t)));
  }

  // From tile kWindow on: waits until the stream whose sends count on
  // `flag_index` has sent the tile kWindow back.
  void window_wait(std::uint64_t flag_index) {
    if_register(fmt::format("%p1 = scmp.lt.s32.totalorder %s11, {}", kWindow * tg_),
                [&] { wait(flag(flag_index), tg_); });
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
        window_wait(f_down_sent(t, c));
        emit(S::kSalu, fmt::format("%s17 = sadd.s32 %s31, %{}", child(t, c)));
        emit(S::kDma, fmt::format("{} = dma.remote.hbm_to_hbm [thread:$0] /*src=*/%s15, /*size_in_granules=*/{}, "
                                  "/*chip=*/%s17, /*core=*/0, /*dst=*/%s15, /*src_syncflagno=*/{}, "
                                  "/*dst_syncflagno=*/{}",
                                  token(), tg_, flag(f_down_sent(t, c)), flag(f_parent_in(t))));
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

// The largest sum of edge_cost(child, parent) (member indices) over the edges
// of a root-to-leaf path of either tree of n ranks.
template <class EdgeCost>
double longest_root_path(std::uint64_t n, const EdgeCost& edge_cost) {
  double longest = 0;
  for (int t = 0; t < 2; ++t) {
    const std::vector<TreeNode> tree = build_tree(n, t);
    for (std::uint64_t r = 0; r < n; ++r) {
      double sum = 0;
      for (auto at = static_cast<std::size_t>(r); tree[at].parent >= 0;
           at = static_cast<std::size_t>(tree[at].parent)) {
        sum += edge_cost(at, static_cast<std::size_t>(tree[at].parent));
      }
      longest = std::max(longest, sum);
    }
  }
  return longest;
}

// On a torus: the bytes the busiest link direction carries in each phase
// when every tree edge moves V/2 up and then V/2 down, along the network's
// dimension-order routes (ici/routing/dimension_order.cpp). The phases are
// apart in time (a rank's down loop starts after its up loop), so a link's
// up and down bytes never share it.
struct TreeLinkLoad {
  double up = 0;    // the busiest link direction's bytes while tiles go up
  double down = 0;  // and while they come down
};
TreeLinkLoad busiest_tree_link_bytes(std::uint64_t n, const std::vector<ChipId>& members, const ici::Topology& topology,
                                     double half) {
  const ici::RoutingPolicy& routes = ici::routing_policy("dimension-order");
  using LinkKey = std::tuple<std::uint64_t, std::uint8_t, std::int8_t>;  // (chip, axis, direction)
  std::map<LinkKey, double> load[2];                                     // up, down
  for (int t = 0; t < 2; ++t) {
    const std::vector<TreeNode> tree = build_tree(n, t);
    for (std::uint64_t r = 0; r < n; ++r) {
      if (tree[r].parent < 0) continue;
      const ChipId child = members[r];
      const ChipId parent = members[static_cast<std::size_t>(tree[r].parent)];
      for (const ici::Link& l : routes.route(topology, child, parent)) {
        load[0][{l.from.value(), l.axis, l.direction}] += half;
      }
      for (const ici::Link& l : routes.route(topology, parent, child)) {
        load[1][{l.from.value(), l.axis, l.direction}] += half;
      }
    }
  }
  auto busiest = [](const std::map<LinkKey, double>& phase) {
    double most = 0;
    for (const auto& [link, bytes] : phase) most = std::max(most, bytes);
    return most;
  };
  return {busiest(load[0]), busiest(load[1])};
}

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
  [[nodiscard]] NcclKernel nccl_kernel() const override { return NcclKernel::kTree; }
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
  // Up then down each tree, software-pipelined: the pipeline's fill, 2 x
  // depth chip-to-chip steps of T_hop plus a tile's time on the link and an
  // inner node's HBM round trips (its loads, the root's store) per step; then
  // every tile's two load round trips on the core of an inner node (each rank
  // is one in one tree: 2 x tiles x L_hbm), counted as if the sends did not
  // hide them (the two VMEM sums let them overlap, so at large sizes this is
  // an upper bound); a rank sends about 2V (V/2 up in each tree, V down in
  // the tree where it is an inner node) through its egress B (torus: one
  // link, routes of several hops: T_hop per link of the longest
  // root-to-leaf path instead of per level). A group over a fat tree's
  // nodes: a tree edge within a node is on NVLinks, one across nodes on the
  // two ranks' NICs; the bandwidth term is the busiest rank's busiest
  // direction of either (each edge carries V/2 up and V/2 down), and T_hop
  // the NIC's.
  [[nodiscard]] CollectivePrediction predict(const CollectiveSpec& spec, const CollectivePlan& plan,
                                             const ici::Topology& topology, const ChipConfig& chip) const override {
    CollectivePrediction p;
    const std::uint64_t n = plan.group_size;
    const auto v = static_cast<double>(plan.bytes);
    double bw = chip.link_payload_rate();
    double hop = chip.ici.hop_latency_s;
    bool spans_nodes = false;
    if (topology.switched()) {
      const SwitchedHop one = switched_hop(plan, topology, chip);
      bw = one.egress;
      hop = one.latency;
      spans_nodes = one.spans_nodes && !plan.axes.empty();
    }
    const auto depth = static_cast<double>(std::max(tree_depth(build_tree(n, 0)), tree_depth(build_tree(n, 1))));
    // On a torus a tree edge joins ranks that may be several links apart:
    // the hops of the longest root-to-leaf path (shortest routes) replace
    // depth hops (on a line of 16, 15 links where the depth is 4).
    double path = depth;
    const bool torus = !topology.switched() && !plan.axes.empty();
    const std::vector<ChipId> members =
        torus ? collective_detail::collective_groups(plan, topology).front() : std::vector<ChipId>{};
    if (torus) {
      path = longest_root_path(n, [&](std::size_t child, std::size_t parent) {
        return static_cast<double>(topology.hop_distance(members[child], members[parent]));
      });
    }
    const double tile = static_cast<double>(tile_granules(plan.bytes / 2 / kGranule, chip) * kGranule);
    const double tiles = v / 2 / tile;
    const double hbm = chip.hbm.latency_s;
    p.latency_seconds = 2 * (path * hop + depth * (tile / bw + 2 * hbm)) + 2 * tiles * hbm;
    p.bandwidth_seconds = 2 * v / bw;
    std::string links;
    if (torus) {
      // Edges whose routes share a link take turns on it.
      const TreeLinkLoad busiest = busiest_tree_link_bytes(n, members, topology, v / 2);
      if ((busiest.up + busiest.down) / bw > p.bandwidth_seconds) {
        p.bandwidth_seconds = (busiest.up + busiest.down) / bw;
        links = fmt::format(
            "; the bandwidth term is the busiest link direction's {:g} B up plus {:g} B down / B (V/2 each way per "
            "tree edge, dimension-order routes)",
            busiest.up, busiest.down);
      }
    }
    if (spans_nodes) {
      const std::vector<std::uint64_t> nodes = member_nodes(plan, topology);
      const SwitchedHop nvl = switched_hop_between(false, topology, chip);
      // The pipeline's fill: the longest root-to-leaf path, each edge its own T_hop and a tile's time on its link.
      const double fill = longest_root_path(n, [&](std::size_t child, std::size_t parent) {
        return nodes[child] != nodes[parent] ? hop + tile / bw : nvl.latency + tile / nvl.egress;
      });
      p.latency_seconds = 2 * (fill + depth * 2 * hbm) + 2 * tiles * hbm;
      // Per rank: bytes out and in over its NVLinks and its NIC, both trees.
      std::vector<std::array<double, 4>> load(n, {0, 0, 0, 0});  // out NVLink, in NVLink, out NIC, in NIC
      for (int t = 0; t < 2; ++t) {
        const std::vector<TreeNode> tree = build_tree(n, t);
        for (std::uint64_t r = 0; r < n; ++r) {
          const std::int64_t parent = tree[r].parent;
          if (parent < 0) continue;
          const auto up = static_cast<std::size_t>(parent);
          const std::size_t nic = nodes[r] != nodes[up] ? 2 : 0;
          for (const std::size_t end : {static_cast<std::size_t>(r), up}) {
            load[end][nic] += v / 2;      // up from r, down from the parent
            load[end][nic + 1] += v / 2;  // and the other way
          }
        }
      }
      const double nvlink = nvl.egress;
      double busiest = 0;
      for (const auto& l : load) busiest = std::max({busiest, l[0] / nvlink, l[1] / nvlink, l[2] / bw, l[3] / bw});
      p.bandwidth_seconds = busiest;
      links = fmt::format(
          "; across nodes path*T_hop + depth*tile/B is the longest root-to-leaf path's sum of T_hop + tile/B per "
          "edge, each edge within a node (B_nvlink = {:g} B/s, T_hop {:g} s) or across nodes (B, T_hop), and the "
          "bandwidth term the busiest rank's busiest direction, V/2 each way per tree edge",
          nvlink, nvl.latency);
    }
    p.seconds = p.latency_seconds + p.bandwidth_seconds;
    p.formula = fmt::format(
                    "all-reduce tree on {}: 2*(path*T_hop + depth*(tile/B + 2*L_hbm)) + 2*tiles*L_hbm + 2V/B; V = {} "
                    "B, N = {}, "
                    "depth = {:g}, path = {:g} hops (the longest root-to-leaf path{}), tile = {:g} B, tiles = {:g} per "
                    "half, B = "
                    "{:g} B/s, T_hop = {:g} s, L_hbm = {:g} s",
                    topology.shape(), plan.bytes, n, depth, path, topology.switched() ? "" : ", in links", tile, tiles,
                    bw, hop, hbm) +
                links;
    (void)spec;
    return p;
  }
};

const CollectiveAlgorithmRegistrar kTreeRegistrar{std::make_unique<TreeAlgorithm>()};

}  // namespace

}  // namespace tpuemu::programs::tree_algorithm
