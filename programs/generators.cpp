#include "programs/generators.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "common/types.hpp"
#include "programs/collectives.hpp"
#include "programs/llo_writer.hpp"

namespace tpuemu::programs {
namespace {

using S = SlotClass;

// Refuses operands whose total size (rows x columns x element bytes each)
// does not fit the chip's HBM, or 64 bits, before any text is generated.
struct OperandShape {
  std::uint64_t rows, cols, element_bytes;
};
void check_operands_fit_hbm(std::string_view what, std::initializer_list<OperandShape> operands,
                            const ChipConfig& chip) {
  std::uint64_t total = 0;
  bool overflow = false;
  for (const auto& o : operands) {
    std::uint64_t elements = 0;
    std::uint64_t bytes = 0;
    overflow = overflow || __builtin_mul_overflow(o.rows, o.cols, &elements) ||
               __builtin_mul_overflow(elements, o.element_bytes, &bytes) ||
               __builtin_add_overflow(total, bytes, &total);
  }
  if (overflow || total > chip.hbm.size_bytes) {
    throw std::invalid_argument(fmt::format("{}: the operands need {} bytes of HBM, the chip has {}", what,
                                            overflow ? std::string("more than 2^64") : std::to_string(total),
                                            chip.hbm.size_bytes));
  }
}

// The collective matmul's ring (generate_collective_matmul): T chunks of K
// shifted one step down a topology axis of `length` chips (linear ids
// `stride` apart).
struct ChunkRing {
  std::uint64_t chunks = 1;
  char axis = 'y';
  std::uint64_t length = 1, stride = 1;
  bool folded = false;  // the axis's ring is folded (programs::folded_ring_axis)
};

// Matmul generator state: the fixed register plan and VMEM layout of one program.
// A core split (generators.hpp, "Core split"): the whole matmul's M and N,
// and how the program's share (MatmulGen's spec) is cut from it.
struct CorePlan {
  std::uint64_t cores = 1;
  CoreSplit how = CoreSplit::kNone;
  std::uint64_t m = 0, n = 0;  // the whole C
};

// Split rows (MatmulGen::split_rows): the parts (1, 2 or 4) a column block
// of `tiles` tiles with `row_pairs` row pairs splits its rows into so that
// every one of the chip's mxu.count MXUs multiplies: 2 or 4 when that many
// copies of the block fill the MXUs and divide its row pairs, not
// accumulating, and 32 vregs (part j's LHS in v(24 + 2j), v(25 + 2j)).
std::uint64_t split_row_parts(std::uint64_t tiles, std::uint64_t row_pairs, bool accumulate, const ChipConfig& chip) {
  if (accumulate || chip.vpu.vregs < 32 || tiles == 0) return 1;
  for (const std::uint64_t parts : {2, 4}) {
    if (parts * tiles == chip.mxu.count && row_pairs % parts == 0) return parts;
  }
  return 1;
}

class MatmulGen {
 public:
  MatmulGen(const MatmulSpec& spec, const ChipConfig& chip, const ChunkRing& ring = {}, const CorePlan& split = {})
      : s_(spec), chip_(chip), w_(chip), cr_(ring), split_(split) {
    if (split_.how == CoreSplit::kNone) split_ = CorePlan{1, CoreSplit::kNone, spec.m, spec.n};
    plan();
  }

  std::string run() {
    header();
    if (chunked()) return run_chunked();
    const std::uint64_t full_blocks = nt_ / wfull_;
    const std::uint64_t tail = nt_ % wfull_;
    if (row_blocks_ > 1) {
      w_.comment(fmt::format(
          "=== row blocks 0..{}: {} rows of A and C each (see choose_row_blocks) ===", row_blocks_ - 1, g_ * 8));
      w_.op(S::kSalu, "%s59 = smov 0", {}, {"s59"});
      w_.label("rblock_loop");
    }
    if (full_blocks > 0) {
      w_.comment(fmt::format("=== column blocks 0..{}: {} MXUs each, {} output columns per block ===", full_blocks - 1,
                             wfull_, wfull_ * 128));
      w_.op(S::kSalu, "%s3 = smov 0", {}, {"s3"});
      w_.label("nblock_loop");
      nblock(wfull_, /*runtime_nb=*/true, 0);
      w_.op(S::kSalu, "%s3 = sadd.s32 %s3, 1", {"s3"}, {"s3"});
      w_.op(S::kSalu, fmt::format("%p5 = scmp.lt.s32.totalorder %s3, {}", full_blocks), {"s3"}, {"p5"});
      w_.op(S::kBranch, "sbr.rel (%p5) target = nblock_loop", {"p5"}, {});
      w_.flush();
    }
    if (row_blocks_ > 1) {
      // The row block's C went out at the end of its column block (reading s2): the next one's C follows it.
      w_.op(S::kSalu, fmt::format("%s2 = sadd.s32 %s2, {}", c_row_block_rows()), {"s2"}, {"s2"});
      w_.op(S::kSalu, "%s59 = sadd.s32 %s59, 1", {"s59"}, {"s59"});
      w_.op(S::kSalu, fmt::format("%p5 = scmp.lt.s32.totalorder %s59, {}", row_blocks_), {"s59"}, {"p5"});
      w_.op(S::kBranch, "sbr.rel (%p5) target = rblock_loop", {"p5"}, {});
      w_.flush();
    }
    if (tail > 0) {
      w_.comment(fmt::format("=== last column block {}: {} MXU{} ===", full_blocks, tail, tail == 1 ? "" : "s"));
      w_.op(S::kSalu, fmt::format("%s3 = smov {}", full_blocks), {}, {"s3"});
      nblock(tail, false, full_blocks);
    }
    w_.comment("=== wait for the last output DMAs, then leave ===");
    // s18 holds the buffer of the last column block, s17 that of the one before (always a full block).
    const std::uint64_t full_amount = g_ * wfull_ * c_gr_;
    const std::uint64_t last_amount = tail > 0 ? g_ * tail * c_gr_ : full_amount;
    w_.op(S::kSync, fmt::format("%{} = dma.done.wait (%p8) %s19, {}", next_token(), full_amount), {"p8", "s19"}, {});
    w_.op(S::kSync, fmt::format("%{} = dma.done.wait (%p9) %s20, {}", next_token(), last_amount), {"p9", "s20"}, {});
    // Leave the flags at 0, as every step of a chain must (the next program,
    // e.g. a collective after a matmul, starts from zeroed flags).
    w_.op(S::kSync, fmt::format("%{} = vsyncadd (%p8) %s19, {}", next_token(), negated_immediate(full_amount)),
          {"p8", "s19"}, {});
    w_.op(S::kSync, fmt::format("%{} = vsyncadd (%p9) %s20, {}", next_token(), negated_immediate(last_amount)),
          {"p9", "s20"}, {});
    w_.flush();
    core_barrier(/*exit=*/true);
    return w_.text();
  }

 private:
  // Allocation ids.
  static constexpr int kBufA = 0, kBufB = 2, kAcc = 4, kFlags = 6, kStage = 7, kZero = 8, kShift = 9, kBarrier = 10;

  // Collective matmul (generate_collective_matmul): the segments (chunk t in
  // s54, column block nb in s3) in order t-major; each multiplies the chunk's
  // k-blocks into column block nb's own accumulator, which the last chunk's
  // segment DMAs to C.
  bool chunked() const { return cr_.chunks > 1; }
  std::uint64_t column_blocks() const { return nt_ / wfull_; }
  std::uint64_t shift_granules() const { return g_ * ktc_ * tile_gr_; }  // one chunk of A
  std::uint64_t acc_rows() const { return align(acc_bytes_) / 512; }

  std::string run_chunked() {
    const std::uint64_t blocks = column_blocks();
    const std::uint64_t acc_stride = 2 * wfull_ * 8;
    w_.comment(fmt::format("=== {} chunks x {} column blocks of {} MXUs: {} k-blocks each ===", cr_.chunks, blocks,
                           wfull_, ktc_));
    // The pipeline registers, once: the pops of iteration s8 - D go to s7,
    // in the accumulator s17 .. s32 (s18 = the first, s20 = the end of the
    // last); chunk_pointer() moves them on.
    w_.op(S::kSalu, fmt::format("%s18 = smov [#allocation{}]", kAcc), {}, {"s18"});
    w_.op(S::kSalu, "%s17 = sadd.s32 %s18, 0", {"s18"}, {"s17"});
    w_.op(S::kSalu, fmt::format("%s20 = sadd.s32 %s18, {}", blocks * acc_rows()), {"s18"}, {"s20"});
    w_.op(S::kSalu, fmt::format("%s32 = sadd.s32 %s18, {}", g2_ * acc_stride), {"s18"}, {"s32"});
    w_.op(S::kSalu, fmt::format("%s7 = sadd.s32 %s18, {}", negated_immediate(d_ * acc_stride)), {"s18"}, {"s7"});
    w_.op(S::kSalu, "%s8 = smov 0", {}, {"s8"});
    w_.op(S::kSalu, "%s63 = smov 0", {}, {"s63"});
    w_.op(S::kSalu, "%s57 = smov 0", {}, {"s57"});
    w_.op(S::kSalu, "%s3 = smov 0", {}, {"s3"});
    w_.op(S::kSalu, "%s54 = smov 0", {}, {"s54"});
    w_.label("segment_loop");
    segment(wfull_);
    // Next column block; after the last, the next chunk.
    w_.op(S::kSalu, "%s3 = sadd.s32 %s3, 1", {"s3"}, {"s3"});
    w_.op(S::kSalu, fmt::format("%p5 = scmp.eq.s32.totalorder %s3, {}", blocks), {"s3"}, {"p5"});
    w_.op(S::kSalu, "%s3 = scalar_select /*predicate=*/%p5, /*on_true=*/0, /*on_false=*/%s3", {"p5", "s3"}, {"s3"});
    w_.op(S::kSalu, "%s40 = sadd.s32 %s54, 1", {"s54"}, {"s40"});
    w_.op(S::kSalu, "%s54 = scalar_select /*predicate=*/%p5, /*on_true=*/%s40, /*on_false=*/%s54", {"p5", "s40", "s54"},
          {"s54"});
    w_.op(S::kSalu, fmt::format("%p5 = scmp.lt.s32.totalorder %s54, {}", cr_.chunks), {"s54"}, {"p5"});
    w_.op(S::kBranch, "sbr.rel (%p5) target = segment_loop", {"p5"}, {});
    w_.flush();
    drain(wfull_);
    w_.comment("the last column block's accumulator -> C");
    w_.op(S::kSalu, fmt::format("%s30 = smov {}", blocks - 1), {}, {"s30"});
    w_.op(S::kSalu, "%p9 = scmp.eq.s32.totalorder %s0, %s0", {"s0"}, {"p9"});
    output_block(wfull_);
    w_.flush();
    w_.comment("=== wait for C's column blocks and for the sends to have left, then leave (flags at 0) ===");
    const std::uint64_t c_total = g_ * nt_ * 128;
    const std::uint64_t sent = (cr_.chunks - 1) * shift_granules();
    w_.op(S::kSync, fmt::format("%{} = dma.done.wait %s19, {}", next_token(), c_total), {"s19"}, {});
    w_.op(S::kSync, fmt::format("%{} = vsyncadd %s19, {}", next_token(), negated_immediate(c_total)), {"s19"}, {});
    w_.op(S::kSync, fmt::format("%{} = dma.done.wait [#allocation{}], {}", next_token(), kShift, sent), {}, {});
    w_.op(S::kSync, fmt::format("%{} = vsyncadd [#allocation{}], {}", next_token(), kShift, negated_immediate(sent)),
          {}, {});
    w_.flush();
    return w_.text();
  }

  // One segment: chunk s54's k-blocks into column block s3's accumulator
  // (the pipeline carries on from the segment before: no drain). Then the
  // segment before's accumulator, whose last pops are done by now (a segment
  // has at least D iterations), goes to C if it was the last chunk's.
  void segment(std::uint64_t w) {
    w_.op(S::kSalu, fmt::format("%s4 = smul.u32 {}, %s54", ktc_), {"s54"}, {"s4"});
    w_.op(S::kSalu, fmt::format("%s58 = sadd.s32 %s4, {}", ktc_), {"s4"}, {"s58"});
    kblock(w, 16, ktc_ > 1, false, false);
    if (ktc_ > 1) {
      w_.comment("the chunk's other k-blocks");
      w_.op(S::kSalu, "%s4 = sadd.s32 %s4, 1", {"s4"}, {"s4"});
      const std::string loop = fmt::format("kblock_loop_{}", label_++);
      w_.label(loop);
      kblock(w, 16, true, false, /*runtime=*/true);
      w_.op(S::kSalu, "%s4 = sadd.s32 %s4, 1", {"s4"}, {"s4"});
      w_.op(S::kSalu, "%p4 = scmp.lt.s32.totalorder %s4, %s58", {"s4", "s58"}, {"p4"});
      w_.op(S::kBranch, fmt::format("sbr.rel (%p4) target = {}", loop), {"p4"}, {});
      w_.flush();
    }
    w_.comment("the last chunk: the segment before's accumulator -> C");
    w_.op(S::kSalu, fmt::format("%p9 = scmp.eq.s32.totalorder %s54, {}", cr_.chunks - 1), {"s54"}, {"p9"});
    w_.op(S::kSalu, "%p15 = scmp.ge.s32.totalorder %s3, 1", {"s3"}, {"p15"});
    w_.op(S::kSalu, "%p9 = pnand %p9, %p15", {"p9", "p15"}, {"p9"});
    w_.op(S::kSalu, "%p9 = pneg %p9", {"p9"}, {"p9"});
    w_.op(S::kSalu, fmt::format("%s30 = sadd.s32 %s3, {}", negated_immediate(1)), {"s3"}, {"s30"});
    output_block(w);
    w_.flush();
  }

  // Column block s30's accumulator to C, if p9, through the flag in s19.
  void output_block(std::uint64_t w) {
    w_.op(S::kSalu, "%s21 = sshll.u32 %s2, 4", {"s2"}, {"s21"});
    w_.op(S::kSalu, fmt::format("%s22 = smul.u32 {}, %s30", wfull_ * 128), {"s30"}, {"s22"});
    w_.op(S::kSalu, "%s21 = sadd.s32 %s21, %s22", {"s21", "s22"}, {"s21"});
    w_.op(S::kSalu, fmt::format("%s23 = smul.u32 {}, %s30", acc_rows()), {"s30"}, {"s23"});
    w_.op(S::kSalu, "%s23 = sadd.s32 %s23, %s18", {"s23", "s18"}, {"s23"});
    w_.op(S::kSalu, "%s23 = sshll.u32 %s23, 4", {"s23"}, {"s23"});
    w_.op(S::kDma,
          fmt::format("%{} = dma.vmem_to_hbm.strided [thread:$0] (%p9) /*vmem=*/%s23, /*size_in_granules=*/{}, "
                      "/*hbm=*/%s21, /*dst_syncflagno=*/%s19, /*block_granules=*/{}, /*hbm_stride=*/{}",
                      next_token(), g_ * w * 128, w * 128, nt_ * 128),
          {"p9", "s23", "s21", "s19"}, {});
  }

  // The ring's sends: the neighbour one step down the axis (s59), this core
  // (s60), chunk 0 sent; s61 = the HBM address (granules) of the next chunk to
  // forward. s53 = the issue index (s38) of chunk 1's first k-block, s55 = A's
  // offset for the issue cursor's chunk, s56 = the end of its k-range.
  void chunk_ring_start() {
    const std::uint64_t n = shift_granules();
    w_.comment(fmt::format("ring: send chunk 0 ({} granules) to the chip one step down {} ({} chips)", n, cr_.axis,
                           cr_.length));
    w_.op(S::kSalu, fmt::format("%s62 = sid.{}", cr_.axis), {}, {"s62"});
    w_.op(S::kSalu, "%s63 = sid.chip", {}, {"s63"});
    if (cr_.folded) {
      // One ring position back on the folded ring (length - 1 on).
      for (const ScalarOp& op :
           folded_ring_neighbour("s62", "s63", "s59", static_cast<std::uint32_t>(cr_.length),
                                 static_cast<std::uint32_t>(cr_.length - 1), cr_.stride, "s60", "s61", "p6")) {
        w_.op(S::kSalu, op.text, op.reads, op.writes);
      }
    } else {
      w_.op(S::kSalu, "%p6 = scmp.eq.s32.totalorder %s62, 0", {"s62"}, {"p6"});
      w_.op(S::kSalu, fmt::format("%s60 = sadd.s32 %s63, {}", (cr_.length - 1) * cr_.stride), {"s63"}, {"s60"});
      w_.op(S::kSalu, fmt::format("%s59 = ssub.s32 %s63, {}", cr_.stride), {"s63"}, {"s59"});
      w_.op(S::kSalu, "%s59 = scalar_select %p6, %s60, %s59", {"p6", "s60", "s59"}, {"s59"});
    }
    w_.op(S::kSalu, "%s60 = sid.core", {}, {"s60"});
    w_.op(S::kSalu, "%s61 = sshll.u32 %s0, 4", {"s0"}, {"s61"});
    w_.op(S::kSalu, fmt::format("%s62 = sadd.s32 %s61, {}", n), {"s61"}, {"s62"});
    send_chunk("");
    w_.op(S::kSalu, "%s61 = sadd.s32 %s62, 0", {"s62"}, {"s61"});
    w_.op(S::kSalu, fmt::format("%s53 = smov {}", column_blocks() * ktc_), {}, {"s53"});
    w_.op(S::kSalu, "%s55 = smov 0", {}, {"s55"});
    w_.op(S::kSalu, fmt::format("%s56 = smov {}", ktc_), {}, {"s56"});
    w_.flush();
  }

