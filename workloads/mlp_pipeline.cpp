// The mlp workload's pipeline strategy (--strategy pp; training.md's
// pipelining, GPipe's schedule): S = the x axis's chips are S stages, stage s
// (the chip at x = s) holding its own MLP block (Wi_s, Wo_s); the batch is
// split into M = --microbatches microbatches of B / M tokens.
//
// Forward slot t = 0 .. M+S-2: stage s works on microbatch t - s when that is
// in 0..M-1 (H = In @ Wi, Y = A @ Wo, Out = Y + In), then sends Out to stage
// s+1 (a remote DMA, ppermute-style), and the chips wait for their own send
// and their arrival. Backward slot u = 0 .. M+S-2: stage s works on
// microbatch u - (S-1-s) (dWo += A^T @ G, dA = G @ Wo^T, dWi += In^T @ dH,
// dX = dH @ Wi^T), then sends dX to stage s-1. Every step is one SPMD program;
// a chip with no microbatch in a slot branches over the step's work
// (a prologue on the generated matmul and add: sid.x outside the slot's
// stage range jumps to the end) and its send and wait do nothing, so the
// bubble, (S-1)/(M+S-1) of every chip's step, is idle time in the trace and
// in the step time.
//
// As for the other strategies, relu, its derivative, the casts and the
// transposes are given from the host: stage s+1's In is bf16(stage s's Out),
// stage s-1's G is bf16(stage s's dX + G) (the residual's gradient); the
// activations and gradients sent between stages are checked byte for byte
// where they arrive. Weight gradients accumulate over the microbatches in
// order m = 0 .. M-1 from zeros (MatmulSpec::accumulate; the reference:
// programs::matmul_reference with c_in).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "api/errors.hpp"
#include "api/run.hpp"
#include "common/numerics.hpp"
#include "common/units.hpp"
#include "programs/generators.hpp"
#include "programs/reference.hpp"
#include "workloads/mlp.hpp"
#include "workloads/pieces.hpp"

