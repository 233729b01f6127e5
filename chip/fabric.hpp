// What a TensorCore in a pod sees of the rest of the pod: its identity and a
// way to send remote DMAs and sync-flag adds over ICI. The pod module
// (pod_module.hpp) implements it; a lone chip has none (pod ops fault).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace tpuemu::chip {

struct PodIdentity {
  std::uint32_t chip = 0;                 // linear id x + X*(y + Y*z)
  std::array<std::uint32_t, 3> coords{};  // x, y, z
  std::array<std::uint32_t, 3> dims{1, 1, 1};
  std::uint32_t chip_count = 1;
};

// A remote DMA or sync-flag add leaving a core. Addresses are bytes in the
// destination chip's memory (HBM, or the destination core's VMEM).
struct RemoteSend {
  enum class Space : std::uint8_t { kHbm, kVmem, kFlagOnly };
  // kUnicast: to dst_chip. In-network (switched fabrics): kNvlsReduce, one
  // chip's contribution to a reduction delivered to dst_chip; kNvlsMulticast,
  // to every chip of the sender's switched domain.
  enum class Kind : std::uint8_t { kUnicast, kNvlsReduce, kNvlsMulticast };
  Kind kind = Kind::kUnicast;
  bool bf16 = false;  // kNvlsReduce: the element type summed
  std::uint32_t src_chip = 0;
  std::uint32_t src_core = 0;
  std::uint32_t dst_chip = 0;
  std::uint32_t dst_core = 0;
  Space dst_space = Space::kHbm;
  std::uint64_t dst_address = 0;
  std::uint64_t bytes = 0;             // on the wire
  std::vector<std::uint8_t> payload;   // empty in timing-only runs and for flag adds
  bool has_src_flag = false;           // credit src_flag on the source core when sent
  std::uint32_t src_flag = 0;
  std::int32_t src_credit = 0;
  std::uint32_t dst_flag = 0;          // credited on arrival
  std::int32_t dst_credit = 0;
  std::uint64_t start_cycle = 0;       // enters the network (after the DMA issue latency)
  std::uint32_t source_bundle = 0;     // for messages
  std::uint64_t trace_id = 0;          // flow id in a trace (set by the pod when tracing)
};

class Fabric {
 public:
  virtual ~Fabric() = default;
  // Queues a send; the source core's flag and the destination core's flag
  // are credited (and the cores woken) when the network delivers it.
  virtual void send(RemoteSend message) = 0;
};

}  // namespace tpuemu::chip
