// The collective-matmul workload (the book's jax-stuff.md example;
// ../shared/WORKLOADS.md section 1): out[B_X, F_Y] = A[B_X, D_Y] @ W[D, F_Y]
// on a mesh (X, Y) = the topology's axes x and y, in four variants:
//   blocking    all-gather A over Y, then one matmul (sharded-matmul's ag plan);
//   overlapped  one program per chip (programs::generate_collective_matmul):
//               N = Y chunks of D, multiplied chunk after chunk into
//               accumulators that stay in VMEM, while the A chunk in hand
//               shifts one step down the Y ring (remote DMAs issued by the
//               program as each chunk arrives);
//   overlapped-steps  the same as a chain of steps (the first version): N
//               chunk matmuls out += A_c @ W[D_c, F_Y] accumulating through
//               HBM (MatmulSpec::accumulate), each between a ring shift's send
//               and wait (programs::generate_ring_shift_send / _wait);
//   baseline    A not sharded on D: one local matmul, no communication
//               (sharded-matmul's case 1).
// The chip at y holds chunk c_t = (y + t) mod N of D at step t (on an axis
// without wraparound of 4 or more chips, the ring is folded: c_t is the y t
// positions on in programs::ring_coordinate's order).
// overlapped: operand "A" holds N column blocks [B/X, D/Y], block 0 the
// chip's own chunk (input), block t receiving chunk c_t from the chip at y+1;
// "W" is the chip's W rows in its chunk order c_0, c_1, ... (a layout of the
// rows it holds), "C" the output.
// overlapped-steps, for t = 0 .. N-1:
//   send "A t" -> the chip at y-1's "A t+1" (t < N-1; issued, not awaited)
//   matmul "A t" @ "W t" -> "C" (accumulating from t = 1)
//   wait for the send and the arrival (t < N-1)
// "W t" on the chip at y is W's row block c_t of its columns F_y.
// Host reference (both overlapped variants): for every chip, C = the chunks'
// matmuls accumulated in its order c_0, c_1, ... (programs::matmul_reference
// with c_in), bit for bit: for every element, the k-blocks of c_0 in order,
// then those of c_1, ..., each block's partial added to the running f32 sum.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>

#include "api/errors.hpp"
#include "api/run.hpp"
#include "common/npy.hpp"
#include "common/units.hpp"
#include "programs/collectives.hpp"
#include "programs/generators.hpp"
#include "programs/reference.hpp"
#include "workloads/pieces.hpp"
#include "workloads/workload.hpp"

namespace tpuemu::workloads {
namespace {

// The chunk of D the chip at y holds at step t: c_t = the y coordinate t ring
// positions on ((y + t) mod N; on an axis without wraparound of 4 or more
// chips the ring is folded, programs::ring_coordinate).
std::uint64_t chunk_at(const ici::Topology& topology, std::uint64_t y, std::uint64_t t) {
  const auto n = static_cast<std::uint32_t>(topology.length(1));
  const bool folded = programs::folded_ring_axis(topology, 1);
  const std::uint32_t at = (programs::ring_position(static_cast<std::uint32_t>(y), n, folded) + t) % n;
  return programs::ring_coordinate(at, n, folded);
}

// Links the slowest shift crosses: 1 with wraparound, 2 on a folded ring or
// one of 3 chips without wraparound (programs::ring_link_loads).
double shift_hops(const ici::Topology& topology) {
  return programs::ring_link_loads(topology.length(1), topology.wraps(1), programs::folded_ring_axis(topology, 1))
      .longest_hop;
}

// The host data of the overlapped variants (made on first use) and their
// check: every chip's out is its chunk matmuls accumulated in its chunk order
// c_t (chunk_at; programs::matmul_reference with c_in, 128-wide k-blocks).
struct OverlappedData {
  ici::Topology topology;
  LazyBf16 a, w;  // A[m, k], W[k, n]
  std::uint64_t m, k, n, ys;