  // One remote DMA: the chunk at s61 to s62 on chip s59, core s60.
  void send_chunk(const std::string& guard) {
    std::vector<std::string> reads{"s61", "s62", "s59", "s60"};
    if (!guard.empty()) reads.push_back(guard.substr(1));
    w_.op(S::kDma,
          fmt::format("%{} = dma.remote.hbm_to_hbm [thread:$0]{} /*src=*/%s61, /*size_in_granules=*/{}, /*chip=*/%s59, "
                      "/*core=*/%s60, /*dst=*/%s62, /*src_syncflagno=*/[#allocation{}], "
                      "/*dst_syncflagno=*/[#allocation{} + $0x1]",
                      next_token(), guard.empty() ? "" : " (" + guard + ")", shift_granules(), kShift, kShift),
          reads, {});
  }

  // Before the ring issues the first k-block of chunk t >= 1 (issue index s38
  // = s53): wait for the chunk to have arrived (its flag back to 0), forward
  // it unless it is the last, and move s53 / s61 on.
  void chunk_arrival() {
    const std::uint64_t n = shift_granules();
    const std::uint64_t per_chunk = column_blocks() * ktc_;
    w_.op(S::kSalu, "%p6 = scmp.eq.s32.totalorder %s38, %s53", {"s38", "s53"}, {"p6"});
    w_.op(S::kSalu, "%p6 = pnand %p6, %p3", {"p6", "p3"}, {"p6"});
    w_.op(S::kSalu, "%p6 = pneg %p6", {"p6"}, {"p6"});
    w_.op(S::kSalu, fmt::format("%p15 = scmp.lt.s32.totalorder %s38, {}", (cr_.chunks - 1) * per_chunk), {"s38"},
          {"p15"});
    w_.op(S::kSalu, "%p15 = pnand %p15, %p6", {"p15", "p6"}, {"p15"});
    w_.op(S::kSalu, "%p15 = pneg %p15", {"p15"}, {"p15"});
    w_.op(S::kSalu, fmt::format("%s62 = sadd.s32 %s61, {}", n), {"s61"}, {"s62"});
    w_.op(S::kSync, fmt::format("%{} = dma.done.wait (%p6) [#allocation{} + $0x1], {}", next_token(), kShift, n),
          {"p6"}, {});
    w_.op(S::kSync,
          fmt::format("%{} = vsyncadd (%p6) [#allocation{} + $0x1], {}", next_token(), kShift, negated_immediate(n)),
          {"p6"}, {});
    send_chunk("%p15");
    w_.op(S::kSalu, fmt::format("%s40 = sadd.s32 %s53, {}", per_chunk), {"s53"}, {"s40"});
    w_.op(S::kSalu, "%s53 = scalar_select /*predicate=*/%p6, /*on_true=*/%s40, /*on_false=*/%s53", {"p6", "s40", "s53"},
          {"s53"});
    w_.op(S::kSalu, "%s61 = scalar_select /*predicate=*/%p6, /*on_true=*/%s62, /*on_false=*/%s61", {"p6", "s62", "s61"},
          {"s61"});
  }

  void plan() {
    if (s_.m == 0 || s_.k == 0 || s_.n == 0) throw std::invalid_argument("matmul: M, K and N must be positive");
    if (s_.dtype != "bf16" && s_.dtype != "f32") throw std::invalid_argument("matmul: --dtype must be bf16 or f32");
    bf16_ = s_.dtype == "bf16";
    if (s_.out_dtype != "bf16" && s_.out_dtype != "f32") {
      throw std::invalid_argument("matmul: the output dtype must be bf16 or f32");
    }
    out_bf16_ = s_.out_dtype == "bf16";
    c_gr_ = out_bf16_ ? 64 : 128;
    if (out_bf16_ && (s_.accumulate || chunked() || s_.m % 16 != 0)) {
      throw std::invalid_argument(fmt::format(
          "matmul: a bf16 C needs M a multiple of 16 (M = {}) and neither accumulate nor a collective matmul", s_.m));
    }
    check_operands_fit_hbm("matmul",
                           {{split_.m, s_.k, bf16_ ? 2U : 4U},
                            {s_.k, split_.n, bf16_ ? 2U : 4U},
                            {split_.m, split_.n, out_bf16_ ? 2U : 4U}},
                           chip_);
    tile_bytes_ = bf16_ ? 2048 : 4096;
    tile_gr_ = tile_bytes_ / 32;
    g_ = ceil_div(s_.m, 8);
    g2_ = ceil_div(g_, 2);
    kt_ = ceil_div(s_.k, 128);
    nt_ = ceil_div(s_.n, 128);
    ldn_ = split_.how == CoreSplit::kColumns ? ceil_div(split_.n, 128) : nt_;  // C's and B's row of tiles
    k8_ = ceil_div(s_.k, 8);
    wfull_ = std::min<std::uint64_t>(chip_.mxu.count, nt_);
    a_block_tiles_ = kt_;
    if (s_.a_column_blocks == 0) throw std::invalid_argument("matmul: a_column_blocks must be positive");
    if (s_.a_column_blocks > 1) {
      a_block_tiles_ = s_.k / s_.a_column_blocks / 128;
      if (s_.k % (s_.a_column_blocks * 128) != 0 || (a_block_tiles_ & (a_block_tiles_ - 1)) != 0) {
        throw std::invalid_argument(fmt::format(
            "matmul: A as {} column blocks of K = {}: each block must be a power-of-two number of 128-column tiles",
            s_.a_column_blocks, s_.k));
      }
      while ((1ULL << a_block_shift_) < a_block_tiles_) ++a_block_shift_;
    }
    if (chip_.mxu.size != 128) throw std::invalid_argument("matmul: the generator targets 128x128 MXUs");
    latency_ = chip_.latency(LatencyClass::kMxuMatmul).value();
    // Pops of g1 sit 5 bundles into an iteration, its multiply at bundle 10:
    // the pop of iteration t-D must come after the result is ready.
    d_ = ceil_div(latency_ + 5 + 1, 16);
    choose_row_blocks();
    if (chunked()) {
      ktc_ = kt_ / cr_.chunks;
      a_block_tiles_ = ktc_;  // A as T column blocks [M, KC]
      if (!bf16_ || s_.k % (cr_.chunks * 128) != 0) {
        throw std::invalid_argument(fmt::format(
            "collective matmul: bf16 chunks of whole 128-column tiles (K = {} in {} chunks)", s_.k, cr_.chunks));
      }
      if (nt_ % wfull_ != 0) {
        throw std::invalid_argument(
            fmt::format("collective matmul: N = {} must be whole column blocks of {} columns", s_.n, wfull_ * 128));
      }
      if (ktc_ * g2_ < d_) {
        throw std::invalid_argument(fmt::format(
            "collective matmul: a chunk's {} row pairs x {} k-blocks are fewer than the MXU pipeline's {} iterations "
            "(M or the chunk too small)",
            g2_, ktc_, d_));
      }
    }
    if (2 * d_ > chip_.mxu.result_fifo_depth) {
      throw std::invalid_argument(
          fmt::format("matmul: the MXU latency ({} cycles) needs {} results in flight per MXU, more than "
                      "mxu.result_fifo_depth ({})",
                      latency_, 2 * d_, chip_.mxu.result_fifo_depth));
    }
    size_buffers();
    plan_depth();
    iters_ = g2_;  // nblock() sets it per column block (split_rows)
    if (row_blocks_ > 1 && !ring()) {
      if (s_.row_blocks != 0) {
        throw std::invalid_argument(fmt::format(
            "matmul: {} row blocks need a prefetch ring of 3 k-blocks, which VMEM, the DMA queue or the sync flags of "
            "{} do not allow here",
            row_blocks_, chip_.name));
      }
      set_row_blocks(1);  // the default's choice: none, then
      size_buffers();
      plan_depth();
      iters_ = g2_;
    }
  }

  void size_buffers() {
    a_buf_bytes_ = (g2_ * 2 + 1) * tile_bytes_;
    b_buf_bytes_ = (16 * wfull_ + 2) * tile_bytes_;
    acc_bytes_ = ceil_div(g2_ * 2 * wfull_, 8) * 8 * 4096;  // whole 8-tile groups for the zero loop
    const std::uint64_t vmem = 2 * (align(a_buf_bytes_) + align(b_buf_bytes_) + align(acc_bytes_));
    if (vmem > chip_.vmem.size_bytes) {
      throw std::invalid_argument(
          fmt::format("matmul: needs {} bytes of VMEM for M = {}, the chip has {}", vmem, s_.m, chip_.vmem.size_bytes));
    }
  }

  // Prefetch depth P (k-blocks whose buffers exist at once; P - 1 are in
  // flight while one computes). A k-block's DMAs take the HBM latency plus
  // its bytes over the HBM bandwidth; a k-block is consumed every
  // T = max(its bytes / bandwidth, its row loop's 16 G2 cycles), so P - 1 =
  // ceil((latency + bytes / bandwidth) / T) blocks ahead keep HBM streaming.
  // Bounded by the DMA queue (two DMAs per k-block, two output DMAs), by
  // VMEM and by the number of k-blocks. P <= 2 keeps the double-buffered schedule (register swaps, no ring
  // arithmetic); P >= 3 is the ring schedule (ring_prepare / ring_fire / ring_consume).
  void plan_depth() {
    depth_ = s_.double_buffer ? 2 : 1;
    if (chunked()) {
      plan_chunked_depth();
      return;
    }
    if (!s_.double_buffer || chip_.hbm.bandwidth <= 0 || chip_.clock_hz <= 0) return;
    const double block_bytes = static_cast<double>((16 * wfull_ + g_) * tile_bytes_);
    const double transfer = block_bytes / chip_.hbm.bandwidth;
    // A block of a half or a quarter of the MXUs runs that share of the row pairs' iterations (split_rows).
    const double compute = static_cast<double>(16 * g2_ / split_rows(wfull_)) / chip_.clock_hz;
    const double period = std::max(transfer, compute);
    compute_bound_ = compute >= transfer;
    const auto ahead = static_cast<std::uint64_t>(std::ceil((chip_.hbm.latency_s + transfer) / period - 1e-9));
    std::uint64_t depth = ahead + 1;
    // Row blocks run on the ring schedule only (its issue cursor moves A's base on).
    if (row_blocks_ > 1) depth = std::max<std::uint64_t>(depth, 3);
    if (chip_.dma.max_in_flight >= 4) depth = std::min<std::uint64_t>(depth, (chip_.dma.max_in_flight - 2) / 2 + 1);
    const std::uint64_t slot = align(a_buf_bytes_) + align(b_buf_bytes_);
    const std::uint64_t fixed = (s_.accumulate ? 3 : 2) * align(acc_bytes_);  // + the staging buffer
    depth = std::min<std::uint64_t>(depth, (chip_.vmem.size_bytes - fixed) / slot);
    // 2P + 2 flags, below the two a ring shift keeps at the top of the flag space.
    if (chip_.sflag.count >= 8) depth = std::min<std::uint64_t>(depth, (chip_.sflag.count - 4) / 2);
    // No more slots than the program has k-blocks.
    depth = std::min<std::uint64_t>(depth, kt_ * ceil_div(nt_, wfull_) * row_blocks_);
    if (depth > 2) depth_ = depth;
    // A resident: with more than one column block, A's KT k-blocks stay in
    // VMEM from column block 0 on (read from HBM once, not once per column
    // block) when they fit beside the B ring.
    const std::uint64_t blocks = ceil_div(nt_, wfull_);
    resident_ = ring() && blocks > 1 &&
                kt_ * align(a_buf_bytes_) + depth_ * align(b_buf_bytes_) + fixed <= chip_.vmem.size_bytes;
  }
  // Collective matmul: the ring schedule always (P >= 3), A resident (one
  // slot per k-block of K), one accumulator per column block, the zero
  // block; one DMA slot fewer for the ring (a send is in flight).
  void plan_chunked_depth() {
    compute_bound_ = false;
    std::uint64_t depth = 3;
    if (chip_.hbm.bandwidth > 0 && chip_.clock_hz > 0) {
      const double block_bytes = static_cast<double>((16 * wfull_ + g_) * tile_bytes_);
      const double transfer = block_bytes / chip_.hbm.bandwidth;
      const double compute = static_cast<double>(16 * g2_) / chip_.clock_hz;
      compute_bound_ = compute >= transfer;
      const auto ahead =
          static_cast<std::uint64_t>(std::ceil((chip_.hbm.latency_s + transfer) / std::max(transfer, compute) - 1e-9));
      depth = std::max<std::uint64_t>(depth, ahead + 1);
    }
    if (chip_.dma.max_in_flight >= 5) depth = std::min<std::uint64_t>(depth, (chip_.dma.max_in_flight - 3) / 2 + 1);
    if (chip_.sflag.count >= 8) depth = std::min<std::uint64_t>(depth, (chip_.sflag.count - 4) / 2);
    const std::uint64_t fixed = column_blocks() * align(acc_bytes_) + 2 * wfull_ * 4096 + kt_ * align(a_buf_bytes_);
    const std::uint64_t slot = align(b_buf_bytes_);
    if (fixed + 3 * slot > chip_.vmem.size_bytes) {
      throw std::invalid_argument(fmt::format(
          "collective matmul: needs {} bytes of VMEM (the accumulators, A and a ring of 3), the chip has {}",
          fixed + 3 * slot, chip_.vmem.size_bytes));
    }
    depth_ = std::max<std::uint64_t>(3, std::min<std::uint64_t>(depth, (chip_.vmem.size_bytes - fixed) / slot));
    resident_ = true;
  }
  bool ring() const { return depth_ > 2; }
  // Accumulating in the ring schedule: C's next column block streams into a
  // staging buffer while this one computes (see stage_next).
  bool staged() const { return ring() && s_.accumulate && chip_.branch_delay_slots <= 8; }
  // Ring schedule, not accumulating: the accumulator is never zeroed. The
  // pops of a column block's first k-block load the tiles they add to from a
  // zeroed block (one iteration's rows, zeroed once) instead of the
  // accumulator, so the sums are the same (+0.0 + partial) and the zero loop
  // (G2 x 2w tile stores per column block) is gone. s37 is the pops' load
  // base (the zero block or s7), p10 says the pops belong to k-block 0.
  bool fresh() const { return ring() && !s_.accumulate; }
  // Fresh and a k-block computes for at least its transfer: each k-block
  // prepares the next one's DMAs in its weight pushes' free scalar slots and
  // fires them first thing in the next k-block (ring_prepare / ring_fire),
  // which takes the address arithmetic off the MXU's path. HBM-bound programs
  // (and accumulating ones) issue at the start of each k-block as before:
  // they have time to spare there, and issuing earlier measured slower for
  // them (more DMAs sharing HBM at once).
  bool early() const { return fresh() && compute_bound_; }