namespace tpuemu::workloads {
namespace {

constexpr std::uint64_t kGranule = 32;

// A program that runs only on core 0 of the chips at x in [lo, hi] (with
// `every_core`, on every core of them: a matmul split over the chip's cores,
// pieces.hpp on_every_core): the others branch from after the operand bundle
// to the end (sbr.rel's 4 delay slots empty). Otherwise core 0 alone: on a
// megacore chip two cores accumulating the whole of one dWo would each add
// their product.
std::string only_on_stages(std::string text, std::int64_t lo, std::int64_t hi, bool every_core = false) {
  const std::size_t operands = text.find("{ %s0 = inlined_call_operand");
  if (operands == std::string::npos) throw std::logic_error("mlp pp: a program without its operand bundle");
  const std::size_t after = text.find('\n', operands) + 1;
  text.insert(after,
              fmt::format("{{ %s50 = sid.x ;; %s51 = sid.core }}\n"
                          "{{ %p14 = scmp.lt.s32.totalorder %s50, {} ;; %p15 = scmp.gt.s32.totalorder %s50, {} }}\n"
                          "{{ %p14 = por %p14, %p15 ;; %p13 = scmp.ne.s32.totalorder %s51, {} }}\n"
                          "{{ %p14 = por %p14, %p13 }}\n"
                          "{{ %9990 = sbr.rel (%p14) target = pipeline_idle }}\n{{}}\n{{}}\n{{}}\n{{}}\n",
                          lo, hi, every_core ? "%s51" : "0"));
  text += "pipeline_idle:\n{}\n";
  return text;
}

// The two flags at the top of the flag space (the ring shift's: no other step uses them).
std::string shift_flags(const ChipConfig& chip) {
  return fmt::format(
      "#allocation0 [shape = 's32[2]{{0}}', space=sflag, size = 0x8, offset = 0x{:x}, tag = 'pipeline send: sent, "
      "arrived']\n\n",
      (chip.sflag.count - 2) * 4);
}

// Send: core 0 of the chips at x in [lo, hi] sends operand 0 (bytes) to operand 1 of the chip at x + dir.
std::string pipeline_send(std::uint64_t bytes, std::int64_t lo, std::int64_t hi, int dir, const ChipConfig& chip) {
  const std::string shape = fmt::format("bf16[{}]", bytes / 2);
  std::string t =
      fmt::format("// Pipeline send: stages {}..{} send {} B to stage x {} 1.\n", lo, hi, bytes, dir > 0 ? "+" : "-");
  t += shift_flags(chip);
  t += fmt::format(
      "{{ %s0 = inlined_call_operand.hbm [shape: {0}, index: 0, kind: input, shape index: {{}}] ;; %s1 = "
      "inlined_call_operand.hbm [shape: {0}, index: 1, kind: output, shape index: {{}}] }}\n",
      shape);
  t += "{ %s2 = sid.x ;; %s3 = sid.chip }\n";
  t += fmt::format("{{ %s4 = sid.core ;; %p0 = scmp.lt.s32.totalorder %s2, {} }}\n", lo);
  t += fmt::format("{{ %p2 = scmp.gt.s32.totalorder %s2, {} ;; %p3 = scmp.ne.s32.totalorder %s4, 0 }}\n", hi);
  t += fmt::format("{{ %p0 = por %p0, %p2 ;; %s5 = {} %s3, 1 }}\n", dir > 0 ? "sadd.s32" : "ssub.s32");
  t += "{ %p0 = por %p0, %p3 ;; %s8 = sshll.u32 %s0, 4 }\n";
  t += "{ %p1 = pneg %p0 ;; %s9 = sshll.u32 %s1, 4 }\n";
  t += fmt::format(
      "{{ %10 = dma.remote.hbm_to_hbm [thread:$0] (%p1) /*src=*/%s8, /*size_in_granules=*/{}, /*chip=*/%s5, "
      "/*core=*/%s4, /*dst=*/%s9, /*src_syncflagno=*/[#allocation0], /*dst_syncflagno=*/[#allocation0 + $0x1] }}\n",
      bytes / kGranule);
  return t;
}

// Wait: the senders (x in [lo, hi]) wait for their send to leave, the
// receivers (x in [lo + dir, hi + dir]) for its arrival; each consumes its count.
std::string pipeline_wait(std::uint64_t bytes, std::int64_t lo, std::int64_t hi, int dir, const ChipConfig& chip) {
  const std::uint64_t n = bytes / kGranule;
  std::string t = "// Pipeline wait: senders for their send, receivers for their arrival.\n";
  t += shift_flags(chip);
  t += "{ %s2 = sid.x ;; %s4 = sid.core }\n";
  t += fmt::format("{{ %p3 = scmp.ne.s32.totalorder %s4, 0 ;; %p0 = scmp.lt.s32.totalorder %s2, {} }}\n", lo);
  t +=
      fmt::format("{{ %p2 = scmp.gt.s32.totalorder %s2, {} ;; %p5 = scmp.lt.s32.totalorder %s2, {} }}\n", hi, lo + dir);
  t += fmt::format("{{ %p0 = por %p0, %p2 ;; %p6 = scmp.gt.s32.totalorder %s2, {} }}\n", hi + dir);
  t += "{ %p0 = por %p0, %p3 ;; %p5 = por %p5, %p6 }\n";
  t += "{ %p1 = pneg %p0 ;; %p5 = por %p5, %p3 }\n";
  t += "{ %p7 = pneg %p5 }\n";
  t += fmt::format("{{ %10 = dma.done.wait (%p1) [#allocation0], {} }}\n", n);
  t += fmt::format("{{ %11 = vsyncadd (%p1) [#allocation0], {} }}\n", (1ULL << 32) - n);
  t += fmt::format("{{ %12 = dma.done.wait (%p7) [#allocation0 + $0x1], {} }}\n", n);
  t += fmt::format("{{ %13 = vsyncadd (%p7) [#allocation0 + $0x1], {} }}\n", (1ULL << 32) - n);
  return t;
}

std::vector<float> bf16_all(std::vector<float> v) {
  for (float& x : v) x = bf16_round(x);
  return v;
}

// Host values of every stage s and microbatch m, in stage-major order [s * M + m].
struct PipelineReference {
  std::once_flag once;
  std::vector<std::vector<float>> wi, wo;                           // per stage
  std::vector<std::vector<float>> in, h, a, out, g, d_a, d_h, d_x;  // per (s, m)
  std::vector<std::vector<float>> d_wo, d_wi;                       // per stage, accumulated
};

}  // namespace

Built build_mlp_pipeline(const Setup& setup, const OptionValues& options) {
  const ChipConfig& chip = setup.chip;
  const ici::Topology& topology = setup.topology;
  for (std::size_t a = 1; a < topology.axis_count(); ++a) {
    if (topology.length(a) != 1) {
      throw api::BadInput(fmt::format(
          "--strategy pp: the pipeline's stages are the x axis's chips; --topology {} has other axes longer than 1 "
          "(try --topology {})",
          topology.shape(), topology.length(0)));
    }
  }
  constexpr std::uint64_t kMaxDim = 1ULL << 22;
  const std::uint64_t B = options.whole("batch", 1, kMaxDim);
  const std::uint64_t D = options.whole("d-model", 1, kMaxDim);
  const std::uint64_t F = options.whole("d-ff", 1, kMaxDim);
  const std::uint64_t M = options.text("microbatches").empty() ? 1 : options.whole("microbatches", 1, 1024);
  const auto seed = static_cast<std::uint32_t>(options.whole("seed", 0, std::numeric_limits<std::uint32_t>::max()));
  const auto S = static_cast<std::int64_t>(topology.length(0));
  if (B % M != 0) {
    throw api::BadInput(fmt::format("--batch {}: --microbatches {} does not split it into equal microbatches", B, M));
  }
  const std::uint64_t mb = B / M;
  if (mb % kTileCols != 0) {
    throw api::BadInput(
        fmt::format("--batch {} / --microbatches {}: each microbatch's {} tokens must be a multiple "
                    "of {} (the weight gradients' contracting dimension)",
                    B, M, mb, kTileCols));
  }
  if (D % kTileCols != 0 || F % kTileCols != 0) {
    throw api::BadInput(
        fmt::format("--d-model {} / --d-ff {}: both must be multiples of {} (whole tiles)", D, F, kTileCols));
  }

  Built built;
  // Per step: the stages with a microbatch in its slot.
  std::vector<std::pair<std::int64_t, std::int64_t>> slots;
  const auto mm = [](std::uint64_t m, std::uint64_t k, std::uint64_t n, bool accumulate) {
    programs::MatmulSpec spec{m, k, n, "bf16", true};
    spec.accumulate = accumulate;
    return spec;
  };
  const auto slot_range = [&](std::int64_t t, bool forward) {
    // Stages with a microbatch in slot t: forward m = t - s, backward m = t - (S-1-s).
    const std::int64_t m_hi = static_cast<std::int64_t>(M) - 1;
    if (forward) return std::make_pair(std::max<std::int64_t>(0, t - m_hi), std::min<std::int64_t>(S - 1, t));
    return std::make_pair(std::max<std::int64_t>(0, S - 1 - t), std::min<std::int64_t>(S - 1, S - 1 - t + m_hi));
  };
  try {
    refuse_other_mxu(chip, "mlp");
    const auto add_matmul = [&](const std::string& what, const programs::MatmulSpec& whole, std::int64_t lo,
                                std::int64_t hi, const std::string& a, const std::string& b, const std::string& c) {
      const programs::MatmulSpec spec = on_every_core(whole, chip);
      const std::string file = fmt::format("matmul_{}x{}x{}{}_stages{}-{}.llo", spec.m, spec.k, spec.n,
                                           spec.accumulate ? "_acc" : "", lo, hi);
      built.steps.push_back({api::assemble(only_on_stages(sized_matmul(spec, chip, what, B, D, F), lo, hi,
                                                          /*every_core=*/spec.split_cores > 1),
                                           file),
                             file,
                             {{0, a}, {1, b}, {2, c}}});
      Phase p = matmul_phase(spec, chip);
      p.name = fmt::format("{} s{}-{}", what, lo, hi);
      built.phases.push_back(std::move(p));
    };
    const auto add_transfer = [&](const std::string& what, std::uint64_t bytes, std::int64_t lo, std::int64_t hi,
                                  int dir, const std::string& from, const std::string& to) {
      if (lo > hi) return;
      const std::string send_file = fmt::format("pipeline_send_{}_{}_{}.llo", dir > 0 ? "up" : "down", lo, hi);
      built.steps.push_back(
          {api::assemble(pipeline_send(bytes, lo, hi, dir, chip), send_file), send_file, {{0, from}, {1, to}}});
      Phase send;
      send.name = fmt::format("send {} s{}-{} -> {}", what, lo, hi, dir > 0 ? "s+1" : "s-1");
      send.communication = true;
      send.own_flags = true;
      send.book_seconds = static_cast<double>(bytes) / chip.ici.link_bandwidth + chip.ici.hop_latency_s;
      send.predicted_seconds = 0;
      send.prediction = "issue only";
      send.detail = {{"op", "send"}, {"axes", "X"}, {"bytes", bytes}};
      built.phases.push_back(std::move(send));
      const std::string wait_file = fmt::format("pipeline_wait_{}_{}_{}.llo", dir > 0 ? "up" : "down", lo, hi);
      built.steps.push_back({api::assemble(pipeline_wait(bytes, lo, hi, dir, chip), wait_file), wait_file, {}});
      Phase wait;
      wait.name = fmt::format("wait {}", what);
      wait.communication = true;
      wait.own_flags = true;
      wait.predicted_seconds = static_cast<double>(bytes) / chip.ici.link_bandwidth + chip.ici.hop_latency_s;
      wait.prediction = "V / B + T_min: one link, one hop";
      wait.detail = {{"op", "send-wait"}, {"axes", "X"}, {"bytes", bytes}};
      built.phases.push_back(std::move(wait));
    };
    const std::uint64_t act_bytes = mb * D * 4;
    const auto record = [&](std::pair<std::int64_t, std::int64_t> range) { slots.resize(built.steps.size(), range); };
    for (std::int64_t t = 0; t < static_cast<std::int64_t>(M) + S - 1; ++t) {
      const auto [lo, hi] = slot_range(t, true);
      add_matmul(fmt::format("fwd {} H = In @ Wi", t), mm(mb, D, F, false), lo, hi, fmt::format("In {}", t), "Wi",
                 fmt::format("H {}", t));
      add_matmul(fmt::format("fwd {} Y = A @ Wo", t), mm(mb, F, D, false), lo, hi, fmt::format("A {}", t), "Wo",
                 fmt::format("Y {}", t));
      const programs::AddSpec add{mb * D, std::min<std::uint64_t>(1 << 20, mb * D * 4)};
      const std::string add_file = fmt::format("add_{}_stages{}-{}.llo", add.n, lo, hi);
      built.steps.push_back(
          {api::assemble(only_on_stages(programs::generate_add(add, chip), lo, hi), add_file),
           add_file,
           {{0, fmt::format("Y {}", t)}, {1, fmt::format("In f32 {}", t)}, {2, fmt::format("Out {}", t)}}});
      Phase p;
      p.name = fmt::format("fwd {} Out = Y + In s{}-{}", t, lo, hi);
      p.predicted_seconds = 12.0 * static_cast<double>(add.n) / chip.hbm.bandwidth;
      p.prediction = "T_HBM (the book counts no time for it)";
      p.detail = {{"op", "add"}, {"elements", add.n}};
      built.phases.push_back(std::move(p));
      add_transfer(fmt::format("Out {}", t), act_bytes, lo, std::min(hi, S - 2), +1, fmt::format("Out {}", t),
                   fmt::format("received act {}", t));
      record({lo, hi});
    }
    for (std::int64_t u = 0; u < static_cast<std::int64_t>(M) + S - 1; ++u) {
      const auto [lo, hi] = slot_range(u, false);
      add_matmul(fmt::format("bwd {} dWo += A^T @ G", u), mm(F, mb, D, true), lo, hi, fmt::format("AT {}", u),
                 fmt::format("G {}", u), "dWo");
      add_matmul(fmt::format("bwd {} dA = G @ Wo^T", u), mm(mb, D, F, false), lo, hi, fmt::format("G {}", u), "WoT",
                 fmt::format("dA {}", u));
      add_matmul(fmt::format("bwd {} dWi += In^T @ dH", u), mm(D, mb, F, true), lo, hi, fmt::format("InT {}", u),
                 fmt::format("dH {}", u), "dWi");
      add_matmul(fmt::format("bwd {} dX = dH @ Wi^T", u), mm(mb, F, D, false), lo, hi, fmt::format("dH {}", u), "WiT",
                 fmt::format("dX {}", u));
      add_transfer(fmt::format("dX {}", u), act_bytes, std::max<std::int64_t>(lo, 1), hi, -1, fmt::format("dX {}", u),
                   fmt::format("received grad {}", u));
      record({lo, hi});
    }
  } catch (const std::invalid_argument& e) {
    throw api::BadInput(e.what());
  }
  const double bd = static_cast<double>(B), dd = static_cast<double>(D), fd = static_cast<double>(F);
  built.model_flops = 12 * bd * dd * fd * static_cast<double>(S);  // S blocks, one per stage

  // Host data: the forward through the stages, the backward back through them.
  const auto ref = std::make_shared<PipelineReference>();
  const std::uint64_t Mu = M;
  const auto compute = [=]() {
    PipelineReference& R = *ref;
    const auto x = programs::random_bf16_values(B * D, seed);
    const auto g_top = programs::random_bf16_values(B * D, seed + 3);
    const auto idx = [Mu](std::int64_t s, std::uint64_t m) { return static_cast<std::size_t>(s) * Mu + m; };
    const std::size_t n = static_cast<std::size_t>(S) * M;
    for (auto* v : {&R.in, &R.h, &R.a, &R.out, &R.g, &R.d_a, &R.d_h, &R.d_x}) v->resize(n);
    for (std::int64_t s = 0; s < S; ++s) {
      R.wi.push_back(programs::random_bf16_values(D * F, seed + 10 + 2 * static_cast<std::uint32_t>(s)));
      R.wo.push_back(programs::random_bf16_values(F * D, seed + 11 + 2 * static_cast<std::uint32_t>(s)));
    }
    for (std::uint64_t m = 0; m < M; ++m) {
      for (std::int64_t s = 0; s < S; ++s) {
        const std::size_t i = idx(s, m);
        R.in[i] = s == 0 ? matrix_block(x, D, m * mb, mb, 0, D) : bf16_all(R.out[idx(s - 1, m)]);
        R.h[i] = programs::matmul_reference(R.in[i], R.wi[s], mb, D, F);
        R.a[i].resize(R.h[i].size());
        for (std::size_t e = 0; e < R.a[i].size(); ++e) R.a[i][e] = bf16_round(std::max(R.h[i][e], 0.0F));
        R.out[i] = programs::matmul_reference(R.a[i], R.wo[s], mb, F, D);
        for (std::size_t e = 0; e < R.out[i].size(); ++e) R.out[i][e] += R.in[i][e];
      }
      for (std::int64_t s = S - 1; s >= 0; --s) {
        const std::size_t i = idx(s, m);
        if (s == S - 1) {
          R.g[i] = matrix_block(g_top, D, m * mb, mb, 0, D);
        } else {
          const std::size_t up = idx(s + 1, m);
          R.g[i] = R.d_x[up];
          for (std::size_t e = 0; e < R.g[i].size(); ++e) R.g[i][e] = bf16_round(R.g[i][e] + R.g[up][e]);
        }
        R.d_a[i] = programs::matmul_reference(R.g[i], transpose(R.wo[s], F, D), mb, D, F);
        R.d_h[i].resize(R.d_a[i].size());
        for (std::size_t e = 0; e < R.d_h[i].size(); ++e) R.d_h[i][e] = R.h[i][e] > 0 ? bf16_round(R.d_a[i][e]) : 0.0F;
        R.d_x[i] = programs::matmul_reference(R.d_h[i], transpose(R.wi[s], D, F), mb, F, D);
      }
    }
    for (std::int64_t s = 0; s < S; ++s) {
      std::vector<float> d_wo(F * D, 0.0F), d_wi(D * F, 0.0F);
      for (std::uint64_t m = 0; m < M; ++m) {
        const std::size_t i = idx(s, m);
        d_wo = programs::matmul_reference(transpose(R.a[i], mb, F), R.g[i], F, mb, D, 128, d_wo);
        d_wi = programs::matmul_reference(transpose(R.in[i], mb, D), R.d_h[i], D, mb, F, 128, d_wi);
      }
      R.d_wo.push_back(std::move(d_wo));
      R.d_wi.push_back(std::move(d_wi));
    }
  };
  const auto reference = [=]() -> const PipelineReference& {
    std::call_once(ref->once, compute);
    return *ref;
  };
  // Microbatch of stage s in forward slot t / backward slot u (or none).
  const auto fwd_m = [=](std::int64_t s, std::int64_t t) { return t - s; };
  const auto bwd_m = [=](std::int64_t s, std::int64_t u) { return u - (S - 1 - s); };
  const auto valid = [Mu](std::int64_t m) { return m >= 0 && m < static_cast<std::int64_t>(Mu); };
  const auto give = [&](const std::string& buffer, const std::string& dtype, std::uint64_t rows, std::uint64_t cols,
                        std::function<std::vector<float>(std::int64_t s)> values) {
    api::Input in;
    in.origin = buffer;
    in.device_provider = [=](std::uint32_t id, const chip::OperandBinding&) {
      return device_matrix(values(static_cast<std::int64_t>(topology.coords(ChipId(id))[0])), rows, cols, dtype,
                           buffer);
    };
    built.inputs[buffer] = std::move(in);
  };
  const auto per_mb = [=](std::int64_t s, std::int64_t m,
                          const std::vector<std::vector<float>> PipelineReference::*field, std::uint64_t size,
                          bool transposed_rows, std::uint64_t rows, std::uint64_t cols) {
    if (!valid(m)) return std::vector<float>(size, 0.0F);
    const auto& v = (reference().*field)[static_cast<std::size_t>(s) * Mu + static_cast<std::uint64_t>(m)];
    return transposed_rows ? transpose(v, rows, cols) : v;
  };
  give("Wi", "bf16", D, F, [=](std::int64_t s) { return reference().wi[s]; });
  give("Wo", "bf16", F, D, [=](std::int64_t s) { return reference().wo[s]; });
  give("WoT", "bf16", D, F, [=](std::int64_t s) { return transpose(reference().wo[s], F, D); });
  give("WiT", "bf16", F, D, [=](std::int64_t s) { return transpose(reference().wi[s], D, F); });
  give("dWo", "f32", F, D, [=](std::int64_t) { return std::vector<float>(F * D, 0.0F); });
  give("dWi", "f32", D, F, [=](std::int64_t) { return std::vector<float>(D * F, 0.0F); });
  for (std::int64_t t = 0; t < static_cast<std::int64_t>(M) + S - 1; ++t) {
    give(fmt::format("In {}", t), "bf16", mb, D,
         [=](std::int64_t s) { return per_mb(s, fwd_m(s, t), &PipelineReference::in, mb * D, false, 0, 0); });
    give(fmt::format("In f32 {}", t), "f32", mb, D,
         [=](std::int64_t s) { return per_mb(s, fwd_m(s, t), &PipelineReference::in, mb * D, false, 0, 0); });
    give(fmt::format("A {}", t), "bf16", mb, F,
         [=](std::int64_t s) { return per_mb(s, fwd_m(s, t), &PipelineReference::a, mb * F, false, 0, 0); });
    give(fmt::format("AT {}", t), "bf16", F, mb,
         [=](std::int64_t s) { return per_mb(s, bwd_m(s, t), &PipelineReference::a, mb * F, true, mb, F); });
    give(fmt::format("G {}", t), "bf16", mb, D,
         [=](std::int64_t s) { return per_mb(s, bwd_m(s, t), &PipelineReference::g, mb * D, false, 0, 0); });
    give(fmt::format("InT {}", t), "bf16", D, mb,
         [=](std::int64_t s) { return per_mb(s, bwd_m(s, t), &PipelineReference::in, mb * D, true, mb, D); });
    give(fmt::format("dH {}", t), "bf16", mb, F,
         [=](std::int64_t s) { return per_mb(s, bwd_m(s, t), &PipelineReference::d_h, mb * F, false, 0, 0); });
  }

  // The check: the weight gradients of every stage; every forward Out and
  // backward dX where computed, and byte for byte where it arrived.
  built.check = [=](const api::Result& result) {
    const PipelineReference& R = reference();
    std::uint64_t elements = 0;
    std::vector<std::string> wrong;
    const auto compare = [&](const std::string& buffer, std::int64_t s, const std::vector<float>& want,
                             std::uint64_t rows, std::uint64_t cols) {
      const auto& got = result.outputs.at(buffer).device.at(static_cast<std::size_t>(s));
      const auto expected = device_matrix(want, rows, cols, "f32", buffer);
      elements += rows * cols;
      if (got.size() < expected.size() || std::memcmp(got.data(), expected.data(), expected.size()) != 0) {
        wrong.push_back(fmt::format("{} on stage {}", buffer, s));
      }
    };
    for (std::int64_t s = 0; s < S; ++s) {
      compare("dWo", s, R.d_wo[s], F, D);
      compare("dWi", s, R.d_wi[s], D, F);
      for (std::int64_t t = 0; t < static_cast<std::int64_t>(M) + S - 1; ++t) {
        if (valid(fwd_m(s, t))) {
          const auto& out = R.out[static_cast<std::size_t>(s) * Mu + static_cast<std::uint64_t>(fwd_m(s, t))];
          compare(fmt::format("Out {}", t), s, out, mb, D);
          if (s + 1 < S) compare(fmt::format("received act {}", t), s + 1, out, mb, D);
        }
        if (valid(bwd_m(s, t))) {
          const auto& dx = R.d_x[static_cast<std::size_t>(s) * Mu + static_cast<std::uint64_t>(bwd_m(s, t))];
          compare(fmt::format("dX {}", t), s, dx, mb, D);
          if (s > 0) compare(fmt::format("received grad {}", t), s - 1, dx, mb, D);
        }
      }
    }
    const bool ok = wrong.empty();
    return nlohmann::json{
        {"ok", ok},
        {"elements", elements},
        {"check",
         ok ? fmt::format("bit-exact ({} elements of dWo, dWi, Out, dX and the arrivals on {} stages)", elements, S)
            : fmt::format("MISMATCH: {} (of {} outputs)", fmt::join(wrong, ", "), wrong.size())}};
  };

  // Measured, per stage: the share of the run outside the slots it has a
  // microbatch in (its steps in the other slots do nothing but, as a
  // receiver, wait for its input; after its last slot it has ended).
  built.finish = [slots, S](nlohmann::json& report, const nlohmann::json& run_report) {
    const auto total = run_report.at("cycles").get<double>();
    nlohmann::json bubble = nlohmann::json::array();
    double sum = 0;
    for (const auto& chip : run_report.at("per_chip")) {
      const auto stage = static_cast<std::int64_t>(bubble.size());
      const auto& steps = chip.at("steps");
      double active = 0;
      std::uint64_t previous = 0;
      for (std::size_t s = 0; s < steps.size() && s < slots.size(); ++s) {
        const auto end = steps.at(s).at("end_cycle").get<std::uint64_t>();
        if (stage >= slots[s].first && stage <= slots[s].second) active += static_cast<double>(end - previous);
        previous = end;
      }
      const double fraction = total > 0 ? 1 - active / total : 0;
      bubble.push_back(fraction);
      sum += fraction;
    }
    const double mean = bubble.empty() ? 0.0 : sum / static_cast<double>(bubble.size());
    const double book = report.at("book").at("bubble_fraction").get<double>();
    report["pipeline"] = {{"stages", S},
                          {"bubble_fraction_per_stage", bubble},
                          {"bubble_fraction", mean},
                          {"bubble_fraction_book", book}};
    report["intro"].push_back(fmt::format(
        "  measured: each stage spends {:.3f} of the step outside its microbatches' slots (the book: {:.3f})", mean,
        book));
  };

  const double bubble = static_cast<double>(S - 1) / static_cast<double>(M + static_cast<std::uint64_t>(S) - 1);
  const double c = chip.peak_bf16_flops();
  built.choice = {{"strategy", "pp"},
                  {"data_axes", ""},
                  {"model_axes", ""},
                  {"stage_axis", "X"},
                  {"stages", S},
                  {"microbatches", M},
                  {"batch", B},
                  {"d_model", D},
                  {"d_ff", F},
                  {"per_chip", {{"tokens", mb}, {"d_ff", F}}},
                  {"activation", "relu (applied on the host between the matmuls)"},
                  {"book",
                   {{"t_math_seconds", 12 * bd * dd * fd / c},
                    {"t_comms_seconds", 0.0},
                    {"seconds", 12 * bd * dd * fd / c / (1 - bubble)},
                    {"bubble_fraction", bubble},
                    {"formula",
                     "T_math = 12BDF/C per stage (one block each); the bubble (S-1)/(M+S-1) of the step "
                     "is idle: step = T_math / (1 - bubble)"},
                    {"threshold", 0.0},
                    {"threshold_name", "none"},
                    {"threshold_at", nlohmann::json::object()}}},
                  {"reference",
                   "matmuls by programs::matmul_reference, weight gradients accumulated over the microbatches in "
                   "order from zeros; stage s+1's In = bf16(stage s's Out), stage s-1's G = bf16(dX + G)"}};
  built.intro = {
      fmt::format("mlp, pipeline: {} stages (x) of one MLP block each (D {}, F {}), batch {} in {} microbatches of {} "
                  "tokens, forward and backward (GPipe) on a {} pod of {}",
                  S, D, F, B, M, mb, ici::describe(topology), chip.name),
      fmt::format("  the book: bubble (S-1)/(M+S-1) = {:.3f} of every stage's step", bubble)};
  return built;
}

}  // namespace tpuemu::workloads
