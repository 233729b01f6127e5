// Whole runs on an emulated pod: remote DMAs, sync flags across chips, link
// timing at the edge, faults and deadlock reports. One SystemC run per
// TEST_CASE (CTest runs each in its own process).
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "chip/pod.hpp"
#include "isa/assembler.hpp"
#include "programs/collective_reference.hpp"
#include "programs/collectives.hpp"
#include "tests/test_support.hpp"

using namespace tpuemu;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Chip c's input: 1024 floats c*1000 + i.
std::vector<std::uint8_t> ring_input(std::uint32_t chip) {
  std::vector<std::uint8_t> bytes(4096);
  for (std::uint32_t i = 0; i < 1024; ++i) {
    const float v = static_cast<float>(chip * 1000 + i);
    std::memcpy(&bytes[i * 4], &v, 4);
  }
  return bytes;
}

chip::PodResult run_ring_shift(const std::string& shape, std::vector<bool> wraps,
                               const std::string& chip_name = "v5e") {
  static isa::Program program = isa::assemble(read_text(TPUEMU_PROGRAMS "/ring_shift.llo"), "ring_shift.llo");
  chip::PodRequest request;
  request.chip = test::preset(chip_name);
  request.topology = ici::make_topology({shape, wraps, true}, request.chip);
  request.program = &program;
  request.input = [](std::uint32_t chip, const std::string&, const chip::OperandBinding& b) {
    return b.index == 0 ? ring_input(chip) : std::vector<std::uint8_t>{};
  };
  return chip::run_pod(request);
}

// One packet of 4096 B over one hop of a v5e link: 4096 / (4.5e10 x 0.95 / 1.5e9) cycles plus 1 us.
// v5e's payload rate per cycle: 45 GB/s x ici.payload_efficiency 0.95 / 1.5 GHz
// = 28.5 B (30 B before the payload efficiency, facts.md's ~95 %).
const double kV5eBytesPerCycle = 45e9 * 0.95 / 1.5e9;
const double kV5ePacketCycles = 4096.0 / kV5eBytesPerCycle;
const double kV5eHopCycles = 1500.0;

// A host-side exception thrown from `depth` frames down, each with a stack
// array (ASan poisons the redzones around them), and a walk over as many
// frames that writes every byte of its arrays: under ASan it reports stale
// poison a throw left behind.
[[gnu::noinline]] int throw_from_depth(int depth) {
  volatile char frame[64] = {};
  frame[depth % 64] = 1;
  if (depth == 0) throw std::runtime_error("host exception");
  return frame[depth % 64] + throw_from_depth(depth - 1);
}
[[gnu::noinline]] int write_frames(int depth) {
  volatile char frame[256];
  for (int i = 0; i < 256; ++i) frame[i] = static_cast<char>(i);
  return frame[depth % 256] + (depth > 0 ? write_frames(depth - 1) : 0);
}

}  // namespace

TEST_CASE("pod: ring shift over a wrapped x axis moves every chip's data to its right neighbour", "[pod]") {
  const chip::PodResult r = run_ring_shift("4", {true});
  REQUIRE_FALSE(r.fault.has_value());
  REQUIRE(r.chips.size() == 4);
  for (std::uint32_t c = 0; c < 4; ++c) {
    CHECK(r.chips[c].outputs.at("1") == ring_input((c + 3) % 4));
  }
  // Every transfer is one hop; the slowest chip ends when its data arrived.
  const double one_hop = kV5ePacketCycles + kV5eHopCycles;
  CHECK(static_cast<double>(r.cycles) > one_hop);
  CHECK(static_cast<double>(r.cycles) < one_hop + 40);
  CHECK(r.links.size() == 4);
  CHECK(r.ici_bytes == 4 * 4096);
}