  [[nodiscard]] std::function<nlohmann::json(const api::Result&)> chunk_order_check() const {
    return [d = *this](const api::Result& r) {
      const std::uint64_t rows = d.m / d.topology.length(0), cols = d.n / d.ys, chunk = d.k / d.ys;
      return check_f32_outputs(
          r.outputs.at("C").device, d.topology.chip_count(), "out",
          [&](std::uint32_t) { return std::make_pair(rows, cols); },
          [&](std::uint32_t id) {
            const auto c = d.topology.coords(ChipId(id));
            std::vector<float> expected;
            for (std::uint64_t t = 0; t < d.ys; ++t) {
              const std::uint64_t chunk_index = chunk_at(d.topology, c[1], t);
              expected = programs::matmul_reference(
                  matrix_block(d.a->get(), d.k, c[0] * rows, rows, chunk_index * chunk, chunk),
                  matrix_block(d.w->get(), d.n, chunk_index * chunk, chunk, c[1] * cols, cols), rows, chunk, cols, 128,
                  expected);
            }
            return expected;
          });
    };
  }
};

class CollectiveMatmulWorkload final : public Workload {
 public:
  [[nodiscard]] std::string_view name() const override { return "collective-matmul"; }
  [[nodiscard]] std::string_view summary() const override {
    return "the book's collective matmul: out[B_X,F_Y] = A[B_X,D_Y] @ W[D,F_Y], --variant blocking (all-gather "
           "then matmul), overlapped (one program: chunk matmuls into VMEM accumulators while A's chunks shift round "
           "the Y ring), overlapped-steps (chunk matmul steps through HBM between shift steps) or baseline (A whole "
           "in D)";
  }
  [[nodiscard]] std::vector<OptionSpec> options() const override {
    return {{"m", "1024", "B: rows of A and out, split over X"},
            {"k", "2048", "D: the contracting dimension, A's split over Y"},
            {"n", "8192", "F: columns of W and out, split over Y"},
            {"variant", "overlapped", "blocking, overlapped, overlapped-steps or baseline"},
            {"algo", "multi-axis", "the blocking variant's all-gather algorithm"},
            {"seed", "1", "seed of the pseudo-random bf16 inputs"}};
  }

  [[nodiscard]] Built build(const Setup& setup, const OptionValues& options) const override {
    const std::string variant = options.text("variant");
    const ici::Topology& topology = setup.topology;
    if (topology.axis_count() < 2 || (topology.axis_count() == 3 && topology.length(2) != 1)) {
      throw api::BadInput(fmt::format("--topology {}: collective-matmul runs on a 2-D mesh (X, Y), like the book's 2x4",
                                      topology.shape()));
    }
    if (variant == "blocking" || variant == "baseline") return delegate(setup, options, variant);
    if (variant == "overlapped-steps") return overlapped_steps(setup, options);
    if (variant != "overlapped") {
      throw api::BadInput(
          fmt::format("--variant '{}': expected blocking, overlapped, overlapped-steps or baseline", variant));
    }
    return overlapped(setup, options);
  }

 private:
  // The blocking and baseline variants are sharded-matmul runs.
  static Built delegate(const Setup& setup, const OptionValues& options, const std::string& variant) {
    const bool blocking = variant == "blocking";
    const OptionValues sharded({{"m", options.text("m")},
                                {"k", options.text("k")},
                                {"n", options.text("n")},
                                {"lhs", blocking ? "I_X,J_Y" : "I_X,J"},
                                {"rhs", "J,K_Y"},
                                {"plan", blocking ? "ag" : "local"},
                                {"algo", options.text("algo")},
                                {"seed", options.text("seed")}},
                               workload("sharded-matmul").options());
    Built built = workload("sharded-matmul").build(setup, sharded);
    built.choice["variant"] = variant;
    built.intro.insert(built.intro.begin(),
                       fmt::format("collective-matmul, variant {}: {}", variant,
                                   blocking ? "all-gather A over Y, then the matmul (exposed communication)"
                                            : "A not sharded on D: the matmul alone (no communication)"));
    return built;
  }