  // Row blocks (MatmulSpec::row_blocks): R > 1 cuts A and C into R blocks of
  // M / R rows, each a whole pass over K of the one column block, so that
  // block r's C leaves while block r + 1 computes (one column block has no
  // next block to hide its output behind). B is read once per row block.
  // Sets row_blocks_ and g_ / g2_ (row tiles of one block).
  void choose_row_blocks() {
    core_g_ = g_;
    if (s_.row_blocks == 0) {
      set_row_blocks(auto_row_blocks());
      return;
    }
    if (s_.row_blocks > 1) {
      if (const std::string why = row_blocks_refusal(s_.row_blocks); !why.empty()) {
        throw std::invalid_argument(fmt::format("matmul: {} row blocks need {}", s_.row_blocks, why));
      }
    }
    set_row_blocks(s_.row_blocks);
  }
  void set_row_blocks(std::uint64_t r) {
    row_blocks_ = r;
    g_ = core_g_ / r;
    g2_ = ceil_div(g_, 2);
  }
  // Why this program cannot take r > 1 row blocks ("": it can).
  std::string row_blocks_refusal(std::uint64_t r) const {
    if (chunked() || s_.accumulate || s_.a_column_blocks > 1) {
      return "neither a collective matmul, accumulate nor A in column blocks";
    }
    if (nt_ > wfull_) return fmt::format("one column block (N at most {} columns)", wfull_ * 128);
    if (!s_.double_buffer) return "the prefetch ring (double buffering)";
    if (core_g_ % r != 0 || (out_bf16_ && (core_g_ / r) % 2 != 0)) {
      return fmt::format("M's {} row tiles of 8 in {} equal blocks{}", core_g_, r,
                         out_bf16_ ? " of an even number (bf16 C)" : "");
    }
    if (chip_.dma.max_in_flight < 6 || chip_.sflag.count < 10) {
      return "a DMA queue of 6 and 10 sync flags (a prefetch ring of 3)";
    }
    return "";
  }
  // Row blocks by default: the R in {1, 2, 4} this program can take with the
  // least estimated time, in cycles,
  //   max(compute + (R - 1) x (32 KT + 200), (A + R B + C) / bandwidth) + C / (R x bandwidth)
  // where compute is KT x 16 cycles per row pair of the core, the HBM
  // bandwidth is the chip's over the cores that share it, and C / (R x
  // bandwidth) is the last block's store, which nothing hides. The per-block
  // cost 32 KT + 200 (a block's own pipeline fill and drain, weight pushes
  // and first k-block wait) was fitted to 120 shapes (M 512..16384, K 768..8192,
  // N 256 and 512, bf16 and f32 C, v5e and v5p split over both cores) run
  // with R = 1, 2 and 4: this choice's time was within 3.1 % of the fastest of
  // the three on every one of them; after split rows, on 30 N = 256 shapes,
  // within 5.9 % (geomean 0.3 %) (docs/workloads.md, "Row blocks").
  std::uint64_t auto_row_blocks() const {
    if (chip_.hbm.bandwidth <= 0 || chip_.clock_hz <= 0) return 1;
    const double in_bytes = static_cast<double>(tile_bytes_) / 1024.0;
    const double out_bytes = out_bf16_ ? 2.0 : 4.0;
    const double rows = static_cast<double>(core_g_ * 8);
    const double k = static_cast<double>(k8_ * 8);
    const double n = static_cast<double>(nt_ * 128);
    const double a = rows * k * in_bytes, b = k * n * in_bytes, c = rows * n * out_bytes;
    const double cycles_per_byte = chip_.clock_hz * static_cast<double>(split_.cores) / chip_.hbm.bandwidth;
    // A block of a half or a quarter of the MXUs splits its rows over all of them (split_rows).
    const std::uint64_t pairs = ceil_div(core_g_, 2);
    const auto parts = static_cast<double>(split_row_parts(nt_, pairs, s_.accumulate, chip_));
    const double compute = static_cast<double>(kt_ * 16 * pairs) / parts;
    const auto estimate = [&](double r) {
      const double blocks = compute + (r - 1) * static_cast<double>(32 * kt_ + 200);
      return std::max(blocks, (a + r * b + c) * cycles_per_byte) + c / r * cycles_per_byte;
    };
    std::uint64_t best = 1;
    for (const std::uint64_t r : {2, 4}) {
      if (row_blocks_refusal(r).empty() && estimate(static_cast<double>(r)) < estimate(static_cast<double>(best))) {
        best = r;
      }
    }
    return best;
  }
  // Split rows: a column block of w tiles where 2 w or 4 w == mxu.count
  // uses all the MXUs: MXU j w + m multiplies row pair t + j G2/parts of tile
  // m while MXU m multiplies t, so the block's row loop runs G2/parts
  // iterations. Each element's K order is unchanged (the same bits). Not in
  // the collective matmul; the rest as split_row_parts says. Returns the
  // parts (1, 2 or 4).
  std::uint64_t split_rows(std::uint64_t w) const {
    return chunked() ? 1 : split_row_parts(w, g2_, s_.accumulate, chip_);
  }

  // C's rows (512-byte units, as s2 counts them) of one row block.
  std::uint64_t c_row_block_rows() const { return g_ * ldn_ * c_gr_ * 32 / 512; }

  static std::uint64_t align(std::uint64_t v) { return ceil_div(v, 4096) * 4096; }
  std::uint64_t kr8(std::uint64_t kb) const { return std::min<std::uint64_t>(16, k8_ - kb * 16); }
  bool last_partial() const { return kr8(kt_ - 1) < 16; }
  std::uint32_t next_token() { return token_++; }

  void header() {
    w_.raw(fmt::format("// Generated by `tpuemu gen matmul --m {} --k {} --n {} --dtype {}{}{}{}{}` for {}.", split_.m,
                       s_.k, split_.n, s_.dtype, out_bf16_ ? " --out-dtype bf16" : "",
                       s_.double_buffer ? "" : " --no-double-buffer", split_.cores > 1 ? " --split-cores" : "",
                       s_.row_blocks != 0 ? fmt::format(" --row-blocks {}", s_.row_blocks) : "", chip_.name));
    if (s_.a_column_blocks > 1) {
      w_.raw(fmt::format("// A in HBM as {} column blocks [{}, {}] one after another (MatmulSpec::a_column_blocks).",
                         s_.a_column_blocks, s_.m, s_.k / s_.a_column_blocks));
    }
    if (s_.accumulate) w_.raw("// Accumulates: C = C + A @ B (MatmulSpec::accumulate).");
    if (row_blocks_ > 1) {
      w_.raw(
          fmt::format("// In {} row blocks of {} rows (MatmulSpec::row_blocks): block r's C is stored while r + 1 "
                      "computes; B is read once per block.",
                      row_blocks_, g_ * 8));
    }
    if (split_.cores > 1) {
      w_.raw(fmt::format(
          "// Split over the chip's {} TensorCores (MatmulSpec::split_cores): core c computes {} of C[{},{}], "
          "a {}x{}x{} matmul; barriers over the cores on entry and exit (programs/generators.hpp, \"Core split\").",
          split_.cores,
          split_.how == CoreSplit::kColumns ? fmt::format("columns [c {0}, (c+1) {0})", s_.n)
                                            : fmt::format("rows [c {0}, (c+1) {0})", s_.m),
          split_.m, split_.n, s_.m, s_.k, s_.n));
    }
    if (chunked()) {
      w_.raw(fmt::format(
          "// Collective matmul (generate_collective_matmul): A as {} chunks [{}, {}] shifted one step down {} while "
          "they multiply; chunk-major, every column block's accumulator resident in VMEM.",
          cr_.chunks, s_.m, s_.k / cr_.chunks, cr_.axis));
    }
    w_.raw("// C (f32) = A @ B, weight-stationary on the MXUs; see programs/generators.hpp for the schedule");
    w_.raw("// and the accumulation order. Operands: 0 = A, 1 = B (inputs), 2 = C (output), tiled layouts in HBM.");
    w_.raw(
        fmt::format("// {} row tiles of A/C ({} row pairs), {} k-blocks, {} column tiles; pops trail multiplies by {} "
                    "iterations.",
                    g_, g2_, kt_, nt_, d_));
    if (ring()) {
      w_.raw(fmt::format("// Prefetch ring of {} k-blocks ({} in flight while one computes): see plan_depth().", depth_,
                         depth_ - 1));
      const std::uint64_t a_slots = resident_ ? kt_ : depth_;
      w_.raw(
          fmt::format("#allocation{} [shape = 'u8[{}]', space=vmem, size = 0x{:x}, tag = 'A column blocks, {} of {} "
                      "slots']",
                      kBufA, a_slots * align(a_buf_bytes_), a_slots * align(a_buf_bytes_),
                      resident_ ? "resident: one per k-block" : "ring", a_slots));
      w_.raw(fmt::format(
          "#allocation{} [shape = 'u8[{}]', space=vmem, size = 0x{:x}, tag = 'B weight blocks, ring of {} slots']",
          kBufB, depth_ * align(b_buf_bytes_), depth_ * align(b_buf_bytes_), depth_));
    } else {
      for (int p = 0; p < 2; ++p) {
        w_.raw(fmt::format(
            "#allocation{} [shape = 'u8[{}]', space=vmem, size = 0x{:x}, tag = 'A column block, buffer {}']", kBufA + p,
            a_buf_bytes_, a_buf_bytes_, p));
      }
      for (int p = 0; p < 2; ++p) {
        w_.raw(fmt::format(
            "#allocation{} [shape = 'u8[{}]', space=vmem, size = 0x{:x}, tag = 'B weight block, buffer {}']", kBufB + p,
            b_buf_bytes_, b_buf_bytes_, p));
      }
    }
    if (chunked()) {
      w_.raw(fmt::format(
          "#allocation{} [shape = 'u8[{}]', space=vmem, size = 0x{:x}, tag = 'accumulators: one per column block "
          "({} of f32[{},{}]), resident across the chunks']",
          kAcc, column_blocks() * align(acc_bytes_), column_blocks() * align(acc_bytes_), column_blocks(), g2_ * 16,
          wfull_ * 128));
    } else {
      for (int p = 0; p < 2; ++p) {
        w_.raw(fmt::format("#allocation{} [shape = 'f32[{},{}]', space=vmem, size = 0x{:x}, tag = 'accumulator {}']",
                           kAcc + p, g2_ * 16, wfull_ * 128, acc_bytes_, p));
      }
    }
    if (fresh()) {
      w_.raw(fmt::format(
          "#allocation{} [shape = 'f32[16,{}]', space=vmem, size = 0x{:x}, tag = 'zeros: what the first k-block "
          "adds to']",
          kZero, wfull_ * 128, 2 * wfull_ * 4096, 2 * wfull_ * 4096));
    }
    if (ring()) {
      w_.raw(fmt::format(
          "#allocation{} [shape = 's32[{}]', space=sflag, size = 0x{:x}{}, tag = 'flags: A0..A{} B0..B{} C0 C1{}']",
          kFlags, flags(), 4 * flags(), chunked() || split_.cores > 1 ? ", offset = 0x0" : "", depth_ - 1, depth_ - 1,
          staged() ? " stage" : ""));
      if (staged()) {
        w_.raw(fmt::format(
            "#allocation{} [shape = 'f32[{},{}]', space=vmem, size = 0x{:x}, tag = 'staging: C of the next column "
            "block']",
            kStage, g2_ * 16, wfull_ * 128, acc_bytes_));
      }
    } else {
      w_.raw(
          fmt::format("#allocation{} [shape = 's32[6]', space=sflag, size = 0x18{}, tag = 'flags: A0 A1 B0 B1 C0 C1']",
                      kFlags, split_.cores > 1 ? ", offset = 0x0" : ""));
    }
    if (chunked()) {  // after the others: an allocation with an offset does not move them
      w_.raw(fmt::format(
          "#allocation{} [shape = 's32[2]{{0}}', space=sflag, size = 0x8, offset = 0x{:x}, tag = 'ring shift: sent, "
          "arrived']",
          kShift, (chip_.sflag.count - 2) * 4));
    }
    if (split_.cores > 1) {  // after the others, as the ring shift's
      w_.raw(fmt::format(
          "#allocation{} [shape = 's32[2]{{0}}', space=sflag, size = 0x8, offset = 0x{:x}, tag = 'core barriers: "
          "entry, exit']",
          kBarrier, core_barrier_flag(chip_, false) * 4));
    }
    const std::string in_dtype = s_.dtype;
    w_.bundle(
        {fmt::format("%s0 = inlined_call_operand.hbm [shape: {}[{},{}], index: 0, kind: input, shape index: {{}}]",
                     in_dtype, split_.m, s_.k),
         fmt::format("%s1 = inlined_call_operand.hbm [shape: {}[{},{}], index: 1, kind: input, shape index: {{}}]",
                     in_dtype, s_.k, split_.n),
         fmt::format("%s2 = inlined_call_operand.hbm [shape: {}[{},{}], index: 2, kind: output, shape index: {{}}]",
                     s_.out_dtype, split_.m, split_.n)},
        "operand bindings");
    if (split_.cores > 1) core_share();
    for (std::uint64_t f = 0; f < flags(); ++f) {
      w_.op(S::kSync, fmt::format("%{} = vsyncpa [#allocation{} + $0x{:x}], 0", next_token(), kFlags, f), {}, {});
    }
    if (ring()) {
      // Output flags C0 C1 follow the ring's; the ring's registers are set per k-block.
      w_.op(S::kSalu, fmt::format("%s17 = smov [#allocation{}]", kAcc), {}, {"s17"});
      if (!chunked()) w_.op(S::kSalu, fmt::format("%s18 = smov [#allocation{}]", kAcc + 1), {}, {"s18"});
      w_.op(S::kSalu, fmt::format("%s19 = smov [#allocation{} + $0x{:x}]", kFlags, 2 * depth_), {}, {"s19"});
      w_.op(S::kSalu, fmt::format("%s20 = smov [#allocation{} + $0x{:x}]", kFlags, 2 * depth_ + 1), {}, {"s20"});
      w_.op(S::kSalu, "%p8 = scmp.ne.s32.totalorder %s0, %s0", {"s0"}, {"p8"});
      w_.op(S::kSalu, "%p9 = scmp.ne.s32.totalorder %s0, %s0", {"s0"}, {"p9"});
      w_.flush();
      if (chunked()) chunk_ring_start();
      ring_prologue();
      if (fresh()) {  // after the first DMAs, which it would only delay
        w_.op(S::kSalu, fmt::format("%s48 = smov [#allocation{}]", kZero), {}, {"s48"});
        w_.op(S::kValu, "%v0 = vmov 0", {}, {"v0"});
        for (std::uint64_t t = 0; t < 2 * wfull_; ++t) {
          w_.op(S::kStore,
                fmt::format("%{} = vst [vmem:[%s48{}] sm:$0xff] /*vst_source=*/%v0", next_token(),
                            t == 0 ? std::string() : fmt::format(" + $0x{:x}", t * 8)),
                {"s48", "v0"}, {});
        }
        w_.flush();
      }
      return;
    }
    // Buffer registers: current/next A and B buffers and their flags, accumulator buffers.
    w_.op(S::kSalu, fmt::format("%s9 = smov [#allocation{}]", kBufA), {}, {"s9"});
    w_.op(S::kSalu, fmt::format("%s10 = smov [#allocation{}]", kBufA + 1), {}, {"s10"});
    w_.op(S::kSalu, fmt::format("%s11 = smov [#allocation{}]", kBufB), {}, {"s11"});
    w_.op(S::kSalu, fmt::format("%s12 = smov [#allocation{}]", kBufB + 1), {}, {"s12"});
    w_.op(S::kSalu, fmt::format("%s13 = smov [#allocation{}]", kFlags), {}, {"s13"});
    w_.op(S::kSalu, fmt::format("%s14 = smov [#allocation{} + $0x1]", kFlags), {}, {"s14"});
    w_.op(S::kSalu, fmt::format("%s15 = smov [#allocation{} + $0x2]", kFlags), {}, {"s15"});
    w_.op(S::kSalu, fmt::format("%s16 = smov [#allocation{} + $0x3]", kFlags), {}, {"s16"});
    w_.op(S::kSalu, fmt::format("%s17 = smov [#allocation{}]", kAcc), {}, {"s17"});
    w_.op(S::kSalu, fmt::format("%s18 = smov [#allocation{}]", kAcc + 1), {}, {"s18"});
    w_.op(S::kSalu, fmt::format("%s19 = smov [#allocation{} + $0x4]", kFlags), {}, {"s19"});
    w_.op(S::kSalu, fmt::format("%s20 = smov [#allocation{} + $0x5]", kFlags), {}, {"s20"});
    // p8/p9: an output DMA is pending on accumulator buffer 0/1 (none yet).
    w_.op(S::kSalu, "%p8 = scmp.ne.s32.totalorder %s0, %s0", {"s0"}, {"p8"});
    w_.op(S::kSalu, "%p9 = scmp.ne.s32.totalorder %s0, %s0", {"s0"}, {"p9"});
    w_.flush();
  }