TEST_CASE("pod: without wraparound the step from the last chip to the first crosses every link back", "[pod]") {
  const chip::PodResult r = run_ring_shift("4", {false});
  REQUIRE_FALSE(r.fault.has_value());
  CHECK(r.chips[0].outputs.at("1") == ring_input(3));
  // Store-and-forward per hop: 3 x (packet + hop latency); the -x links of
  // chips 3, 2, 1 carry it, plus the three +x links of the other transfers.
  const double three_hops = 3 * (kV5ePacketCycles + kV5eHopCycles);
  CHECK(static_cast<double>(r.cycles) > three_hops);
  CHECK(static_cast<double>(r.cycles) < three_hops + 40);
  CHECK(r.links.size() == 6);
}

TEST_CASE("pod: megacore chips run the program on both cores and share the chip's links", "[pod]") {
  // On v5p both cores of a chip send to the same core of the next chip over
  // the one link between the chips: 8 KiB cross it one packet after the other.
  const chip::PodResult r = run_ring_shift("2x1x1", {false, false, false}, "v5p");
  REQUIRE_FALSE(r.fault.has_value());
  REQUIRE(r.chips.front().cores.size() == 2);
  CHECK(r.ici_bytes == 4 * 4096);
  REQUIRE(r.links.size() == 2);
  for (const auto& l : r.links) CHECK(l.bytes == 2 * 4096);
}