  // One program per chip (programs::generate_collective_matmul).
  static Built overlapped(const Setup& setup, const OptionValues& options) {
    const ChipConfig& chip = setup.chip;
    const ici::Topology& topology = setup.topology;
    constexpr std::uint64_t kMaxDim = 1ULL << 20;
    const std::uint64_t m = options.whole("m", 1, kMaxDim);
    const std::uint64_t k = options.whole("k", 1, kMaxDim);
    const std::uint64_t n = options.whole("n", 1, kMaxDim);
    const auto seed = static_cast<std::uint32_t>(options.whole("seed", 0, std::numeric_limits<std::uint32_t>::max()));
    const std::uint64_t xs = topology.length(0);
    const std::uint64_t ys = topology.length(1);
    if (m % xs != 0 || k % ys != 0 || n % ys != 0) {
      throw api::BadInput(
          fmt::format("--m {}, --k {}, --n {}: B must split over X ({}), D and F over Y ({})", m, k, n, xs, ys));
    }
    if (ys < 2) {
      throw api::BadInput(fmt::format(
          "--topology {}: the overlapped variant shifts chunks round Y, which has one chip (use --variant baseline)",
          topology.shape()));
    }
    const std::uint64_t rows = m / xs;   // A's and out's rows per chip
    const std::uint64_t chunk = k / ys;  // A's columns per chip: one chunk of D
    const std::uint64_t cols = n / ys;   // W's and out's columns per chip
    if (rows % kBf16TileRows != 0 || chunk % kTileCols != 0) {
      throw api::BadInput(fmt::format(
          "--m {} / --k {}: each chip's A chunk ({} x {}) must be whole bf16 tiles (rows a multiple of {}, columns "
          "of {}) to shift",
          m, k, rows, chunk, kBf16TileRows, kTileCols));
    }
    const programs::CollectiveMatmulSpec spec{rows, chunk, cols, ys, 1};
    Built built;
    std::shared_ptr<const isa::Program> program;
    try {
      refuse_other_mxu(chip, "collective-matmul");
    } catch (const std::invalid_argument& e) {
      throw api::BadInput(e.what());
    }
    try {
      program = api::assemble(programs::generate_collective_matmul(spec, topology, chip), "collective_matmul.llo");
    } catch (const std::invalid_argument& e) {
      throw api::BadInput(
          fmt::format("--m {} --k {} --n {} (per chip {}x{}x{}): {}", m, k, n, rows, chunk, cols, e.what()));
    }

    // The book's costs: the per-chip matmul [rows, D, cols] by its roofline
    // (A, W and out through HBM once), and the shifts: chunk t cannot start
    // before t shifts have brought it (T_shift each, the worst chip's: over
    // 2 links on a folded ring, shift_hops), so the program takes at
    // least max(roofline, (N-1) T_shift + the roofline's 1/N).
    const Phase whole = matmul_phase({rows, k, cols, "bf16", true}, chip);
    const double shift_bytes = static_cast<double>(rows * chunk * 2);
    const double hops = shift_hops(topology);
    const double t_shift = shift_bytes / chip.ici.link_bandwidth + hops * chip.ici.hop_latency_s;
    const double chunk_seconds = whole.predicted_seconds / static_cast<double>(ys);
    const double shifted = static_cast<double>(ys - 1) * t_shift + chunk_seconds;
    built.steps.push_back({program, "collective_matmul.llo", {{0, "A"}, {1, "W"}, {2, "C"}}});
    Phase p = whole;
    p.name = fmt::format("collective matmul {}x{}x{}", rows, k, cols);
    p.predicted_seconds = std::max(whole.predicted_seconds, shifted);
    p.prediction = fmt::format(
        "max({}, (N-1) T_shift + 1/N of it = {}), T_shift = V/B + hops x T_min = {} ({} B over one link, {:.0f} "
        "hop(s)); {} per chunk vs {} per shift: {}",
        whole.prediction, format_quantity(shifted, Quantity::kTime), format_quantity(t_shift, Quantity::kTime),
        rows * chunk * 2, hops, format_quantity(chunk_seconds, Quantity::kTime),
        format_quantity(t_shift, Quantity::kTime), chunk_seconds >= t_shift ? "compute-bound" : "shift-bound");
    p.detail["chunks"] = ys;
    p.detail["t_shift_seconds"] = t_shift;
    p.detail["chunk_seconds"] = chunk_seconds;
    built.phases.push_back(p);
    built.model_flops = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);