  // Core split: moves the operand registers to this core's share (A's rows
  // or B's columns, and C's), then the entry barrier. s21..s23 and p1 are
  // free until the schedule sets them. Operand registers count 512-byte rows.
  void core_share() {
    w_.comment(fmt::format("core split: this core's share of C, then wait for the chip's other core{}",
                           split_.cores > 2 ? "s" : ""));
    w_.op(S::kSalu, "%s21 = sid.core", {}, {"s21"});
    const bool columns = split_.how == CoreSplit::kColumns;
    // Whole tiles: rows of tiles of A (rows split) or tiles of B's rows (columns split), and of C.
    const std::uint64_t in_rows = columns ? nt_ * tile_bytes_ / 512 : core_g_ * kt_ * tile_bytes_ / 512;
    const std::uint64_t c_rows = columns ? nt_ * c_gr_ * 32 / 512 : core_g_ * nt_ * c_gr_ * 32 / 512;
    const std::string in = columns ? "s1" : "s0";
    w_.op(S::kSalu, fmt::format("%s22 = smul.u32 {}, %s21", in_rows), {"s21"}, {"s22"});
    w_.op(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %s22", in), {in, "s22"}, {in});
    w_.op(S::kSalu, fmt::format("%s23 = smul.u32 {}, %s21", c_rows), {"s21"}, {"s23"});
    w_.op(S::kSalu, "%s2 = sadd.s32 %s2, %s23", {"s2", "s23"}, {"s2"});
    w_.flush();
    core_barrier(/*exit=*/false);
  }

  // A barrier over the chip's cores (generators.hpp, "Core split"): +1 to
  // every other core's flag, then wait for cores - 1 on this core's and take
  // them off. Uses s21, s22 and p1.
  void core_barrier(bool exit) {
    if (split_.cores <= 1) return;
    w_.comment(fmt::format("core barrier ({}): every core of the chip gets here before any goes on",
                           exit ? "exit: the whole C is in HBM" : "entry"));
    const std::string flag = fmt::format("[#allocation{}{}]", kBarrier, exit ? " + $0x1" : "");
    w_.op(S::kSalu, "%s21 = sid.core", {}, {"s21"});
    w_.op(S::kSalu, "%s22 = sid.chip", {}, {"s22"});
    w_.flush();
    for (std::uint64_t c = 0; c < split_.cores; ++c) {
      w_.op(S::kSalu, fmt::format("%p1 = scmp.ne.s32.totalorder %s21, {}", c), {"s21"}, {"p1"});
      w_.op(S::kSync,
            fmt::format("%{} = vsyncadd.remote (%p1) /*chip=*/%s22, /*core=*/{}, /*flag=*/{}, /*value=*/1",
                        next_token(), c, flag),
            {"p1", "s22"}, {});
    }
    w_.op(S::kSync, fmt::format("%{} = dma.done.wait {}, {}", next_token(), flag, split_.cores - 1), {}, {});
    w_.op(S::kSync, fmt::format("%{} = vsyncadd {}, {}", next_token(), flag, negated_immediate(split_.cores - 1)), {},
          {});
    w_.flush();
  }

  // Swaps two registers' values with three xors (no temporary needed).
  void swap(const std::string& a, const std::string& b) {
    w_.op(S::kSalu, fmt::format("%{0} = sxor.u32 %{0}, %{1}", a, b), {a, b}, {a});
    w_.op(S::kSalu, fmt::format("%{1} = sxor.u32 %{0}, %{1}", a, b), {a, b}, {b});
    w_.op(S::kSalu, fmt::format("%{0} = sxor.u32 %{0}, %{1}", a, b), {a, b}, {a});
  }

  // Issues the DMAs of k-block `kb_reg` (a register holding kb) for column
  // block `nb` (register s3) into the buffers in `a_rows`/`b_rows` with flags
  // `fa`/`fb`; `b_granules_reg` holds the size of the B transfer. `guard`
  // ("" or "%p3") predicates them. `deferred` (the ring schedule): only
  // computes the DMAs' addresses, into s49 (A in HBM), s50 (A in VMEM), s51
  // (B in HBM) and s52 (B in VMEM), and issues nothing; ring_fire issues them.
  void issue_block_dmas(const std::string& kb_reg, const std::string& nb_reg, const std::string& b_block,
                        const std::string& a_rows, const std::string& b_rows, const std::string& fa,
                        const std::string& fb, const std::string& b_granules_reg, const std::string& guard,
                        const std::string& a_guard_or_same = "=", bool deferred = false) {
    const std::string r21 = deferred ? "s49" : "s21", r23 = deferred ? "s50" : "s23";
    const std::string r24 = deferred ? "s51" : "s24", r27 = deferred ? "s52" : "s27";
    const std::string a_guard = a_guard_or_same == "=" ? guard : a_guard_or_same;  // predicates A's DMA
    // A[:, kb]: G tiles, one per row tile, every KT tiles in HBM (every KC
    // tiles of column block kb / KC at its start, with column blocks).
    w_.op(S::kSalu, fmt::format("%{} = sshll.u32 %s0, 4", r21), {"s0"}, {r21});
    w_.op(S::kSalu, fmt::format("%s22 = smul.u32 {}, %{}", tile_gr_, kb_reg), {kb_reg}, {"s22"});
    w_.op(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %s22", r21), {r21, "s22"}, {r21});
    if (chunked()) {
      // The issue cursor's chunk t: + t (G - 1) KC tiles (s55, kept by ring_prepare).
      w_.op(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %s55", r21), {r21, "s55"}, {r21});
    } else if (s_.a_column_blocks > 1) {
      // Tile kb = q * KC + c sits at q * G * KC + c = kb + q * (G - 1) * KC tiles.
      w_.op(S::kSalu, fmt::format("%s22 = sshrl.u32 %{}, {}", kb_reg, a_block_shift_), {kb_reg}, {"s22"});
      w_.op(S::kSalu, fmt::format("%s22 = smul.u32 {}, %s22", (g_ - 1) * a_block_tiles_ * tile_gr_), {"s22"}, {"s22"});
      w_.op(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %s22", r21), {r21, "s22"}, {r21});
    }
    w_.op(S::kSalu, fmt::format("%{} = sshll.u32 %{}, 4", r23, a_rows), {a_rows}, {r23});
    if (!deferred) a_dma("s21", "s23", fa, a_guard);
    // B[kb block, column block]: up to 16 row tiles of w tiles, every NT tiles.
    w_.op(S::kSalu, fmt::format("%{} = sshll.u32 %s1, 4", r24), {"s1"}, {r24});
    w_.op(S::kSalu, fmt::format("%s25 = smul.u32 {}, %{}", 16 * ldn_ * tile_gr_, kb_reg), {kb_reg}, {"s25"});
    w_.op(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %s25", r24), {r24, "s25"}, {r24});
    w_.op(S::kSalu, fmt::format("%s26 = smul.u32 {}, %{}", wfull_ * tile_gr_, nb_reg), {nb_reg}, {"s26"});
    w_.op(S::kSalu, fmt::format("%{0} = sadd.s32 %{0}, %s26", r24), {r24, "s26"}, {r24});
    w_.op(S::kSalu, fmt::format("%{} = sshll.u32 %{}, 4", r27, b_rows), {b_rows}, {r27});
    if (!deferred) b_dma("s24", "s27", fb, b_granules_reg, b_block, guard);
  }

  // The DMA of A's k-block (HBM address in `hbm`, VMEM in `vmem`, granules)
  // and of B's, as issue_block_dmas computed them.
  void a_dma(const std::string& hbm, const std::string& vmem, const std::string& fa, const std::string& a_guard) {
    std::vector<std::string> reads;
    if (!a_guard.empty()) reads.push_back(a_guard.substr(1));
    reads.insert(reads.end(), {hbm, vmem, fa});
    const std::string ga = a_guard.empty() ? "" : " (" + a_guard + ")";
    w_.op(S::kDma,
          fmt::format("%{} = dma.hbm_to_vmem.strided [thread:$0]{} /*hbm=*/%{}, /*size_in_granules=*/{}, /*vmem=*/%{}, "
                      "/*dst_syncflagno=*/%{}, /*block_granules=*/{}, /*hbm_stride=*/{}",
                      next_token(), ga, hbm, g_ * tile_gr_, vmem, fa, tile_gr_, a_block_tiles_ * tile_gr_),
          reads, {});
  }
  void b_dma(const std::string& hbm, const std::string& vmem, const std::string& fb, const std::string& b_granules_reg,
             const std::string& b_block, const std::string& guard) {
    std::vector<std::string> reads;
    if (!guard.empty()) reads.push_back(guard.substr(1));
    reads.insert(reads.end(), {hbm, vmem, fb, b_granules_reg});
    if (b_block.starts_with("%")) reads.push_back(b_block.substr(1));
    const std::string g = guard.empty() ? "" : " (" + guard + ")";
    w_.op(
        S::kDma,
        fmt::format("%{} = dma.hbm_to_vmem.strided [thread:$0]{} /*hbm=*/%{}, /*size_in_granules=*/%{}, /*vmem=*/%{}, "
                    "/*dst_syncflagno=*/%{}, /*block_granules=*/{}, /*hbm_stride=*/{}",
                    next_token(), g, hbm, b_granules_reg, vmem, fb, b_block, ldn_ * tile_gr_),
        reads, {});
  }

  std::uint64_t flags() const { return ring() ? 2 * depth_ + (staged() ? 3 : 2) : 6; }
  std::uint64_t a_slot_rows() const { return align(a_buf_bytes_) / 512; }  // VMEM addresses count 512-byte rows
  std::uint64_t b_slot_rows() const { return align(b_buf_bytes_) / 512; }

  // Ring schedule registers: s34/s35 = k-block / column block of the next
  // k-block to issue, s36 = its slot, s38 = k-blocks issued so far (of
  // KT x column blocks), s39 = the slot of the next k-block to compute.
  // Slot i holds A at allocation kBufA + i x A slot, B at kBufB + i x B slot,
  // flags A at kFlags + i and B at kFlags + P + i. Issues k-blocks 0..P-2.
  void ring_prologue() {
    w_.comment(fmt::format("prefetch ring: issue the first {} k-blocks", depth_ - 1));
    for (const char* r : {"s34", "s35", "s36", "s38", "s39"}) {
      w_.op(S::kSalu, fmt::format("%{} = smov 0", r), {}, {r});
    }
    w_.flush();
    if (staged()) {
      // The staging buffer's rows past C's (row padding) stay zero: they are copied too.
      w_.op(S::kSalu, fmt::format("%s46 = smov [#allocation{}]", kStage), {}, {"s46"});
      w_.op(S::kSalu, fmt::format("%s47 = smov [#allocation{} + $0x{:x}]", kFlags, 2 * depth_ + 2), {}, {"s47"});
      w_.op(S::kSalu, "%s3 = smov 0", {}, {"s3"});
      w_.flush();
      fill_accumulator(wfull_, "s46", /*copy_from=*/"");
      stage_next(/*first=*/true);
    }
    for (std::uint64_t i = 0; i + 1 < depth_; ++i) {
      ring_prepare(!early());
      if (early()) ring_fire();
    }
    // k-block 0 fires it (the caller flushes: the zero block's stores share these bundles)
    if (early()) ring_prepare(false);
  }

  // Staged accumulation: issues the DMA of C's block of column block s3 + 1
  // (first: of column block 0) into the staging buffer (s46, flag s47), if
  // that block exists. Its width is the full one or, for the last block, the
  // tail's.
  void stage_next(bool first) {
    const std::uint64_t full_blocks = nt_ / wfull_;
    const std::uint64_t tail = nt_ % wfull_;
    w_.op(S::kSalu, first ? "%s30 = smov 0" : "%s30 = sadd.s32 %s3, 1",
          first ? std::vector<std::string>{} : std::vector<std::string>{"s3"}, {"s30"});
    w_.op(S::kSalu, "%s21 = sshll.u32 %s2, 4", {"s2"}, {"s21"});
    w_.op(S::kSalu, fmt::format("%s22 = smul.u32 {}, %s30", wfull_ * 128), {"s30"}, {"s22"});
    w_.op(S::kSalu, "%s21 = sadd.s32 %s21, %s22", {"s21", "s22"}, {"s21"});
    w_.op(S::kSalu, "%s23 = sshll.u32 %s46, 4", {"s46"}, {"s23"});
    w_.op(S::kSalu, fmt::format("%p11 = scmp.lt.s32.totalorder %s30, {}", full_blocks), {"s30"}, {"p11"});
    w_.op(S::kSalu, fmt::format("%p15 = scmp.eq.s32.totalorder %s30, {}", full_blocks), {"s30"}, {"p15"});
    auto load = [&](std::uint64_t w, const std::string& pred) {
      w_.op(S::kDma,
            fmt::format("%{} = dma.hbm_to_vmem.strided [thread:$0] (%{}) /*hbm=*/%s21, /*size_in_granules=*/{}, "
                        "/*vmem=*/%s23, /*dst_syncflagno=*/%s47, /*block_granules=*/{}, /*hbm_stride=*/{}",
                        next_token(), pred, g_ * w * 128, w * 128, ldn_ * 128),
            {pred, "s21", "s23", "s47"}, {});
    };
    if (full_blocks > 0) load(wfull_, "p11");
    if (tail > 0) load(tail, "p15");
    w_.flush();
  }

  // Issues the DMAs ring_prepare computed (nothing past the last k-block:
  // p3 is false then).
  void ring_fire() {
    const std::uint64_t tail = nt_ % wfull_;
    a_dma("s49", "s50", "s14", resident_ ? "%p12" : "%p3");
    b_dma("s51", "s52", "s16", "s28", tail > 0 ? "%s31" : std::to_string(wfull_ * tile_gr_), "%p3");
  }

  // Computes the DMAs of the next k-block in issue order (k-blocks ascending
  // within column blocks ascending) into slot s36, if one is left, for
  // ring_fire (with `now`: issues them itself, the DMAs amid the address
  // arithmetic), and advances the issue cursor. Everything ring_fire reads
  // (s14, s16, s28, s31, s49..s52, p3, p12) is left alone until it fires, so
  // a k-block prepares its successor's issue in its weight pushes' free
  // scalar slots and the DMAs go first thing in the next k-block.
  // Only early() programs prepare ahead; the others issue at the start of each
  // k-block (`now`).
  void ring_prepare(bool now) {
    const std::uint64_t full_blocks = nt_ / wfull_;
    const std::uint64_t tail = nt_ % wfull_;
    const std::uint64_t total = kt_ * (full_blocks + (tail > 0 ? 1 : 0)) * row_blocks_;
    w_.op(S::kSalu, fmt::format("%p3 = scmp.lt.s32.totalorder %s38, {}", total), {"s38"}, {"p3"});
    const char* a_index = resident_ ? "s34" : "s36";  // resident A: k-block kb's slot
    w_.op(S::kSalu, fmt::format("%s41 = smul.u32 {}, %{}", a_slot_rows(), a_index), {a_index}, {"s41"});
    w_.op(S::kSalu, fmt::format("%s10 = smov [#allocation{}]", kBufA), {}, {"s10"});
    w_.op(S::kSalu, "%s10 = sadd.s32 %s10, %s41", {"s10", "s41"}, {"s10"});
    w_.op(S::kSalu, fmt::format("%s42 = smul.u32 {}, %s36", b_slot_rows()), {"s36"}, {"s42"});
    w_.op(S::kSalu, fmt::format("%s12 = smov [#allocation{}]", kBufB), {}, {"s12"});
    w_.op(S::kSalu, "%s12 = sadd.s32 %s12, %s42", {"s12", "s42"}, {"s12"});
    w_.op(S::kSalu, fmt::format("%s14 = smov [#allocation{}]", kFlags), {}, {"s14"});
    w_.op(S::kSalu, "%s14 = sadd.s32 %s14, %s36", {"s14", "s36"}, {"s14"});
    w_.op(S::kSalu, fmt::format("%s16 = sadd.s32 %s14, {}", depth_), {"s14"}, {"s16"});
    // B's granules: rows of the k-block (fewer in a partial last one) x the column block's width.
    if (last_partial()) {
      w_.op(S::kSalu, fmt::format("%p6 = scmp.eq.s32.totalorder %s34, {}", kt_ - 1), {"s34"}, {"p6"});
      w_.op(S::kSalu,
            fmt::format("%s43 = scalar_select /*predicate=*/%p6, /*on_true=*/{}, /*on_false=*/16", kr8(kt_ - 1)),
            {"p6"}, {"s43"});
    } else {
      w_.op(S::kSalu, "%s43 = smov 16", {}, {"s43"});
    }
    std::string block = std::to_string(wfull_ * tile_gr_);
    if (tail > 0) {
      w_.op(S::kSalu, fmt::format("%p15 = scmp.eq.s32.totalorder %s35, {}", full_blocks), {"s35"}, {"p15"});
      w_.op(S::kSalu,
            fmt::format("%s31 = scalar_select /*predicate=*/%p15, /*on_true=*/{}, /*on_false=*/{}", tail * tile_gr_,
                        wfull_ * tile_gr_),
            {"p15"}, {"s31"});
      w_.op(S::kSalu, "%s28 = smul.u32 %s31, %s43", {"s31", "s43"}, {"s28"});
      block = "%s31";
    } else {
      w_.op(S::kSalu, fmt::format("%s28 = smul.u32 {}, %s43", wfull_ * tile_gr_), {"s43"}, {"s28"});
    }
    if (resident_) {  // A only with column block 0
      w_.op(S::kSalu, "%p12 = scmp.eq.s32.totalorder %s35, 0", {"s35"}, {"p12"});
      w_.op(S::kSalu, "%p12 = pnand %p12, %p3", {"p12", "p3"}, {"p12"});
      w_.op(S::kSalu, "%p12 = pneg %p12", {"p12"}, {"p12"});
    }
    if (chunked()) chunk_arrival();
    issue_block_dmas("s34", "s35", block, "s10", "s12", "s14", "s16", "s28", "%p3", resident_ ? "%p12" : "=",
                     /*deferred=*/!now);
    if (chunked()) {
      advance_chunked();
      return;
    }
    // Advance: next k-block (wrapping into the next column block), next slot.
    w_.op(S::kSalu, "%s34 = sadd.s32 %s34, 1", {"s34"}, {"s34"});
    w_.op(S::kSalu, fmt::format("%p11 = scmp.eq.s32.totalorder %s34, {}", kt_), {"s34"}, {"p11"});
    w_.op(S::kSalu, "%s34 = scalar_select /*predicate=*/%p11, /*on_true=*/0, /*on_false=*/%s34", {"p11", "s34"},
          {"s34"});
    if (row_blocks_ > 1) {
      // One column block: past its last k-block comes the next row block's A (s0 is read by the issue cursor only).
      w_.op(S::kSalu, fmt::format("%s40 = sadd.s32 %s0, {}", g_ * kt_ * tile_bytes_ / 512), {"s0"}, {"s40"});
      w_.op(S::kSalu, "%s0 = scalar_select /*predicate=*/%p11, /*on_true=*/%s40, /*on_false=*/%s0",
            {"p11", "s40", "s0"}, {"s0"});
    } else {
      w_.op(S::kSalu, "%s40 = sadd.s32 %s35, 1", {"s35"}, {"s40"});
      w_.op(S::kSalu, "%s35 = scalar_select /*predicate=*/%p11, /*on_true=*/%s40, /*on_false=*/%s35",
            {"p11", "s40", "s35"}, {"s35"});
    }
    w_.op(S::kSalu, "%s36 = sadd.s32 %s36, 1", {"s36"}, {"s36"});
    w_.op(S::kSalu, fmt::format("%p13 = scmp.eq.s32.totalorder %s36, {}", depth_), {"s36"}, {"p13"});
    w_.op(S::kSalu, "%s36 = scalar_select /*predicate=*/%p13, /*on_true=*/0, /*on_false=*/%s36", {"p13", "s36"},
          {"s36"});
    w_.op(S::kSalu, "%s38 = sadd.s32 %s38, 1", {"s38"}, {"s38"});
  }

  // The issue cursor of the collective matmul: s34 = the global k-block, s35
  // = the column block, s56 = the end of the chunk's k-range, s55 = A's
  // offset for the chunk; the chunk's k-blocks, then the next column block,
  // then the next chunk. Then the next slot, as ring_prepare.
  void advance_chunked() {
    const std::uint64_t a_step = (g_ - 1) * ktc_ * tile_gr_;
    w_.op(S::kSalu, "%s34 = sadd.s32 %s34, 1", {"s34"}, {"s34"});
    w_.op(S::kSalu, "%p11 = scmp.eq.s32.totalorder %s34, %s56", {"s34", "s56"}, {"p11"});
    w_.op(S::kSalu, fmt::format("%s40 = sadd.s32 %s34, {}", negated_immediate(ktc_)), {"s34"}, {"s40"});
    w_.op(S::kSalu, "%s34 = scalar_select /*predicate=*/%p11, /*on_true=*/%s40, /*on_false=*/%s34",
          {"p11", "s40", "s34"}, {"s34"});
    w_.op(S::kSalu, "%s40 = sadd.s32 %s35, 1", {"s35"}, {"s40"});
    w_.op(S::kSalu, "%s35 = scalar_select /*predicate=*/%p11, /*on_true=*/%s40, /*on_false=*/%s35",
          {"p11", "s40", "s35"}, {"s35"});
    w_.op(S::kSalu, fmt::format("%p13 = scmp.eq.s32.totalorder %s35, {}", column_blocks()), {"s35"}, {"p13"});
    w_.op(S::kSalu, "%s35 = scalar_select /*predicate=*/%p13, /*on_true=*/0, /*on_false=*/%s35", {"p13", "s35"},
          {"s35"});
    w_.op(S::kSalu, fmt::format("%s40 = sadd.s32 %s34, {}", ktc_), {"s34"}, {"s40"});
    w_.op(S::kSalu, "%s34 = scalar_select /*predicate=*/%p13, /*on_true=*/%s40, /*on_false=*/%s34",
          {"p13", "s40", "s34"}, {"s34"});
    w_.op(S::kSalu, fmt::format("%s40 = sadd.s32 %s56, {}", ktc_), {"s56"}, {"s40"});
    w_.op(S::kSalu, "%s56 = scalar_select /*predicate=*/%p13, /*on_true=*/%s40, /*on_false=*/%s56",
          {"p13", "s40", "s56"}, {"s56"});
    w_.op(S::kSalu, fmt::format("%s40 = sadd.s32 %s55, {}", a_step), {"s55"}, {"s40"});
    w_.op(S::kSalu, "%s55 = scalar_select /*predicate=*/%p13, /*on_true=*/%s40, /*on_false=*/%s55",
          {"p13", "s40", "s55"}, {"s55"});
    w_.op(S::kSalu, "%s36 = sadd.s32 %s36, 1", {"s36"}, {"s36"});
    w_.op(S::kSalu, fmt::format("%p13 = scmp.eq.s32.totalorder %s36, {}", depth_), {"s36"}, {"p13"});
    w_.op(S::kSalu, "%s36 = scalar_select /*predicate=*/%p13, /*on_true=*/0, /*on_false=*/%s36", {"p13", "s36"},
          {"s36"});
    w_.op(S::kSalu, "%s38 = sadd.s32 %s38, 1", {"s38"}, {"s38"});
  }

  // Points s9/s11 (A/B rows) and s13/s15 (their flags) at slot s39, the
  // k-block about to compute, and advances s39.
  void ring_consume() {
    const char* a_index = resident_ ? "s4" : "s39";
    w_.op(S::kSalu, fmt::format("%s44 = smul.u32 {}, %{}", a_slot_rows(), a_index), {a_index}, {"s44"});
    if (resident_) w_.op(S::kSalu, "%p0 = scmp.eq.s32.totalorder %s3, 0", {"s3"}, {"p0"});
    w_.op(S::kSalu, fmt::format("%s9 = smov [#allocation{}]", kBufA), {}, {"s9"});
    w_.op(S::kSalu, "%s9 = sadd.s32 %s9, %s44", {"s9", "s44"}, {"s9"});
    w_.op(S::kSalu, fmt::format("%s45 = smul.u32 {}, %s39", b_slot_rows()), {"s39"}, {"s45"});
    w_.op(S::kSalu, fmt::format("%s11 = smov [#allocation{}]", kBufB), {}, {"s11"});
    w_.op(S::kSalu, "%s11 = sadd.s32 %s11, %s45", {"s11", "s45"}, {"s11"});
    w_.op(S::kSalu, fmt::format("%s13 = smov [#allocation{}]", kFlags), {}, {"s13"});
    w_.op(S::kSalu, "%s13 = sadd.s32 %s13, %s39", {"s13", "s39"}, {"s13"});
    w_.op(S::kSalu, fmt::format("%s15 = sadd.s32 %s13, {}", depth_), {"s13"}, {"s15"});
    w_.op(S::kSalu, "%s39 = sadd.s32 %s39, 1", {"s39"}, {"s39"});
    w_.op(S::kSalu, fmt::format("%p14 = scmp.eq.s32.totalorder %s39, {}", depth_), {"s39"}, {"p14"});
    w_.op(S::kSalu, "%s39 = scalar_select /*predicate=*/%p14, /*on_true=*/0, /*on_false=*/%s39", {"p14", "s39"},
          {"s39"});
  }

  // One column block of `w` MXUs (nb in s3).
  void nblock(std::uint64_t w, bool runtime_nb, std::uint64_t static_nb) {
    (void)runtime_nb;
    (void)static_nb;
    row_parts_ = split_rows(w);
    iters_ = g2_ / row_parts_;
    // The accumulator buffer in s17 is free once its previous output DMA (always
    // one of a full column block) landed; p8 says whether there is one.
    const std::uint64_t prior = g_ * wfull_ * c_gr_;
    {
      w_.op(S::kSync, fmt::format("%{} = dma.done.wait (%p8) %s19, {}", next_token(), prior), {"p8", "s19"}, {});
      w_.op(S::kSync, fmt::format("%{} = vsyncadd (%p8) %s19, {}", next_token(), negated_immediate(prior)),
            {"p8", "s19"}, {});
    }
    w_.op(S::kSalu, "%s4 = smov 0", {}, {"s4"});
    if (s_.double_buffer && !ring()) {
      // k-block 0 of a column block is prefetched by the previous block's last
      // k-block; only the very first block fetches its own.
      const bool first_block_here = runtime_nb || static_nb == 0;
      if (first_block_here) {
        std::string guard;
        if (runtime_nb) {
          w_.op(S::kSalu, "%p12 = scmp.eq.s32.totalorder %s3, 0", {"s3"}, {"p12"});
          guard = "%p12";
        }
        w_.op(S::kSalu, fmt::format("%s28 = smov {}", kr8(0) * w * tile_gr_), {}, {"s28"});
        issue_block_dmas("s4", "s3", std::to_string(w * tile_gr_), "s9", "s11", "s13", "s15", "s28", guard);
      }
    }
    if (staged()) {
      // C's block arrived in the staging buffer during the previous column block (or the prologue).
      const std::uint64_t c_granules = g_ * w * 128;
      w_.op(S::kSync, fmt::format("%{} = dma.done.wait %s47, {}", next_token(), c_granules), {"s47"}, {});
      w_.op(S::kSync, fmt::format("%{} = vsyncadd %s47, {}", next_token(), negated_immediate(c_granules)), {"s47"}, {});
      w_.flush();
      fill_accumulator(w, "s17", /*copy_from=*/"s46");
      stage_next(/*first=*/false);
    } else {
      fill_accumulator(w, "s17", "");
      if (s_.accumulate) load_accumulator(w);
    }
    kblock(w, kr8(0), /*next_exists=*/kt_ > 1, /*next_partial=*/kt_ == 2 && last_partial(), false);
    const std::uint64_t middle_end = last_partial() ? kt_ - 1 : kt_;  // k-blocks [1, middle_end) are full
    if (middle_end > 1) {
      w_.comment("full k-blocks: accumulate");
      w_.op(S::kSalu, "%s4 = smov 1", {}, {"s4"});
      const std::string loop = fmt::format("kblock_loop_{}", label_++);
      w_.label(loop);
      kblock(w, 16, true, last_partial(), /*runtime=*/true);
      w_.op(S::kSalu, "%s4 = sadd.s32 %s4, 1", {"s4"}, {"s4"});
      w_.op(S::kSalu, fmt::format("%p4 = scmp.lt.s32.totalorder %s4, {}", middle_end), {"s4"}, {"p4"});
      w_.op(S::kBranch, fmt::format("sbr.rel (%p4) target = {}", loop), {"p4"}, {});
      w_.flush();
    }
    if (last_partial() && kt_ > 1) {
      w_.comment(fmt::format("last k-block: {} of 128 rows", s_.k - (kt_ - 1) * 128));
      w_.op(S::kSalu, fmt::format("%s4 = smov {}", kt_ - 1), {}, {"s4"});
      kblock(w, kr8(kt_ - 1), false, false, false);
    }
    drain(w);
    if (out_bf16_) pack_accumulator(w);
    // Output: the accumulator block to C, then swap accumulator buffers.
    w_.comment("accumulator block -> C");
    const std::uint64_t c_granules = g_ * w * c_gr_;
    c_block_addresses();
    w_.op(S::kDma,
          fmt::format("%{} = dma.vmem_to_hbm.strided [thread:$0] /*vmem=*/%s23, /*size_in_granules=*/{}, /*hbm=*/%s21, "
                      "/*dst_syncflagno=*/%s19, /*block_granules=*/{}, /*hbm_stride=*/{}",
                      next_token(), c_granules, w * c_gr_, ldn_ * c_gr_),
          {"s23", "s21", "s19"}, {});
    w_.op(S::kSalu, "%p8 = scmp.eq.s32.totalorder %s0, %s0", {"s0"}, {"p8"});  // pending on this buffer
    swap("s17", "s18");
    swap("s19", "s20");
    // p8 always describes the buffer now in s17: exchange p8 and p9.
    w_.op(S::kSalu, "%p10 = por %p8, %p8", {"p8"}, {"p10"});
    w_.op(S::kSalu, "%p8 = por %p9, %p9", {"p9"}, {"p8"});
    w_.op(S::kSalu, "%p9 = por %p10, %p10", {"p10"}, {"p9"});
    w_.flush();
  }

  // A bf16 C: packs the accumulator in s17 (g_ x w f32 tiles, g_ even) in
  // place, f32 tiles 2j and 2j+1 -> one vreg (vpack.c.bf16, nearest even;
  // the second tile to sublanes 4-7) stored at 4 KiB x j: the bf16 image of
  // the block in C's tiled layout, (8,128) tiles of 2 KiB in the same order.
  // A store never reaches a tile not yet loaded (j x 4 KiB < 2j x 4 KiB).
  // U pairs per iteration (U | the pair count, U <= 8): loads v10..v25,
  // packs v2..v9; the last 4 bundles are the branch's delay slots. Uses s21
  // (source), s22 (destination), s23 (count) and p4.
  void pack_accumulator(std::uint64_t w) {
    const std::uint64_t pairs = g_ * w / 2;
    std::uint64_t u = 8;
    while (pairs % u != 0) u /= 2;
    w_.comment(fmt::format("bf16 C: pack the accumulator in place, {} pairs of f32 tiles, {} per iteration", pairs, u));
    w_.op(S::kSalu, "%s21 = sadd.s32 %s17, 0", {"s17"}, {"s21"});
    w_.op(S::kSalu, "%s22 = sadd.s32 %s17, 0", {"s17"}, {"s22"});
    w_.op(S::kSalu, "%s23 = smov 0", {}, {"s23"});
    w_.flush();
    // Bundle of each op: pair i's loads 3 per bundle in order, its pack the bundle after its second load, its
    // store the bundle after its pack and after the store before it (one store slot).
    std::vector<std::vector<std::string>> b;
    const auto at = [&](std::uint64_t bundle) -> std::vector<std::string>& {
      if (b.size() <= bundle) b.resize(bundle + 1);
      return b[bundle];
    };
    std::uint64_t last_store = 0;
    for (std::uint64_t i = 0; i < u; ++i) {
      const std::uint64_t second_load = (2 * i + 1) / 3;
      at((2 * i) / 3)
          .push_back(fmt::format("%v{} = vld [vmem:[%s21{}] sm:$0xff]", 10 + 2 * i,
                                 i == 0 ? std::string() : fmt::format(" + $0x{:x}", 16 * i)));
      at(second_load).push_back(fmt::format("%v{} = vld [vmem:[%s21 + $0x{:x}] sm:$0xff]", 11 + 2 * i, 16 * i + 8));
      at(second_load + 1).push_back(fmt::format("%v{} = vpack.c.bf16 %v{}, %v{}", 2 + i, 11 + 2 * i, 10 + 2 * i));
      const std::uint64_t store = std::max(second_load + 2, i == 0 ? 0 : last_store + 1);
      at(store).push_back(fmt::format("%{} = vst [vmem:[%s22{}] sm:$0xff] /*vst_source=*/%v{}", next_token(),
                                      i == 0 ? std::string() : fmt::format(" + $0x{:x}", 8 * i), 2 + i));
      last_store = store;
    }
    // The pointers move on after their last readers (a writer may share its reader's bundle); the count is
    // compared a bundle before the branch, which sits 4 bundles (its delay slots) before the body's end.
    const std::uint64_t body = std::max<std::uint64_t>(last_store + 1, 7);
    at(body - 1);
    at((2 * u - 1) / 3).push_back(fmt::format("%s21 = sadd.s32 %s21, {}", 16 * u));
    at(last_store).push_back(fmt::format("%s22 = sadd.s32 %s22, {}", 8 * u));
    at(0).push_back("%s23 = sadd.s32 %s23, 1");
    at(body - 6).push_back(fmt::format("%p4 = scmp.lt.s32.totalorder %s23, {}", pairs / u));
    const std::string loop = fmt::format("pack_loop_{}", label_++);
    at(body - 5).push_back(fmt::format("sbr.rel (%p4) target = {}", loop));
    w_.label(loop);
    for (const auto& ops : b) w_.bundle(ops);
  }

  // s21 = C's block of column block s3 in HBM, s23 = the accumulator in s17
  // (granule addresses).
  void c_block_addresses() {
    w_.op(S::kSalu, "%s21 = sshll.u32 %s2, 4", {"s2"}, {"s21"});
    w_.op(S::kSalu, fmt::format("%s22 = smul.u32 {}, %s3", wfull_ * c_gr_), {"s3"}, {"s22"});
    w_.op(S::kSalu, "%s21 = sadd.s32 %s21, %s22", {"s21", "s22"}, {"s21"});
    w_.op(S::kSalu, "%s23 = sshll.u32 %s17, 4", {"s17"}, {"s23"});
  }

  // C's block of this column block into the accumulator in s17 (accumulate),
  // through the flag in s19, free here (nblock waited for its last output).
  void load_accumulator(std::uint64_t w) {
    w_.comment("accumulate: C's block -> the accumulator");
    const std::uint64_t c_granules = g_ * w * 128;
    c_block_addresses();
    w_.op(S::kDma,
          fmt::format("%{} = dma.hbm_to_vmem.strided [thread:$0] /*hbm=*/%s21, /*size_in_granules=*/{}, /*vmem=*/%s23, "
                      "/*dst_syncflagno=*/%s19, /*block_granules=*/{}, /*hbm_stride=*/{}",
                      next_token(), c_granules, w * 128, ldn_ * 128),
          {"s21", "s23", "s19"}, {});
    w_.flush();  // a wait in the DMA's own bundle would hold back its issue
    w_.op(S::kSync, fmt::format("%{} = dma.done.wait %s19, {}", next_token(), c_granules), {"s19"}, {});
    w_.op(S::kSync, fmt::format("%{} = vsyncadd %s19, {}", next_token(), negated_immediate(c_granules)), {"s19"}, {});
    w_.flush();
  }

  // Zeroes the buffer in `dst` (8 tiles per 8-bundle iteration, one store per
  // bundle), or with `copy_from` copies that buffer's tiles into it (8 tiles
  // per 10-bundle iteration: loads in bundles 0..7, each stored 2 bundles
  // later), and starts the column block's pipeline registers: s8 counts its
  // iterations, s7 points at the rows the pops of iteration s8 - D accumulate
  // into, s32 is the end of the accumulator in s17 (s7 wraps there).
  void fill_accumulator(std::uint64_t w, const std::string& dst, const std::string& copy_from) {
    const std::uint64_t acc_stride = 2 * w * 8;
    const std::uint64_t tiles = g2_ * 2 * w;
    const std::uint64_t iterations = ceil_div(tiles, 8);
    if (!copy_from.empty()) {
      copy_accumulator(w, dst, copy_from);
      return;
    }
    w_.comment(fresh() ? std::string("start the accumulator: k-block 0's pops add to the zero block")
                       : fmt::format("zero the accumulator ({} tiles)", tiles));
    w_.op(S::kValu, "%v0 = vmov 0", {}, {"v0"});
    w_.op(S::kSalu, fmt::format("%s21 = sadd.s32 %{}, 0", dst), {dst}, {"s21"});
    w_.op(S::kSalu, "%s22 = smov 0", {}, {"s22"});
    w_.op(S::kSalu, "%s8 = smov 0", {}, {"s8"});
    w_.op(S::kSalu, fmt::format("%s7 = sadd.s32 %s17, {}", negated_immediate(d_ * acc_stride)), {"s17"}, {"s7"});
    w_.op(S::kSalu, fmt::format("%s32 = sadd.s32 %s17, {}", iters_ * acc_stride), {"s17"}, {"s32"});
    if (fresh()) {                          // k-block 0's pops add to the zero block instead (see fresh())
      first_kblock_predicate(iters_ + d_);  // s8 = 0: true
      return;
    }
    w_.flush();
    const std::string loop = fmt::format("zero_{}", label_++);
    w_.label(loop);
    for (std::uint64_t k = 0; k < 8; ++k) {
      std::vector<std::string> ops{fmt::format("%{} = vst [vmem:[%s21{}] sm:$0xff] /*vst_source=*/%v0", next_token(),
                                               k == 0 ? std::string() : fmt::format(" + $0x{:x}", k * 8))};
      if (k == 0) ops.push_back(fmt::format("%p10 = scmp.lt.s32.totalorder %s22, {}", iterations - 1));
      if (k == 1) ops.push_back("%s22 = sadd.s32 %s22, 1");
      if (k == 3) ops.push_back(fmt::format("%{} = sbr.rel (%p10) target = {}", next_token(), loop));
      if (k == 7) ops.push_back("%s21 = sadd.s32 %s21, 64");
      w_.bundle(ops, k == 0 ? "8 tiles" : "");
    }
  }

  void copy_accumulator(std::uint64_t w, const std::string& dst, const std::string& src) {
    const std::uint64_t acc_stride = 2 * w * 8;
    const std::uint64_t tiles = g2_ * 2 * w;
    const std::uint64_t iterations = ceil_div(tiles, 8);
    w_.comment(fmt::format("accumulate: the staged C block -> the accumulator ({} tiles)", tiles));
    w_.op(S::kSalu, fmt::format("%s21 = sadd.s32 %{}, 0", dst), {dst}, {"s21"});
    w_.op(S::kSalu, fmt::format("%s24 = sadd.s32 %{}, 0", src), {src}, {"s24"});
    w_.op(S::kSalu, "%s22 = smov 0", {}, {"s22"});
    w_.op(S::kSalu, "%s8 = smov 0", {}, {"s8"});
    w_.op(S::kSalu, fmt::format("%s7 = sadd.s32 %s17, {}", negated_immediate(d_ * acc_stride)), {"s17"}, {"s7"});
    w_.op(S::kSalu, fmt::format("%s32 = sadd.s32 %s17, {}", g2_ * acc_stride), {"s17"}, {"s32"});
    w_.flush();
    const std::string loop = fmt::format("copy_{}", label_++);
    w_.label(loop);
    const std::uint64_t branch_at = 9 - chip_.branch_delay_slots;  // the last delay slot is bundle 9
    for (std::uint64_t k = 0; k < 10; ++k) {
      std::vector<std::string> ops;
      if (k < 8) {
        ops.push_back(fmt::format("%v{} = vld [vmem:[%s24{}] sm:$0xff]", k,
                                  k == 0 ? std::string() : fmt::format(" + $0x{:x}", k * 8)));
      }
      if (k >= 2) {
        ops.push_back(fmt::format("%{} = vst [vmem:[%s21{}] sm:$0xff] /*vst_source=*/%v{}", next_token(),
                                  k == 2 ? std::string() : fmt::format(" + $0x{:x}", (k - 2) * 8), k - 2));
      }
      if (k == 0) ops.push_back(fmt::format("%p10 = scmp.lt.s32.totalorder %s22, {}", iterations - 1));
      if (k == 1) ops.push_back("%s22 = sadd.s32 %s22, 1");
      if (k == branch_at) ops.push_back(fmt::format("%{} = sbr.rel (%p10) target = {}", next_token(), loop));
      if (k == 8) ops.push_back("%s24 = sadd.s32 %s24, 64");
      if (k == 9) ops.push_back("%s21 = sadd.s32 %s21, 64");
      w_.bundle(ops, k == 0 ? "8 tiles" : "");
    }
  }

  // Issues k-block 0 of column block s3+1 (if there is one) into the next
  // buffers; in a runtime k-loop only when this is the last k-block (s4+1 == KT).
  void prefetch_next_column_block(bool runtime) {
    const std::uint64_t full_blocks = nt_ / wfull_;
    const std::uint64_t tail = nt_ % wfull_;
    const std::uint64_t blocks = full_blocks + (tail > 0 ? 1 : 0);
    w_.op(S::kSalu, "%s30 = sadd.s32 %s3, 1", {"s3"}, {"s30"});
    w_.op(S::kSalu, fmt::format("%p11 = scmp.lt.s32.totalorder %s30, {}", blocks), {"s30"}, {"p11"});
    if (runtime) {
      w_.op(S::kSalu, "%s29 = sadd.s32 %s4, 1", {"s4"}, {"s29"});
      w_.op(S::kSalu, fmt::format("%p13 = scmp.eq.s32.totalorder %s29, {}", kt_), {"s29"}, {"p13"});
      w_.op(S::kSalu, "%p14 = pnand %p11, %p13", {"p11", "p13"}, {"p14"});
      w_.op(S::kSalu, "%p11 = pneg %p14", {"p14"}, {"p11"});
    }
    // The next block is the tail (fewer MXUs) when s3+1 == full_blocks.
    std::string block = std::to_string(wfull_ * tile_gr_);
    if (tail > 0) {
      w_.op(S::kSalu, fmt::format("%p15 = scmp.eq.s32.totalorder %s30, {}", full_blocks), {"s30"}, {"p15"});
      w_.op(S::kSalu,
            fmt::format("%s31 = scalar_select /*predicate=*/%p15, /*on_true=*/{}, /*on_false=*/{}", tail * tile_gr_,
                        wfull_ * tile_gr_),
            {"p15"}, {"s31"});
      w_.op(S::kSalu, fmt::format("%s28 = smul.u32 {}, %s31", kr8(0)), {"s31"}, {"s28"});
      block = "%s31";
    } else {
      w_.op(S::kSalu, fmt::format("%s28 = smov {}", kr8(0) * wfull_ * tile_gr_), {}, {"s28"});
    }
    w_.op(S::kSalu, "%s29 = smov 0", {}, {"s29"});
    issue_block_dmas("s29", "s30", block, "s10", "s12", "s14", "s16", "s28", "%p11");
  }

  // One k-block: DMAs (prefetch or direct), wait, weight pushes, row loop.
  // `rows8`: row tiles of B in this block (16, or fewer in a partial last block).
  void kblock(std::uint64_t w, std::uint64_t rows8, bool next_exists, bool next_partial, bool runtime) {
    const std::uint64_t b_granules = rows8 * w * tile_gr_;
    // 1. DMAs.
    if (ring()) {
      // The DMAs the previous k-block prepared go first; the next ones are
      // prepared after this k-block's weight pushes (below), their scalar
      // address arithmetic in the pushes' free scalar slots.
      if (!early()) ring_prepare(/*now=*/true);
      ring_consume();
    } else if (s_.double_buffer) {
      if (next_exists) {
        // Prefetch k-block kb+1 into the other buffers while this one computes.
        w_.op(S::kSalu, "%s29 = sadd.s32 %s4, 1", {"s4"}, {"s29"});
        std::string guard;
        if (runtime) {
          w_.op(S::kSalu, fmt::format("%p3 = scmp.lt.s32.totalorder %s29, {}", kt_), {"s29"}, {"p3"});
          guard = "%p3";
        }
        const std::uint64_t full = 16 * w * tile_gr_;
        if (next_partial) {
          const std::uint64_t part = kr8(kt_ - 1) * w * tile_gr_;
          if (runtime) {
            w_.op(S::kSalu, fmt::format("%p6 = scmp.eq.s32.totalorder %s29, {}", kt_ - 1), {"s29"}, {"p6"});
            w_.op(S::kSalu,
                  fmt::format("%s28 = scalar_select /*predicate=*/%p6, /*on_true=*/{}, /*on_false=*/{}", part, full),
                  {"p6"}, {"s28"});
          } else {
            w_.op(S::kSalu, fmt::format("%s28 = smov {}", part), {}, {"s28"});
          }
        } else {
          w_.op(S::kSalu, fmt::format("%s28 = smov {}", full), {}, {"s28"});
        }
        issue_block_dmas("s29", "s3", std::to_string(w * tile_gr_), "s10", "s12", "s14", "s16", "s28", guard);
      }
      if (!next_exists || runtime) {
        // The last k-block prefetches k-block 0 of the next column block, if any.
        prefetch_next_column_block(runtime);
      }
    } else {
      w_.op(S::kSalu, fmt::format("%s28 = smov {}", b_granules), {}, {"s28"});
      issue_block_dmas("s4", "s3", std::to_string(w * tile_gr_), "s9", "s11", "s13", "s15", "s28", "");
    }
    // 2. Wait for this k-block's operands.
    // (A resident: only column block 0 fetched A; p0 = s3 == 0, from ring_consume.)
    const std::uint64_t a_granules = g_ * tile_gr_;
    const std::string ap = resident_ ? " (%p0)" : "";
    std::vector<std::string> ar{"s13"};
    if (resident_) ar.push_back("p0");
    auto wait_a = [&] {
      w_.op(S::kSync, fmt::format("%{} = dma.done.wait{} %s13, {}", next_token(), ap, a_granules), ar, {});
      w_.op(S::kSync, fmt::format("%{} = vsyncadd{} %s13, {}", next_token(), ap, negated_immediate(a_granules)), ar,
            {});
    };
    wait_a();
    w_.op(S::kSync, fmt::format("%{} = dma.done.wait %s15, {}", next_token(), b_granules), {"s15"}, {});
    w_.op(S::kSync, fmt::format("%{} = vsyncadd %s15, {}", next_token(), negated_immediate(b_granules)), {"s15"}, {});
    if (ring() && early()) ring_fire();
    // 3. Weights: row tile r of the block holds K rows 8r..8r+7; the last push must hold rows 0..7.
    const bool masked = rows8 < 16;
    if (masked) {
      w_.op(S::kValu, "%v26 = vlaneseq", {}, {"v26"});
      w_.op(S::kValu, "%v26 = vand.u32 127, %v26", {"v26"}, {"v26"});
      w_.op(S::kValu, fmt::format("%vm0 = vcmp.lt.s32.totalorder %v26, {}", rows8 * 8), {"v26"}, {"vm0"});
    }
    const std::uint64_t tile_rows = tile_bytes_ / 512;
    for (std::uint64_t i = 0; i < rows8; ++i) {
      const std::uint64_t r = rows8 - 1 - i;
      if (bf16_) {
        for (std::uint64_t m = 0; m < w; m += 2) {
          const std::uint64_t row = (r * w + m) * tile_rows;
          const std::string vin = fmt::format("v{}", 26 + m / 2);
          w_.op(S::kLoad, fmt::format("%{} = vld [vmem:[%s11 + $0x{:x}] sm:$0xff]", vin, row), {"s11"}, {vin});
          w_.op(S::kValu, fmt::format("%v{} = vunpack.c.l.bf16 %{}", 28 + m, vin), {vin}, {fmt::format("v{}", 28 + m)});
          if (m + 1 < w) {
            w_.op(S::kValu, fmt::format("%v{} = vunpack.c.h.bf16 %{}", 29 + m, vin), {vin},
                  {fmt::format("v{}", 29 + m)});
          }
        }
      } else {
        for (std::uint64_t m = 0; m < w; ++m) {
          const std::uint64_t row = (r * w + m) * tile_rows;
          w_.op(S::kLoad, fmt::format("%v{} = vld [vmem:[%s11 + $0x{:x}] sm:$0xff]", 28 + m, row), {"s11"},
                {fmt::format("v{}", 28 + m)});
        }
      }
      for (std::uint64_t m = 0; m < w * row_parts_; ++m) {  // split rows: MXU w + m holds tile m too
        w_.op(S::kMxu, fmt::format("%{} = vmatpush.msra.mxu{} %v{}", next_token(), m, 28 + m % w),
              {fmt::format("v{}", 28 + m % w)}, {fmt::format("mxu{}", m)});
      }
    }
    if (early()) ring_prepare(/*now=*/false);
    // 4. The row loop.
    row_loop(w, masked);
    // 5. Next k-block's buffers become current (the ring recomputes them per k-block).
    if (s_.double_buffer && !ring()) {
      swap("s9", "s10");
      swap("s11", "s12");
      swap("s13", "s14");
      swap("s15", "s16");
    }
    w_.flush();
  }

  // The loop over the row pairs t = 0 .. G2 - 1 of one k-block: iteration t
  // multiplies rows 16t..16t+15 on every MXU and pops, accumulates and stores
  // the results of the iteration D earlier in the column block's global
  // sequence of iterations (s8 counts them), which may belong to the previous
  // k-block: the software pipeline runs across k-blocks, and only the first D
  // iterations of a column block pop nothing. 16 bundles per iteration, one
  // multiply per MXU every 8 cycles.
  void row_loop(std::uint64_t w, bool masked) {
    const std::uint64_t pair_rows = bf16_ ? 8 : 16;  // VMEM rows of A per row pair
    w_.op(S::kSalu, "%s6 = sadd.s32 %s9, 0", {"s9"}, {"s6"});
    w_.op(S::kSalu, "%s5 = smov 0", {}, {"s5"});
    w_.op(S::kSalu, fmt::format("%p1 = scmp.ge.s32.totalorder %s8, {}", d_), {"s8"}, {"p1"});
    // p10 (fresh()) needs no op here: the column block's start set it, and every row pair's
    // bundle 14 recomputes it for the next (s8 runs on across k-blocks).
    w_.flush();
    iteration(w, masked, /*latch=*/true, /*drain=*/false, "", pair_rows, iters_);
    if (iters_ > 1) {
      const std::string loop = fmt::format("row_loop_{}", label_++);
      w_.label(loop);
      iteration(w, masked, false, false, loop, pair_rows, iters_);
    }
  }

  // After the last k-block: pop and accumulate the results still in flight.
  void drain(std::uint64_t w) {
    const std::uint64_t total = kt_ * iters_;  // multiply iterations in a column block
    const std::uint64_t count = std::min(d_, total);
    if (total < d_) w_.op(S::kSalu, "%s7 = sadd.s32 %s17, 0", {"s17"}, {"s7"});  // nothing was popped yet
    w_.op(S::kSalu, "%s5 = smov 0", {}, {"s5"});
    w_.op(S::kSalu, "%p1 = scmp.eq.s32.totalorder %s0, %s0", {"s0"}, {"p1"});
    // With fewer iterations than D, the drain pops iteration s8 - total, not s8 - D
    // (else p10 is still right from the last row pair).
    if (fresh() && !chunked() && count < d_) first_kblock_predicate(iters_ + count);
    w_.flush();
    const std::string loop = fmt::format("drain_{}", label_++);
    if (count > 1) w_.label(loop);
    iteration(w, false, false, /*drain=*/true, count > 1 ? loop : "", 0, count);
  }

  // p10: the pops of iteration s8 (of iteration s8 - D, or s8 - KT G2 in a
  // drain of fewer than D) belong to k-block 0: s8 < `limit`. The row pairs'
  // bundle 14 recomputes it for the next iteration with the same limit.
  void first_kblock_predicate(std::uint64_t limit) {
    first_limit_ = limit;
    if (chunked()) {  // the segment set the limit in s57 (0 after chunk 0: no pop is the first k-block's)
      w_.op(S::kSalu, "%p10 = scmp.lt.s32.totalorder %s8, %s57", {"s8", "s57"}, {"p10"});
      return;
    }
    w_.op(S::kSalu, fmt::format("%p10 = scmp.lt.s32.totalorder %s8, {}", limit), {"s8"}, {"p10"});
  }

  void iteration(std::uint64_t w, bool masked, bool latch, bool drain, const std::string& loop, std::uint64_t pair_rows,
                 std::uint64_t iterations) {
    const std::uint64_t acc_group_rows = w * 8;           // one row group of the accumulator
    const std::uint64_t acc_stride = 2 * acc_group_rows;  // per iteration
    std::array<std::vector<std::string>, 16> b;
    if (!drain) {
      // b0: LHS rows of this pair; b2 / b10: one multiply per MXU for each row group.
      if (bf16_) {
        b[0].push_back("%v0 = vld [vmem:[%s6] sm:$0xff]");
        b[1].push_back("%v1 = vunpack.c.h.bf16 %v0");
        b[1].push_back("%v0 = vunpack.c.l.bf16 %v0");
      } else {
        b[0].push_back("%v0 = vld [vmem:[%s6] sm:$0xff]");
        b[0].push_back("%v1 = vld [vmem:[%s6 + $0x8] sm:$0xff]");
      }
      // Split rows: part j's row pair t + j G2/parts in v(24 + 2j), v(25 + 2j). Loads, unpacks and
      // multiplies within the slots (3 loads, 4 VALU, 4 MXU a bundle; parts 2 and 3 multiply two
      // bundles later, at 4 and 12, 8 cycles apart; their results are still ready for the pops D
      // iterations on where 16 D >= latency + 7: v5e, v5p and v4p's 264 cycles, D = 17).
      for (std::uint64_t j = 1; j < row_parts_; ++j) {
        const std::uint64_t at = j * iters_ * pair_rows;
        const int lo = static_cast<int>(24 + 2 * j);
        if (bf16_) {
          const std::size_t load = j < 3 ? 0 : 1;
          const std::size_t unpack = j < 2 ? 1 : 2;
          b[load].push_back(fmt::format("%v{} = vld [vmem:[%s6 + $0x{:x}] sm:$0xff]", lo, at));
          b[unpack].push_back(fmt::format("%v{} = vunpack.c.h.bf16 %v{}", lo + 1, lo));
          b[unpack].push_back(fmt::format("%v{0} = vunpack.c.l.bf16 %v{0}", lo));
        } else {
          const std::size_t first = j == 1 ? 0 : j == 2 ? 1 : 2;  // v26: b0; v27..v29: b1; v30, v31: b2
          const std::size_t second = j == 3 ? 2 : 1;
          b[first].push_back(fmt::format("%v{} = vld [vmem:[%s6 + $0x{:x}] sm:$0xff]", lo, at));
          b[second].push_back(fmt::format("%v{} = vld [vmem:[%s6 + $0x{:x}] sm:$0xff]", lo + 1, at + 8));
        }
      }
      // The LHS pointer moves on after the last load of the row pair (split rows load until bundle 2).
      b[row_parts_ > 1 ? 3 : 0].push_back(fmt::format("%s6 = sadd.s32 %s6, {}", pair_rows));
      const std::string mnemonic =
          fmt::format("vmatmul{}.f32{}.gmra", masked ? ".msk" : "", latch ? ".vlgmr.msra" : "");
      const std::string mask_operand = masked ? "%vm0, " : "";
      for (std::uint64_t m = 0; m < w * row_parts_; ++m) {
        const std::uint64_t j = m / w;  // the part of the rows MXU m multiplies
        const int lo = j == 0 ? 0 : static_cast<int>(24 + 2 * j);
        const std::size_t late = j >= 2 ? 2 : 0;  // bundles 4 and 12: 3 and 5 hold the pops (MXU slots)
        b[2 + late].push_back(fmt::format("%{} = {}.mxu{} {}%v{}", next_token(), mnemonic, m, mask_operand, lo));
        b[10 + late].push_back(fmt::format("%{} = {}.mxu{} {}%v{}", next_token(),
                                           "vmatmul" + std::string(masked ? ".msk" : "") + ".f32.gmra", m, mask_operand,
                                           lo + 1));
      }
    }
    for (std::uint64_t m = 0; m < w * row_parts_; ++m) {
      b[3].push_back(fmt::format("%v{} = vpop.f32.mrf.mxu{} (%p1)", 2 + m, m));
      b[5].push_back(fmt::format("%v{} = vpop.f32.mrf.mxu{} (%p1)", 6 + m, m));
    }
    // Accumulate group g0 (pops v2..v5) and g1 (pops v6..v9) into the accumulator rows at s7
    // (zeroed at the start of the column block, so every k-block adds).
    // Registers stay below v32 so the program also fits chips with 32 vregs (v4p).
    for (int g = 0; g < 2; ++g) {
      const std::uint64_t base = g * acc_group_rows;
      const int pop = g == 0 ? 2 : 6;
      const int acc = g == 0 ? 10 : 14;
      const int sum = g == 0 ? 18 : 22;
      const int load_bundle = g == 0 ? 4 : 6;
      const int add_bundle = g == 0 ? 6 : 8;
      const int store_bundle = g == 0 ? 7 : 11;
      for (std::uint64_t m = 0; m < w * row_parts_; ++m) {
        // MXU m >= w: tile m % w of part j's row pair, j G2/parts iterations further on.
        const std::uint64_t j = m / w;
        const std::uint64_t half = j * iters_ * acc_stride;
        const std::uint64_t row = base + (m % w) * 8;
        const std::string addr = row + half == 0 ? "%s7" : fmt::format("%s7 + $0x{:x}", row + half);
        // The zero block in k-block 0 (fresh()): s37 for part 0, s(60 + j) for part j.
        const std::string base_reg = fresh() ? (j == 0 ? "%s37" : fmt::format("%s{}", 60 + j)) : "%s7";
        const std::uint64_t offset = fresh() ? row : row + half;
        const std::string load_addr = offset == 0 ? base_reg : fmt::format("{} + $0x{:x}", base_reg, offset);
        const int mi = static_cast<int>(m);
        b[load_bundle + (m < 3 ? 0 : 1)].push_back(
            fmt::format("%v{} = vld (%p1) [vmem:[{}] sm:$0xff]", acc + mi, load_addr));
        b[add_bundle].push_back(fmt::format("%v{} = vadd.f32 (%p1) %v{}, %v{}", sum + mi, acc + mi, pop + mi));
        b[store_bundle + mi].push_back(
            fmt::format("%{} = vst (%p1) [vmem:[{}] sm:$0xff] /*vst_source=*/%v{}", next_token(), addr, sum + mi));
      }
    }
    if (chunked()) {
      chunked_pointer(b, drain, loop, iterations, acc_stride);
    } else {
      plain_pointer(b, drain, loop, iterations, acc_stride);
    }
    for (std::size_t i = 0; i < b.size(); ++i) {
      w_.bundle(b[i], i == 0 ? (drain   ? "drain: results still in flight"
                                : latch ? "row pair 0: latch the weights"
                                        : "row pair t")
                             : "");
    }
  }

  // The collective matmul's pop pointer (its scalar ops in the row pair's
  // bundles, at most 2 a bundle): the pipeline runs on across segments. s7
  // advances one row pair per iteration; at the end of the accumulator (p7)
  // it goes back to its start (s17) for the segment's next k-block (s63
  // counts the pops' k-blocks), or, after the segment's last k-block, on to
  // the next segment's accumulator (s17 + one accumulator, back to the first
  // (s18) after the last (s20): the next chunk), s17 / s32 moving with it.
  // p10 (the pops' k-block is the first of a chunk-0 segment, so they add to
  // the zero block) is s63 == s57, s57 = 0 in chunk 0 and KC + 1 (never)
  // from the first wrap to the first accumulator on. Temporaries: s22, s25,
  // s26, s29, s30, p6, p9, p15 (dead outside the row loop's bundles here).
  void chunked_pointer(std::array<std::vector<std::string>, 16>& b, bool drain, const std::string& loop,
                       std::uint64_t iterations, std::uint64_t acc_stride) {
    b[0].push_back("%p10 = scmp.eq.s32.totalorder %s63, %s57");
    b[1].push_back("%s37 = scalar_select /*predicate=*/%p10, /*on_true=*/%s48, /*on_false=*/%s7");
    b[1].push_back(fmt::format("%s33 = sadd.s32 %s7, {}", acc_stride));
    b[2].push_back("%p7 = scmp.eq.s32.totalorder %s33, %s32");
    b[2].push_back("%s25 = sadd.s32 %s63, 1");
    b[3].push_back(fmt::format("%p9 = scmp.eq.s32.totalorder %s25, {}", ktc_));
    b[3].push_back(fmt::format("%s26 = sadd.s32 %s17, {}", acc_rows()));
    b[4].push_back("%p6 = scmp.eq.s32.totalorder %s26, %s20");
    b[5].push_back("%s26 = scalar_select /*predicate=*/%p6, /*on_true=*/%s18, /*on_false=*/%s26");
    b[5].push_back("%p15 = pnand %p9, %p6");
    b[6].push_back("%s25 = scalar_select /*predicate=*/%p9, /*on_true=*/0, /*on_false=*/%s25");
    b[6].push_back(fmt::format("%s29 = scalar_select /*predicate=*/%p15, /*on_true=*/%s57, /*on_false=*/{}", ktc_ + 1));
    b[7].push_back(fmt::format("%s30 = sadd.s32 %s26, {}", g2_ * acc_stride));
    b[7].push_back("%s22 = scalar_select /*predicate=*/%p9, /*on_true=*/%s26, /*on_false=*/%s17");
    b[8].push_back(fmt::format("%p2 = scmp.lt.s32.totalorder %s5, {}", iterations - 1));
    b[8].push_back("%p9 = pnand %p9, %p7");
    b[9].push_back("%s63 = scalar_select /*predicate=*/%p7, /*on_true=*/%s25, /*on_false=*/%s63");
    b[9].push_back("%s57 = scalar_select /*predicate=*/%p7, /*on_true=*/%s29, /*on_false=*/%s57");
    b[10].push_back("%s17 = scalar_select /*predicate=*/%p9, /*on_true=*/%s17, /*on_false=*/%s26");
    b[10].push_back("%s32 = scalar_select /*predicate=*/%p9, /*on_true=*/%s32, /*on_false=*/%s30");
    if (!loop.empty()) b[11].push_back(fmt::format("%{} = sbr.rel (%p2) target = {}", next_token(), loop));
    b[12].push_back("%s5 = sadd.s32 %s5, 1");
    b[12].push_back("%s8 = sadd.s32 %s8, 1");
    if (!drain) b[15].push_back(fmt::format("%p1 = scmp.ge.s32.totalorder %s8, {}", d_));
    b[15].push_back("%s7 = scalar_select /*predicate=*/%p7, /*on_true=*/%s22, /*on_false=*/%s33");
  }

  void plain_pointer(std::array<std::vector<std::string>, 16>& b, bool drain, const std::string& loop,
                     std::uint64_t iterations, std::uint64_t acc_stride) {
    // Loop control: continue while t < iterations - 1 (t before the increment). The pop
    // pointer advances one iteration and wraps at the end of the accumulator.
    b[8].push_back(fmt::format("%p2 = scmp.lt.s32.totalorder %s5, {}", iterations - 1));
    if (!loop.empty()) b[11].push_back(fmt::format("%{} = sbr.rel (%p2) target = {}", next_token(), loop));
    b[12].push_back("%s5 = sadd.s32 %s5, 1");
    b[12].push_back("%s8 = sadd.s32 %s8, 1");
    b[13].push_back(fmt::format("%s33 = sadd.s32 %s7, {}", acc_stride));
    if (fresh()) {
      // The load base of this iteration's pops (s7 is final from the previous iteration's bundle 15),
      // and whether the next iteration's pops are k-block 0's (s8 advanced in bundle 12).
      b[0].push_back("%s37 = scalar_select /*predicate=*/%p10, /*on_true=*/%s48, /*on_false=*/%s7");
      // Split rows: part j's load base s(60 + j), used from bundle 4 (parts 1, 2) or 5 (part 3) on.
      for (std::uint64_t j = 1; j < row_parts_; ++j) {
        const std::string reg = fmt::format("s{}", 60 + j);
        const std::size_t add = j < 3 ? 1 : 3;
        b[add].push_back(fmt::format("%{} = sadd.s32 %s7, {}", reg, j * iters_ * acc_stride));
        b[add + 1].push_back(
            fmt::format("%{0} = scalar_select /*predicate=*/%p10, /*on_true=*/%s48, /*on_false=*/%{0}", reg));
      }
      b[14].push_back(fmt::format("%p10 = scmp.lt.s32.totalorder %s8, {}", first_limit_));
    }
    b[14].push_back("%p7 = scmp.eq.s32.totalorder %s33, %s32");
    if (!drain) b[15].push_back(fmt::format("%p1 = scmp.ge.s32.totalorder %s8, {}", d_));
    b[15].push_back("%s7 = scalar_select /*predicate=*/%p7, /*on_true=*/%s17, /*on_false=*/%s33");
  }

  const MatmulSpec& s_;
  const ChipConfig& chip_;
  LloWriter w_;
  bool bf16_ = true;
  bool out_bf16_ = false;     // C in bf16 (MatmulSpec::out_dtype)
  std::uint64_t c_gr_ = 128;  // 32-byte granules per C tile in HBM: 128 (f32), 64 (bf16)
  std::uint64_t tile_bytes_ = 0, tile_gr_ = 0, g_ = 0, g2_ = 0, kt_ = 0, nt_ = 0, k8_ = 0, wfull_ = 0;
  std::uint64_t a_block_tiles_ = 0, a_block_shift_ = 0;  // KC: 128-column tiles per column block of A, log2(KC)
  std::uint64_t latency_ = 0, d_ = 0;
  ChunkRing cr_;                   // the collective matmul's chunks (chunks 1: a plain matmul)
  CorePlan split_;                 // the core split (cores 1: none)
  std::uint64_t ldn_ = 0;          // column tiles of the whole B and C (their HBM row of tiles)
  std::uint64_t ktc_ = 0;          // k-blocks per chunk
  std::uint64_t first_limit_ = 0;  // first_kblock_predicate()
  std::uint64_t depth_ = 2;        // prefetch depth P (plan_depth)
  bool resident_ = false;          // A kept in VMEM across column blocks (plan_depth)
  std::uint64_t row_blocks_ = 1;   // row blocks R (choose_row_blocks); g_ is one block's row tiles
  std::uint64_t core_g_ = 0;       // row tiles of A and C this core computes (all its row blocks)
  std::uint64_t row_parts_ = 1;    // the column block being emitted: its rows' parts (split_rows; 1: not split)
  std::uint64_t iters_ = 0;        // its row loop's iterations per k-block: G2 / row_parts_
  bool compute_bound_ = false;     // a k-block computes for at least its transfer (plan_depth)
  std::uint64_t a_buf_bytes_ = 0, b_buf_bytes_ = 0, acc_bytes_ = 0;
  std::uint32_t token_ = 100;
  int label_ = 0;
};

}  // namespace

std::string generate_matmul(const MatmulSpec& spec, const ChipConfig& chip) {
  if (chip.mxu.count == 0) {  // a GPU endpoint: the schedule would divide by the MXU count
    throw std::invalid_argument(fmt::format(
        "matmul: {} has no MXU (mxu.count 0); the generator targets TPU MXUs (e.g. --chip v5e)", chip.name));
  }
  if (chip.mxu.size > chip.vpu.lanes) {
    throw std::invalid_argument(fmt::format(
        "matmul: {}'s {}x{} MXU is not modelled (the model's vreg interface to an MXU is {} lanes wide); the generator "
        "targets MXUs of at most 128x128 (e.g. --chip v5e)",
        chip.name, chip.mxu.size, chip.mxu.size, chip.vpu.lanes));
  }
  if (chip.mxu.size < 128) {
    if (spec.split_cores > 1) throw std::invalid_argument("matmul: a core split needs 128x128 MXUs");
    if (spec.out_dtype != "f32") throw std::invalid_argument("matmul: a bf16 C needs 128x128 MXUs");
    return generate_small_matmul(spec, chip);
  }
  if (spec.split_cores > 1) {
    if (spec.split_cores != chip.tensorcores_per_chip) {
      throw std::invalid_argument(
          fmt::format("matmul: a split over {} cores on {}, which has {} TensorCore(s) per chip", spec.split_cores,
                      chip.name, chip.tensorcores_per_chip));
    }
    if (chip.sflag.count < 64) throw std::invalid_argument("matmul: a core split needs at least 64 sync flags");
    const CoreSplit how = matmul_core_split(spec, chip);
    if (how == CoreSplit::kNone) {
      throw std::invalid_argument(fmt::format(
          "matmul: {}x{}x{} does not split over {} cores (N in whole 128-column tiles per core, or M in multiples "
          "of 16 rows per core with A one column block)",
          spec.m, spec.k, spec.n, spec.split_cores));
    }
    MatmulSpec share = spec;
    if (how == CoreSplit::kColumns) {
      share.n = spec.n / spec.split_cores;
    } else {
      share.m = spec.m / spec.split_cores;
    }
    MatmulGen gen(share, chip, {}, CorePlan{spec.split_cores, how, spec.m, spec.n});
    return gen.run();
  }
  MatmulGen gen(spec, chip);
  return gen.run();
}

CoreSplit matmul_core_split(const MatmulSpec& spec, const ChipConfig& chip) {
  const std::uint64_t s = spec.split_cores;
  if (s <= 1) return CoreSplit::kNone;
  const bool columns = spec.n % (128 * s) == 0;
  const bool rows = spec.m % (16 * s) == 0 && spec.a_column_blocks == 1;
  if (!columns || !rows) return columns ? CoreSplit::kColumns : rows ? CoreSplit::kRows : CoreSplit::kNone;
  // Both: the one whose share takes fewer MXU cycles. A column block costs
  // the same whatever its width (1 to mxu.count tiles): per k-block its row
  // pairs (16 cycles each) and 16 weight pushes, and the pipeline's fill and
  // drain (about 2 x 136 cycles on the v5p preset) per column block; a block
  // of a half or a quarter of the MXUs splits its rows over all of them
  // (MatmulGen::split_rows) and takes that share of the row pairs' cycles.
  const std::uint64_t w = std::max<std::uint64_t>(1, chip.mxu.count);
  const std::uint64_t kt = ceil_div(spec.k, 128);
  const auto cost = [&](std::uint64_t rows_per_core, std::uint64_t tiles_per_core) {
    const std::uint64_t pairs = ceil_div(rows_per_core, 16);
    std::uint64_t total = 0;
    for (std::uint64_t left = tiles_per_core; left > 0;) {
      const std::uint64_t block = std::min(left, w);
      total += kt * (16 * pairs / split_row_parts(block, pairs, spec.accumulate, chip) + 16) + 272;
      left -= block;
    }
    return total;
  };
  const std::uint64_t nt = spec.n / 128;
  const std::uint64_t by_columns = cost(spec.m, nt / s);
  const std::uint64_t by_rows = cost(spec.m / s, nt);
  // Within 2 % (the MXU-cycle estimate's resolution): the split that reads
  // the smaller operand twice (both cores read all of A when split by
  // columns, all of B when split by rows): 2560x768x1280, 1.8 % apart,
  // measured 16.70 us by rows, 17.40 us by columns.
  const std::uint64_t most = std::max(by_columns, by_rows);
  if (50 * (most - std::min(by_columns, by_rows)) <= most) {
    return spec.m >= spec.n ? CoreSplit::kRows : CoreSplit::kColumns;
  }
  return by_columns < by_rows ? CoreSplit::kColumns : CoreSplit::kRows;
}

std::string generate_collective_matmul(const CollectiveMatmulSpec& spec, const ici::Topology& topology,
                                       const ChipConfig& chip) {
  if (spec.axis >= topology.axis_count()) {
    throw std::invalid_argument(fmt::format("collective matmul: axis {} is not one of the topology's {} axes",
                                            ici::axis_name(spec.axis), topology.axis_count()));
  }
  const std::uint64_t length = topology.length(spec.axis);
  if (spec.chunks < 2 || spec.chunks != length) {
    throw std::invalid_argument(
        fmt::format("collective matmul: {} chunks on an axis of {} chips (needs 2 or more, one "
                    "per chip of the axis)",
                    spec.chunks, length));
  }
  if (chip.mxu.count == 0 || chip.mxu.size != 128) {
    throw std::invalid_argument(fmt::format(
        "collective matmul: {} has no 128x128 MXUs; the generator targets them (e.g. --chip v5e)", chip.name));
  }
  if (spec.m == 0 || spec.k_chunk == 0 || spec.n == 0) {
    throw std::invalid_argument("collective matmul: M, the chunk and N must be positive");
  }
  std::uint64_t stride = 1;  // linear ids: x + X*(y + Y*z)
  for (std::size_t a = 0; a < spec.axis; ++a) stride *= topology.length(a);
  const MatmulSpec matmul{spec.m, spec.k_chunk * spec.chunks, spec.n, "bf16", true};
  MatmulGen gen(
      matmul, chip,
      ChunkRing{spec.chunks, ici::axis_name(spec.axis), length, stride, folded_ring_axis(topology, spec.axis)});
  return gen.run();
}

std::string generate_add(const AddSpec& spec, const ChipConfig& chip) {
  if (spec.n == 0) throw std::invalid_argument("add: --n must be positive");
  if (spec.chunk_bytes == 0) throw std::invalid_argument("add: --chunk must be positive");
  if (spec.a_dtype != "f32" && spec.a_dtype != "bf16") {
    throw std::invalid_argument(fmt::format("add: A's dtype '{}': expected f32 or bf16", spec.a_dtype));
  }
  const bool a_bf16 = spec.a_dtype == "bf16";
  // f32 tiles of 4 KiB; a bf16 A goes by pairs of them (one vreg of A each).
  const std::uint64_t unit = a_bf16 ? 8192 : 4096;
  if (spec.chunk_bytes % unit != 0) {
    throw std::invalid_argument(fmt::format("add: --chunk {} is not a whole number of {}-byte {} ({}, {}, ...)",
                                            spec.chunk_bytes, unit,
                                            a_bf16 ? "pairs of f32 tiles (a bf16 A)" : "f32 tiles", unit, 2 * unit));
  }
  if (a_bf16 && spec.n * 4 % unit != 0) {
    throw std::invalid_argument(
        fmt::format("add: a bf16 A needs whole pairs of f32 tiles (n a multiple of 2048), n = {}", spec.n));
  }
  check_operands_fit_hbm("add", {{1, spec.n, a_bf16 ? 2U : 4U}, {1, spec.n, 4}, {1, spec.n, 4}}, chip);
  const std::uint64_t bytes = ceil_div(spec.n * 4, 4096) * 4096;  // device size of one f32 operand
  const std::uint64_t chunk = ceil_div(std::min(spec.chunk_bytes, bytes), unit) * unit;
  const std::uint64_t chunks = ceil_div(bytes, chunk);
  const std::uint64_t last = bytes - (chunks - 1) * chunk;
  const std::uint64_t a_chunk = a_bf16 ? chunk / 2 : chunk;  // bytes of A per chunk
  if (6 * chunk > chip.vmem.size_bytes) throw std::invalid_argument("add: chunk too large for VMEM");
  LloWriter w(chip);
  std::uint32_t token = 100;
  w.raw(fmt::format(
      "// Generated by `tpuemu gen add --n {} --chunk {}` for {}: C = A + B over f32[{}]{}, {} chunks of {} "
      "bytes,",
      spec.n, spec.chunk_bytes, chip.name, spec.n, a_bf16 ? " (A bf16, widened)" : "", chunks, chunk));
  w.raw("// double-buffered: chunk i+1 streams in while chunk i is added and chunk i-1 streams out.");
  for (int p = 0; p < 2; ++p) {
    w.raw(fmt::format("#allocation{} [shape = '{}[{}]', space=vmem, size = 0x{:x}, tag = 'A chunk {}']", p,
                      spec.a_dtype, a_chunk / (a_bf16 ? 2 : 4), a_chunk, p));
    w.raw(fmt::format("#allocation{} [shape = 'f32[{}]', space=vmem, size = 0x{:x}, tag = 'B chunk {}']", 2 + p,
                      chunk / 4, chunk, p));
    w.raw(fmt::format("#allocation{} [shape = 'f32[{}]', space=vmem, size = 0x{:x}, tag = 'C chunk {}']", 4 + p,
                      chunk / 4, chunk, p));
  }
  w.raw("#allocation6 [shape = 's32[4]', space=sflag, size = 0x10, tag = 'flags: in0 in1 out0 out1']");
  w.bundle(
      {fmt::format("%s0 = inlined_call_operand.hbm [shape: {}[{}], index: 0, kind: input, shape index: {{}}]",
                   spec.a_dtype, spec.n),
       fmt::format("%s1 = inlined_call_operand.hbm [shape: f32[{}], index: 1, kind: input, shape index: {{}}]", spec.n),
       fmt::format("%s2 = inlined_call_operand.hbm [shape: f32[{}], index: 2, kind: output, shape index: {{}}]",
                   spec.n)},
      "operand bindings");
  for (int f = 0; f < 4; ++f)
    w.op(S::kSync, fmt::format("%{} = vsyncpa [#allocation6 + $0x{:x}], 0", token++, f), {}, {});
  const std::uint64_t gr = chunk / 32;
  auto load = [&](std::uint64_t i) {
    const int p = static_cast<int>(i % 2);
    for (int operand = 0; operand < 2; ++operand) {
      const std::uint64_t half = operand == 0 && a_bf16 ? 2 : 1;  // a bf16 A: half the bytes
      const std::uint64_t n = (i + 1 == chunks ? last : chunk) / 32 / half;
      w.op(S::kSalu, fmt::format("%s{} = sshll.u32 %s{}, 4", 10 + operand, operand), {fmt::format("s{}", operand)},
           {fmt::format("s{}", 10 + operand)});
      w.op(S::kSalu, fmt::format("%s{0} = sadd.s32 %s{0}, {1}", 10 + operand, i * gr / half),
           {fmt::format("s{}", 10 + operand)}, {fmt::format("s{}", 10 + operand)});
      w.op(S::kSalu, fmt::format("%s{} = smov [#allocation{}]", 12 + operand, 2 * operand + p), {},
           {fmt::format("s{}", 12 + operand)});
      w.op(S::kSalu, fmt::format("%s{0} = sshll.u32 %s{0}, 4", 12 + operand), {fmt::format("s{}", 12 + operand)},
           {fmt::format("s{}", 12 + operand)});
      w.op(S::kDma,
           fmt::format("%{} = dma.hbm_to_vmem [thread:$0] /*hbm=*/%s{}, /*size_in_granules=*/{}, /*vmem=*/%s{}, "
                       "/*dst_syncflagno=*/[#allocation6 + $0x{:x}]",
                       token++, 10 + operand, n, 12 + operand, p),
           {fmt::format("s{}", 10 + operand), fmt::format("s{}", 12 + operand)}, {});
    }
  };
  // The add of one chunk is a loop over its vregs (one load pair, add and store per vreg).
  auto compute_and_store = [&](std::uint64_t i) {
    const int p = static_cast<int>(i % 2);
    const std::uint64_t bytes_i = i + 1 == chunks ? last : chunk;
    const std::uint64_t n = bytes_i / 32;
    const std::uint64_t in = a_bf16 ? n + n / 2 : 2 * n;  // granules of A and B
    w.op(S::kSync, fmt::format("%{} = dma.done.wait [#allocation6 + $0x{:x}], {}", token++, p, in), {}, {});
    w.op(S::kSync, fmt::format("%{} = vsyncadd [#allocation6 + $0x{:x}], {}", token++, p, negated_immediate(in)), {},
         {});
    if (i >= 2) {  // the C buffer's previous output DMA must have left
      const std::uint64_t prev = chunk / 32;
      w.op(S::kSync, fmt::format("%{} = dma.done.wait [#allocation6 + $0x{:x}], {}", token++, 2 + p, prev), {}, {});
      w.op(S::kSync,
           fmt::format("%{} = vsyncadd [#allocation6 + $0x{:x}], {}", token++, 2 + p, negated_immediate(prev)), {}, {});
    }
    w.op(S::kSalu, fmt::format("%s3 = smov [#allocation{}]", p), {}, {"s3"});
    w.op(S::kSalu, fmt::format("%s4 = smov [#allocation{}]", 2 + p), {}, {"s4"});
    w.op(S::kSalu, fmt::format("%s5 = smov [#allocation{}]", 4 + p), {}, {"s5"});
    w.op(S::kSalu, "%s6 = smov 0", {}, {"s6"});
    const std::string loop = fmt::format("add_loop_{}", i);
    w.label(loop);
    if (a_bf16) {
      // One vreg of A (f32 tiles 2j, 2j + 1: vunpack's low and high halves) and two of B per iteration,
      // placed by the writer within the chip's slots.
      w.op(S::kLoad, "%v0 = vld [vmem:[%s3] sm:$0xff]", {"s3"}, {"v0"});
      w.op(S::kLoad, "%v1 = vld [vmem:[%s4] sm:$0xff]", {"s4"}, {"v1"});
      w.op(S::kLoad, "%v2 = vld [vmem:[%s4 + $0x8] sm:$0xff]", {"s4"}, {"v2"});
      w.op(S::kSalu, "%s3 = sadd.s32 %s3, 8", {"s3"}, {"s3"});
      w.op(S::kSalu, "%s4 = sadd.s32 %s4, 16", {"s4"}, {"s4"});
      w.op(S::kValu, "%v3 = vunpack.c.l.bf16 %v0", {"v0"}, {"v3"});
      w.op(S::kValu, "%v4 = vunpack.c.h.bf16 %v0", {"v0"}, {"v4"});
      w.op(S::kValu, "%v5 = vadd.f32 %v3, %v1", {"v3", "v1"}, {"v5"});
      w.op(S::kValu, "%v6 = vadd.f32 %v4, %v2", {"v4", "v2"}, {"v6"});
      w.op(S::kStore, fmt::format("%{} = vst [vmem:[%s5] sm:$0xff] /*vst_source=*/%v5", token++), {"s5", "v5"}, {});
      w.op(S::kStore, fmt::format("%{} = vst [vmem:[%s5 + $0x8] sm:$0xff] /*vst_source=*/%v6", token++), {"s5", "v6"},
           {});
      w.op(S::kSalu, "%s5 = sadd.s32 %s5, 16", {"s5"}, {"s5"});
      w.op(S::kSalu, "%s6 = sadd.s32 %s6, 1", {"s6"}, {"s6"});
      w.op(S::kSalu, fmt::format("%p0 = scmp.lt.s32.totalorder %s6, {}", bytes_i / 8192), {"s6"}, {"p0"});
      w.op(S::kBranch, fmt::format("%{} = sbr.rel (%p0) target = {}", token++, loop), {"p0"}, {});
      w.flush();
    } else {
      // One vreg per bundle: loads, add and store pipelined over 3 bundles of consecutive vregs.
      w.bundle({"%v0 = vld [vmem:[%s3] sm:$0xff]", "%v1 = vld [vmem:[%s4] sm:$0xff]", "%s3 = sadd.s32 %s3, 8",
                "%s4 = sadd.s32 %s4, 8"});
      w.bundle({"%v2 = vadd.f32 %v0, %v1", "%s6 = sadd.s32 %s6, 1"});
      w.bundle({fmt::format("%{} = vst [vmem:[%s5] sm:$0xff] /*vst_source=*/%v2", token++), "%s5 = sadd.s32 %s5, 8",
                fmt::format("%p0 = scmp.lt.s32.totalorder %s6, {}", bytes_i / 4096)});
      w.bundle({fmt::format("%{} = sbr.rel (%p0) target = {}", token++, loop)});
      for (std::uint64_t d = 0; d < chip.branch_delay_slots; ++d) w.bundle({});
    }
    w.op(S::kSalu, "%s7 = sshll.u32 %s2, 4", {"s2"}, {"s7"});
    w.op(S::kSalu, fmt::format("%s7 = sadd.s32 %s7, {}", i * gr), {"s7"}, {"s7"});
    w.op(S::kSalu, fmt::format("%s8 = smov [#allocation{}]", 4 + p), {}, {"s8"});
    w.op(S::kSalu, "%s8 = sshll.u32 %s8, 4", {"s8"}, {"s8"});
    w.op(S::kDma,
         fmt::format("%{} = dma.vmem_to_hbm [thread:$0] /*vmem=*/%s8, /*size_in_granules=*/{}, /*hbm=*/%s7, "
                     "/*dst_syncflagno=*/[#allocation6 + $0x{:x}]",
                     token++, n, 2 + p),
         {"s8", "s7"}, {});
  };
  load(0);
  for (std::uint64_t i = 0; i < chunks; ++i) {
    w.comment(fmt::format("chunk {} of {}", i, chunks));
    if (i + 1 < chunks) load(i + 1);
    compute_and_store(i);
  }
  w.comment("wait for the last output DMAs");
  for (std::uint64_t i = chunks >= 2 ? chunks - 2 : 0; i < chunks; ++i) {
    const std::uint64_t n = (i + 1 == chunks ? last : chunk) / 32;
    w.op(S::kSync, fmt::format("%{} = dma.done.wait [#allocation6 + $0x{:x}], {}", token++, 2 + i % 2, n), {}, {});
    w.op(S::kSync, fmt::format("%{} = vsyncadd [#allocation6 + $0x{:x}], {}", token++, 2 + i % 2, negated_immediate(n)),
         {}, {});
  }
  w.flush();
  return w.text();
}

}  // namespace tpuemu::programs