TEST_CASE("pod: a wait no chip will ever satisfy is reported as a deadlock naming every waiting core", "[pod]") {
  const isa::Program program = isa::assemble(R"(#allocation0 [shape = 's32[1]{0}', space=sflag, size = 0x4, tag = 'f']
{ %0 = vsyncpa [#allocation0], 0 }
{ %1 = dma.done.wait [#allocation0], 1 }
)",
                                             "wait.llo");
  chip::PodRequest request;
  request.chip = test::preset("v5e");
  request.topology = ici::make_topology({"2x2", std::nullopt, false}, request.chip);
  request.program = &program;
  const chip::PodResult r = chip::run_pod(request);
  REQUIRE(r.fault.has_value());
  CHECK_THAT(*r.fault, Catch::Contains("deadlock: 4 core(s) wait"));
  for (int c = 0; c < 4; ++c) {
    CHECK_THAT(*r.fault, Catch::Contains(fmt::format("chip {} core 0 bundle 0x1 (wait.llo:3:3)", c)));
  }
  CHECK_THAT(*r.fault, Catch::Contains("waits for sync flag 0 to reach 1; it holds 0"));
}

TEST_CASE("pod: a remote DMA to a chip outside the pod is a fault naming the pod", "[pod]") {
  const isa::Program program = isa::assemble(R"(#allocation0 [shape = 's32[2]{0}', space=sflag, size = 0x8, tag = 'f']
{ %s0 = inlined_call_operand.hbm [shape: f32[1024], index: 0, kind: input, shape index: {}] }
{ %1 = dma.remote.hbm_to_hbm [thread:$0] /*src=*/%s0, /*size_in_granules=*/128, /*chip=*/4, /*core=*/0, /*dst=*/%s0, /*src_syncflagno=*/[#allocation0], /*dst_syncflagno=*/[#allocation0 + $0x1] }
)",
                                             "bad.llo");
  chip::PodRequest request;
  request.chip = test::preset("v5e");
  request.topology = ici::make_topology({"2x2", std::nullopt, false}, request.chip);
  request.program = &program;
  const chip::PodResult r = chip::run_pod(request);
  REQUIRE(r.fault.has_value());
  CHECK_THAT(*r.fault, Catch::Contains("bad.llo:3"));
  CHECK_THAT(*r.fault, Catch::Contains("destination chip 4 does not exist: the pod has chips 0..3 (2x2x1)"));
}

TEST_CASE("pod: the host throws and catches cleanly after every chip faulted on its coroutine stack", "[pod]") {
  // Every chip faults in the same delta, each on its own SystemC coroutine
  // stack; then the host throws deep and catches. Under ASan, no throw may
  // leave stale stack poison (chip/simulate.hpp): write_frames would hit it.
  const isa::Program program = isa::assemble(R"(#allocation0 [shape = 's32[2]{0}', space=sflag, size = 0x8, tag = 'f']
{ %s0 = inlined_call_operand.hbm [shape: f32[1024], index: 0, kind: input, shape index: {}] }
{ %1 = dma.remote.hbm_to_hbm [thread:$0] /*src=*/%s0, /*size_in_granules=*/128, /*chip=*/64, /*core=*/0, /*dst=*/%s0, /*src_syncflagno=*/[#allocation0], /*dst_syncflagno=*/[#allocation0 + $0x1] }
)",
                                             "bad.llo");
  chip::PodRequest request;
  request.chip = test::preset("v5e");
  request.topology = ici::make_topology({"8x4", std::nullopt, false}, request.chip);
  request.program = &program;
  const chip::PodResult r = chip::run_pod(request);
  REQUIRE(r.fault.has_value());
  CHECK_THAT(*r.fault, Catch::StartsWith("chip 0 core 0 bundle 0x1 (bad.llo:3:"));
  CHECK_THROWS_WITH(throw_from_depth(40), "host exception");
  CHECK(write_frames(40) > 0);
}

TEST_CASE("pod: two transfers sharing a link queue behind each other", "[pod]") {
  // Chips 0 and 1 of a 3-chip line both send 64 KiB (4 packets) to chip 2.
  // Chip 1's packets hold link 1->2 from the start; chip 0's reach it one
  // packet and one hop later, queue, and follow back to back.
  const isa::Program program = isa::assemble(R"(#allocation0 [shape = 's32[2]{0}', space=sflag, size = 0x8, tag = 'f']
{ %s0 = inlined_call_operand.hbm [shape: f32[16384], index: 0, kind: input, shape index: {}] ;; %s1 = inlined_call_operand.hbm [shape: f32[32768], index: 1, kind: output, shape index: {}] }
{ %s2 = sid.chip ;; %s3 = sshll.u32 %s0, 4 }
{ %s4 = sshll.u32 %s1, 4 }
{ %p0 = scmp.eq.s32.totalorder %s2, 2 ;; %s5 = smul.u32 %s2, 2048 }
{ %s4 = sadd.s32 %s4, %s5 }
{ %1 = sbr.rel (%p0) target = done }
{}
{}
{}
{}
{ %2 = dma.remote.hbm_to_hbm [thread:$0] /*src=*/%s3, /*size_in_granules=*/2048, /*chip=*/2, /*core=*/0, /*dst=*/%s4, /*src_syncflagno=*/[#allocation0], /*dst_syncflagno=*/[#allocation0 + $0x1] }
{ %3 = dma.done.wait [#allocation0], 2048 }
done:
{ %4 = dma.done.wait (%p0) [#allocation0 + $0x1], 4096 }
)",
                                             "share.llo");
  chip::PodRequest request;
  request.chip = test::preset("v5e");
  request.topology = ici::make_topology({"3", std::vector<bool>{false}, false}, request.chip);
  request.program = &program;
  const chip::PodResult r = chip::run_pod(request);
  REQUIRE_FALSE(r.fault.has_value());
  const double packet = 16384.0 / kV5eBytesPerCycle;  // 16 KiB packets
  // Link 1->2 is busy for 8 packets without a gap, then one hop to chip 2.
  const double expected = 8 * packet + kV5eHopCycles;
  CHECK(static_cast<double>(r.cycles) > expected);
  CHECK(static_cast<double>(r.cycles) < expected + 40);
  double busiest = 0;
  for (const auto& l : r.links) busiest = std::max(busiest, l.busy_cycles);
  CHECK(busiest == Approx(8 * packet));
}

TEST_CASE(
    "pod: an all-reduce on a v6e 4x4 (its 256x256 MXUs are not modelled, the program has no MXU op) is bit "
    "exact",
    "[pod][v6e]") {
  const programs::CollectiveSpec spec{"all-reduce", "bidir-ring", "f32", 64 * 1024, {0, 1}, 0};
  chip::PodRequest request;
  request.chip = test::preset("v6e");
  request.topology = ici::make_topology({"4x4", std::nullopt, false}, request.chip);
  const isa::Program program =
      isa::assemble(programs::generate_collective(spec, request.topology, request.chip), "all_reduce.llo");
  request.program = &program;
  const std::uint64_t bytes = programs::collective_shapes(spec, request.topology).input_bytes;
  std::vector<std::vector<std::uint8_t>> inputs;
  for (std::uint32_t c = 0; c < request.topology.chip_count(); ++c) {
    std::vector<std::uint8_t> in(bytes);
    for (std::uint64_t e = 0; e < bytes / 4; ++e) {
      const float v = static_cast<float>((c * 7919 + e * 104729) % 2001) / 1000.0F - 1.0F;  // not exactly summable
      std::memcpy(&in[4 * e], &v, 4);
    }
    inputs.push_back(std::move(in));
  }
  request.input = [&](std::uint32_t chip, const std::string&, const chip::OperandBinding& b) {
    return b.index == 0 ? inputs[chip] : std::vector<std::uint8_t>{};
  };
  const chip::PodResult r = chip::run_pod(request);
  REQUIRE_FALSE(r.fault.has_value());
  const auto expected = programs::collective_reference(spec, request.topology, inputs);
  REQUIRE(r.chips.size() == 16);
  for (std::uint32_t c = 0; c < 16; ++c) {
    const auto& got = r.chips[c].outputs.at("1");
    REQUIRE(got.size() >= expected[c].size());
    CHECK(std::memcmp(got.data(), expected[c].data(), expected[c].size()) == 0);
  }
  CHECK(r.ici_bytes > 0);
}

namespace {
// The HBM port carries remote DMA traffic too (README "ICI traffic and the
// HBM port"). Seven chips on a line, each streaming 8 MiB HBM -> VMEM in one
// DMA (the port busy throughout, 15.3k cycles); at the same time chip 2
// sends 256 KiB from its HBM into chip 1's HBM, chip 4 sends 256 KiB from its
// VMEM into chip 3's VMEM, and chips 5 and 6 swap 256 KiB HBM -> HBM. All of
// it arrives while the streams run, so a chip's stream takes longer by what
// the remote traffic moved through its port: 256 KiB / (8.2e11 / 1.5e9 B a
// cycle) = 479.5 cycles for a read or a write, nothing for VMEM. (Without
// the model, dma.remote_traffic 0, every chip takes the same time.)
chip::PodResult run_hbm_port_pod(bool share) {
  std::string text = R"(#allocation0 [shape = 'u8[8388608]', space=vmem, size = 0x800000, tag = 'stream']
#allocation1 [shape = 'u8[262144]', space=vmem, size = 0x40000, tag = 'remote']
#allocation2 [shape = 's32[3]{0}', space=sflag, size = 0xc, tag = 'stream, arrived, sent']
{ %s0 = inlined_call_operand.hbm [shape: f32[2097152], index: 0, kind: input, shape index: {}] ;; %s1 = inlined_call_operand.hbm [shape: f32[65536], index: 1, kind: output, shape index: {}] }
{ %s2 = sid.chip ;; %s3 = sshll.u32 %s0, 4 }
{ %s4 = sshll.u32 %s1, 4 ;; %s5 = smov [#allocation0] }
{ %s6 = smov [#allocation1] ;; %s7 = sadd.s32 %s2, 4294967295 }
{ %s5 = sshll.u32 %s5, 4 ;; %s6 = sshll.u32 %s6, 4 }
{ %s8 = sadd.s32 %s2, 1 }
{ %p1 = scmp.eq.s32.totalorder %s2, 1 ;; %p2 = scmp.eq.s32.totalorder %s2, 2 }
{ %p3 = scmp.eq.s32.totalorder %s2, 3 ;; %p4 = scmp.eq.s32.totalorder %s2, 4 }
{ %p5 = scmp.eq.s32.totalorder %s2, 5 ;; %p6 = scmp.eq.s32.totalorder %s2, 6 }
{ %9 = dma.hbm_to_vmem [thread:$0] /*hbm=*/%s3, /*size_in_granules=*/262144, /*vmem=*/%s5, /*dst_syncflagno=*/[#allocation2] }
{ %10 = dma.remote.hbm_to_hbm [thread:$0] (%p2), /*src=*/%s3, /*size_in_granules=*/8192, /*chip=*/%s7, /*core=*/0, /*dst=*/%s4, /*src_syncflagno=*/[#allocation2 + $0x2], /*dst_syncflagno=*/[#allocation2 + $0x1] }
{ %11 = dma.remote.vmem_to_vmem [thread:$0] (%p4), /*src=*/%s6, /*size_in_granules=*/8192, /*chip=*/%s7, /*core=*/0, /*dst=*/%s6, /*src_syncflagno=*/[#allocation2 + $0x2], /*dst_syncflagno=*/[#allocation2 + $0x1] }
{ %12 = dma.remote.hbm_to_hbm [thread:$0] (%p5), /*src=*/%s3, /*size_in_granules=*/8192, /*chip=*/%s8, /*core=*/0, /*dst=*/%s4, /*src_syncflagno=*/[#allocation2 + $0x2], /*dst_syncflagno=*/[#allocation2 + $0x1] }
{ %13 = dma.remote.hbm_to_hbm [thread:$0] (%p6), /*src=*/%s3, /*size_in_granules=*/8192, /*chip=*/%s7, /*core=*/0, /*dst=*/%s4, /*src_syncflagno=*/[#allocation2 + $0x2], /*dst_syncflagno=*/[#allocation2 + $0x1] }
)";
  text += R"({ %60 = dma.done.wait [#allocation2], 262144 }
{ %61 = dma.done.wait (%p1) [#allocation2 + $0x1], 8192 }
{ %62 = dma.done.wait (%p3) [#allocation2 + $0x1], 8192 }
{ %63 = dma.done.wait (%p5) [#allocation2 + $0x1], 8192 }
{ %64 = dma.done.wait (%p6) [#allocation2 + $0x1], 8192 }
{ %65 = dma.done.wait (%p2) [#allocation2 + $0x2], 8192 }
{ %66 = dma.done.wait (%p4) [#allocation2 + $0x2], 8192 }
{ %67 = dma.done.wait (%p5) [#allocation2 + $0x2], 8192 }
{ %68 = dma.done.wait (%p6) [#allocation2 + $0x2], 8192 }
)";
  const isa::Program program = isa::assemble(text, "hbm_port.llo");
  chip::PodRequest request;
  request.chip = test::preset("v5e");
  request.chip.dma.remote_traffic = share ? 1 : 0;
  request.topology = ici::make_topology({"7", std::vector<bool>{false}, false}, request.chip);
  request.program = &program;
  request.options.compute_numerics = false;
  return chip::run_pod(request);
}

}  // namespace

TEST_CASE("pod: remote DMA bytes read from or written to HBM take their share of the HBM port", "[pod][hbm]") {
  const chip::PodResult r = run_hbm_port_pod(true);
  REQUIRE_FALSE(r.fault.has_value());
  REQUIRE(r.chips.size() == 7);
  const double share = 262144.0 / (8.2e11 / 1.5e9);  // 479.5 cycles of the port
  const auto extra = [&](std::size_t chip) {
    return static_cast<double>(r.chips[chip].cycles) - static_cast<double>(r.chips[0].cycles);
  };
  // The stream alone: 8 MiB at 546.7 B a cycle plus the HBM latency (750 cycles) and the issue.
  CHECK(static_cast<double>(r.chips[0].cycles) > 8388608.0 / (8.2e11 / 1.5e9) + 750);
  CHECK(static_cast<double>(r.chips[0].cycles) < 8388608.0 / (8.2e11 / 1.5e9) + 800);
  CHECK(extra(1) == Approx(share).margin(1.5));      // written into its HBM
  CHECK(extra(2) == Approx(share).margin(1.5));      // read from its HBM
  CHECK(extra(3) == 0);                              // written into its VMEM
  CHECK(extra(4) == 0);                              // read from its VMEM
  CHECK(extra(5) == Approx(2 * share).margin(1.5));  // both
  CHECK(extra(6) == Approx(2 * share).margin(1.5));
  // Every arrival landed before the streams ended (so the whole share shows).
  CHECK(r.cycles == std::max_element(r.chips.begin(), r.chips.end(), [](const auto& a, const auto& b) {
                      return a.cycles < b.cycles;
                    })->cycles);
}

TEST_CASE("pod: with dma.remote_traffic 0 remote DMA bytes pass beside the HBM port", "[pod][hbm]") {
  const chip::PodResult r = run_hbm_port_pod(false);
  REQUIRE_FALSE(r.fault.has_value());
  REQUIRE(r.chips.size() == 7);
  for (std::size_t c = 1; c < 7; ++c) CHECK(r.chips[c].cycles == r.chips[0].cycles);
}

namespace {
// Two v5e chips on a line; `program` runs on both with the default quantum
// (1000 cycles, under the 1500-cycle hop).
chip::PodResult run_pair(const std::string& text, std::uint32_t dma_queue = 0) {
  const isa::Program program = isa::assemble(text, "pair.llo");
  chip::PodRequest request;
  request.chip = test::preset("v5e");
  if (dma_queue != 0) request.chip.dma.max_in_flight = dma_queue;
  request.topology = ici::make_topology({"2", std::vector<bool>{false}, false}, request.chip);
  request.program = &program;
  request.options.compute_numerics = false;
  REQUIRE(request.quantum_cycles == 1000);
  return chip::run_pod(request);
}
const char* const kPairPrologue =
    R"(#allocation0 [shape = 'u8[1048576]', space=vmem, size = 0x100000, tag = 'buffer']
#allocation1 [shape = 's32[3]{0}', space=sflag, size = 0xc, tag = 'flags']
{ %s0 = inlined_call_operand.hbm [shape: f32[262144], index: 0, kind: input, shape index: {}] ;; %s1 = inlined_call_operand.hbm [shape: f32[1024], index: 1, kind: output, shape index: {}] }
{ %s2 = sid.chip ;; %s3 = sshll.u32 %s0, 4 }
{ %s5 = smov [#allocation0] ;; %p0 = scmp.eq.s32.totalorder %s2, 0 }
{ %s5 = sshll.u32 %s5, 4 ;; %p1 = scmp.eq.s32.totalorder %s2, 1 }
)";
// A one-granule (32 B) flag message over one v5e hop, in cycles.
const double kV5eGranuleHopCycles = 32.0 / kV5eBytesPerCycle + kV5eHopCycles;
}  // namespace

TEST_CASE("pod: a remote credit that comes before the local DMA a wait also counts on ends the wait at its arrival",
          "[pod][quantum]") {
  // Chip 1 signals chip 0 from cycle 4 (message starts at 5). Chip 0 loads 1
  // MiB into the same flag (done after ~2680 cycles) and waits for the flag
  // to reach 1: the signal arriving at 5 + 1501.1 ends the wait at cycle
  // 1507, and chip 0 signals back at once (bundle 7, message from 1509):
  // chip 1's wait issues at ceil(1509 + 1501.1) = 3011, its end 3012. A core
  // that stalled towards the DMA's completion would see the signal only at
  // its next synchronisation, a quantum later, and answer ~1000 cycles late.
  const chip::PodResult r = run_pair(std::string(kPairPrologue) + R"(
{ %2 = vsyncadd.remote (%p1), /*chip=*/0, /*core=*/0, /*flag=*/[#allocation1], /*value=*/1 }
{ %3 = dma.hbm_to_vmem [thread:$0] (%p0), /*hbm=*/%s3, /*size_in_granules=*/32768, /*vmem=*/%s5, /*dst_syncflagno=*/[#allocation1] }
{ %4 = dma.done.wait (%p0) [#allocation1], 1 }
{ %5 = vsyncadd.remote (%p0), /*chip=*/1, /*core=*/0, /*flag=*/[#allocation1], /*value=*/1 }
{ %6 = dma.done.wait (%p0) [#allocation1], 32769 }
{ %7 = dma.done.wait (%p1) [#allocation1], 1 }
)");
  REQUIRE_FALSE(r.fault.has_value());
  const auto first_arrival = static_cast<std::uint64_t>(std::ceil(5 + kV5eGranuleHopCycles));
  REQUIRE(first_arrival == 1507);
  const auto answer_arrival = static_cast<std::uint64_t>(std::ceil(first_arrival + 2 + kV5eGranuleHopCycles));
  CHECK(r.chips[1].cycles == answer_arrival + 1);
  CHECK(r.chips[0].cycles > 2600);  // the 1 MiB load did take longer than the signal
}

TEST_CASE("pod: a DMA waiting for a queue slot issues when a remote DMA leaves, before a local one completes",
          "[pod][quantum]") {
  // dma.max_in_flight 2: chip 0 sends 4 KiB to chip 1 (bundle 4, on the
  // link after the DMA issue latency), starts a 1 MiB load (bundle 5, ~2680
  // cycles), and its next load (bundle 6) waits for a slot: the remote DMA
  // leaves first, after its 4096 B at the link's rate, and the load issues at
  // the first cycle after, ~2500 cycles before the local load would free
  // one. A core that stalled towards the local load's completion would see
  // the slot only at its next synchronisation, up to a quantum later (a
  // stall of ~800 cycles).
  const chip::PodResult r = run_pair(std::string(kPairPrologue) + R"(
{ %2 = dma.remote.vmem_to_vmem [thread:$0] (%p0), /*src=*/%s5, /*size_in_granules=*/128, /*chip=*/1, /*core=*/0, /*dst=*/%s5, /*src_syncflagno=*/[#allocation1 + $0x1], /*dst_syncflagno=*/[#allocation1 + $0x2] }
{ %3 = dma.hbm_to_vmem [thread:$0] (%p0), /*hbm=*/%s3, /*size_in_granules=*/32768, /*vmem=*/%s5, /*dst_syncflagno=*/[#allocation1] }
{ %4 = dma.hbm_to_vmem [thread:$0] (%p0), /*hbm=*/%s3, /*size_in_granules=*/1, /*vmem=*/%s5, /*dst_syncflagno=*/[#allocation1] }
{ %5 = dma.done.wait (%p0) [#allocation1], 32769 }
{ %6 = dma.done.wait (%p0) [#allocation1 + $0x1], 128 }
{ %8 = dma.done.wait (%p1) [#allocation1 + $0x2], 128 }
)",
                                     2);
  REQUIRE_FALSE(r.fault.has_value());
  const std::uint64_t queue_stall =
      r.chips[0].cores[0].stall_cycles[static_cast<std::size_t>(chip::StallCause::kDmaQueue)];
  const auto dma_issue = static_cast<double>(test::preset("v5e").latency(LatencyClass::kDmaIssue).value());
  const double sent = 4 + dma_issue + 4096 / kV5eBytesPerCycle;
  CHECK(queue_stall == static_cast<std::uint64_t>(std::ceil(sent)) - 6);
}