    // Host data and every chip's blocks.
    const OverlappedData data{topology, lazy_bf16_values(m * k, seed), lazy_bf16_values(k * n, seed + 1), m, k, n, ys};
    const LazyBf16 a = data.a, w = data.w;
    const auto coords = [topology](std::uint32_t id) { return topology.coords(ChipId(id)); };
    const auto chunk_of = [topology](std::uint64_t y, std::uint64_t t) { return chunk_at(topology, y, t); };
    // A: the chip's own chunk in column block 0; the blocks the shifts fill
    // are the zero padding of the device bytes.
    built.inputs["A"].origin = "A";
    built.inputs["A"].device_provider = [=](std::uint32_t id, const chip::OperandBinding&) {
      const auto c = coords(id);
      return device_matrix(matrix_block(a->get(), k, c[0] * rows, rows, c[1] * chunk, chunk), rows, chunk, "bf16", "A");
    };
    built.inputs["W"].origin = "W";
    built.inputs["W"].device_provider = [=](std::uint32_t id, const chip::OperandBinding&) {
      const auto c = coords(id);
      std::vector<float> rows_in_order;
      rows_in_order.reserve(k * cols);
      for (std::uint64_t t = 0; t < ys; ++t) {
        const auto block = matrix_block(w->get(), n, chunk_of(c[1], t) * chunk, chunk, c[1] * cols, cols);
        rows_in_order.insert(rows_in_order.end(), block.begin(), block.end());
      }
      return device_matrix(rows_in_order, k, cols, "bf16", "W");
    };
    built.check = data.chunk_order_check();
    built.choice = {{"variant", "overlapped"},
                    {"m", m},
                    {"k", k},
                    {"n", n},
                    {"lhs", "I_X,J_Y"},
                    {"rhs", "J,K_Y"},
                    {"output", "I_X,K_Y"},
                    {"per_chip", {{"m", rows}, {"k", chunk}, {"n", cols}, {"chunks", ys}}},
                    {"t_shift_seconds", t_shift},
                    {"reference",
                     "every chip's chunk matmuls accumulated in its chunk order (programs::matmul_reference "
                     "with c_in): per element, the k-blocks of c_0 in order, then c_1's, ..."}};
    built.intro = {
        fmt::format("collective-matmul, variant overlapped: out[{},{}] = A[{},{}] @ W[{},{}] on a {} pod of {}", m, n,
                    m, k, k, n, ici::describe(topology), chip.name),
        fmt::format("  A[B_X,D_Y] @ W[D,F_Y] -> out[B_X,F_Y]: one program per chip, {} chunks {}x{}x{} into "
                    "accumulators kept in VMEM, A's chunk ({} B) shifted round the Y ring during each",
                    ys, rows, chunk, cols, rows * chunk * 2),
        fmt::format("  the book: per chunk T_matmul = {:.3g} us (1/{} of the roofline) against T_shift = {:.3g} us",
                    chunk_seconds * 1e6, ys, t_shift * 1e6),
        "  the shifts run inside the one step, so the report's exposed communication cannot see them: compare the "
        "step with --variant baseline"};
    return built;
  }

  static Built overlapped_steps(const Setup& setup, const OptionValues& options) {
    const ChipConfig& chip = setup.chip;
    const ici::Topology& topology = setup.topology;
    constexpr std::uint64_t kMaxDim = 1ULL << 20;
    const std::uint64_t m = options.whole("m", 1, kMaxDim);
    const std::uint64_t k = options.whole("k", 1, kMaxDim);
    const std::uint64_t n = options.whole("n", 1, kMaxDim);
    const auto seed = static_cast<std::uint32_t>(options.whole("seed", 0, std::numeric_limits<std::uint32_t>::max()));
    const std::uint64_t xs = topology.length(0);
    const std::uint64_t ys = topology.length(1);
    if (m % xs != 0 || k % ys != 0 || n % ys != 0) {
      throw api::BadInput(
          fmt::format("--m {}, --k {}, --n {}: B must split over X ({}), D and F over Y ({})", m, k, n, xs, ys));
    }
    const std::uint64_t rows = m / xs;   // A's and out's rows per chip
    const std::uint64_t chunk = k / ys;  // A's columns per chip: one chunk of D
    const std::uint64_t cols = n / ys;   // W's and out's columns per chip
    if (rows % kBf16TileRows != 0 || chunk % kTileCols != 0) {
      throw api::BadInput(fmt::format(
          "--m {} / --k {}: each chip's A chunk ({} x {}) must be whole bf16 tiles (rows a multiple of {}, columns "
          "of {}) to shift",
          m, k, rows, chunk, kBf16TileRows, kTileCols));
    }
    const programs::MatmulSpec first = on_every_core({rows, chunk, cols, "bf16", true}, chip);
    programs::MatmulSpec accumulate = first;
    accumulate.accumulate = true;
    const programs::RingShiftSpec shift{rows, chunk, 1};
    Built built;
    std::shared_ptr<const isa::Program> send, wait, matmul_first, matmul_accumulate;
    try {
      refuse_other_mxu(chip, "collective-matmul");
      matmul_first = api::assemble(programs::generate_matmul(first, chip), "matmul.llo");
      matmul_accumulate = api::assemble(programs::generate_matmul(accumulate, chip), "matmul_accumulate.llo");
      send = api::assemble(programs::generate_ring_shift_send(shift, topology, chip), "ring_shift_send.llo");
      wait = api::assemble(programs::generate_ring_shift_wait(shift, chip), "ring_shift_wait.llo");
    } catch (const std::invalid_argument& e) {
      throw api::BadInput(e.what());
    }

    // The book's costs: a chunk's matmul (roofline), a shift of one chunk
    // over one link (the worst chip's: over 2 links on a folded ring,
    // shift_hops), overlapped: max of the two per step.
    const Phase matmul = matmul_phase(first, chip);
    const double shift_bytes = static_cast<double>(rows * chunk * 2);
    const double hops = shift_hops(topology);
    const double t_shift = shift_bytes / chip.ici.link_bandwidth + hops * chip.ici.hop_latency_s;
    const std::string shift_formula =
        fmt::format("V/B + hops x T_min, V = {} B over one link of {:.3g} B/s, {:.0f} hop(s)", rows * chunk * 2,
                    chip.ici.link_bandwidth, hops);
    for (std::uint64_t t = 0; t < ys; ++t) {
      const std::string in = fmt::format("A {}", t);
      const std::string next = fmt::format("A {}", t + 1);
      if (t + 1 < ys) {
        built.steps.push_back({send, "ring_shift_send.llo", {{0, in}, {1, next}}});
        Phase p;
        p.name = fmt::format("ring shift {}: send", t);
        p.communication = true;
        p.own_flags = true;
        p.book_seconds = t_shift;
        p.predicted_seconds = 0;
        p.prediction = "issue only: the shift travels during the next matmul";
        p.detail = {{"op", "ring-shift"}, {"axes", "Y"}, {"bytes", rows * chunk * 2}};
        built.phases.push_back(p);
      }
      built.steps.push_back({t == 0 ? matmul_first : matmul_accumulate,
                             t == 0 ? "matmul.llo" : "matmul_accumulate.llo",
                             {{0, in}, {1, fmt::format("W {}", t)}, {2, "C"}}});
      Phase mm = t == 0 ? matmul : matmul_phase(accumulate, chip);
      mm.name = fmt::format("matmul chunk {}{}", t, t == 0 ? "" : " (accumulating)");
      built.phases.push_back(mm);
      if (t + 1 < ys) {
        built.steps.push_back({wait, "ring_shift_wait.llo", {}});
        Phase p;
        p.name = fmt::format("ring shift {}: wait", t);
        p.communication = true;
        p.own_flags = true;
        p.book_seconds = 0;
        p.predicted_seconds = std::max(0.0, t_shift - mm.predicted_seconds);
        p.prediction = fmt::format("max(0, T_shift - the chunk's matmul); T_shift = {}", shift_formula);
        p.detail = {{"op", "ring-shift-wait"}, {"axes", "Y"}, {"t_shift_seconds", t_shift}};
        built.phases.push_back(p);
      }
    }
    built.model_flops = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);

    // Host data and every chip's blocks.
    const OverlappedData data{topology, lazy_bf16_values(m * k, seed), lazy_bf16_values(k * n, seed + 1), m, k, n, ys};
    const LazyBf16 a = data.a, w = data.w;
    const auto coords = [topology](std::uint32_t id) { return topology.coords(ChipId(id)); };
    // Chunk of D the chip at y multiplies at step t.
    const auto chunk_of = [topology](std::uint64_t y, std::uint64_t t) { return chunk_at(topology, y, t); };
    built.inputs["A 0"].origin = "A";
    built.inputs["A 0"].device_provider = [=](std::uint32_t id, const chip::OperandBinding&) {
      const auto c = coords(id);
      return device_matrix(matrix_block(a->get(), k, c[0] * rows, rows, c[1] * chunk, chunk), rows, chunk, "bf16", "A");
    };
    for (std::uint64_t t = 0; t < ys; ++t) {
      const std::string name = fmt::format("W {}", t);
      built.inputs[name].origin = "W";
      built.inputs[name].device_provider = [=](std::uint32_t id, const chip::OperandBinding&) {
        const auto c = coords(id);
        return device_matrix(matrix_block(w->get(), n, chunk_of(c[1], t) * chunk, chunk, c[1] * cols, cols), chunk,
                             cols, "bf16", "W");
      };
    }
    built.check = data.chunk_order_check();
    built.choice = {{"variant", "overlapped-steps"},
                    {"m", m},
                    {"k", k},
                    {"n", n},
                    {"lhs", "I_X,J_Y"},
                    {"rhs", "J,K_Y"},
                    {"output", "I_X,K_Y"},
                    {"per_chip", {{"m", rows}, {"k", chunk}, {"n", cols}, {"chunks", ys}}},
                    {"t_shift_seconds", t_shift},
                    {"reference",
                     "every chip's chunk matmuls accumulated in its chunk order (programs::matmul_reference "
                     "with c_in)"}};
    built.intro = {
        fmt::format("collective-matmul, variant overlapped-steps: out[{},{}] = A[{},{}] @ W[{},{}] on a {} pod of {}",
                    m, n, m, k, k, n, ici::describe(topology), chip.name),
        fmt::format("  A[B_X,D_Y] @ W[D,F_Y] -> out[B_X,F_Y]: {} chunk matmuls {}x{}x{} per chip, A's chunk ({} B) "
                    "shifted round the Y ring during each",
                    ys, rows, chunk, cols, rows * chunk * 2),
        fmt::format("  the book: per step max(T_matmul = {:.3g} us, T_shift = {:.3g} us)",
                    matmul.predicted_seconds * 1e6, t_shift * 1e6)};
    return built;
  }
};

const WorkloadRegistrar kCollectiveMatmulRegistrar(std::make_unique<CollectiveMatmulWorkload>());

}  // namespace
}  // namespace tpuemu::workloads
