// In-network collectives on a switched fabric (NVLink SHARP / NVLS): the
// switches of a domain sum what its chips send them, or copy one chip's data
// to all of them. Plain C++ over the pod's ici::Network; the pod feeds it the
// chips' dma.nvls.* sends and the network's completions, and it calls back
// when a sender's data has left and when data reaches a chip.
//
// Contract:
//  * Reduction rounds: the k-th dma.nvls.reduce of every chip of a domain is
//    round k of that domain; all must name the same destination, size and
//    element type (else ProgramFault at the send that differs). Each chip's
//    contribution is striped over the domain's switches by their weights
//    (ici::Network::split_by_weight) and climbs its link to each switch;
//    when a switch holds its part from every chip, it sends the part of the
//    sum down its link to the destination at once (no reduction latency
//    beyond fabric.switch_latency, which the up link carries). The sum is
//    delivered when every switch's part has arrived: elements summed in rank
//    order (Fabric::Domain::chips), acc = x_0; acc = add(acc, x_i), add in
//    f32 or widened bf16 rounded at every step.
//  * Multicast: the sender's data climbs to every switch the same way; each
//    switch sends its part down to every chip of the domain (the sender
//    included); a chip has the data when every part has arrived.
//  * A sender's flag is credited (on_sent) when all its parts have left it.
//  * One process only: a pod over several MPI ranks refuses these ops.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

#include "chip/fabric.hpp"
#include "ici/network.hpp"

namespace tpuemu::chip {

class InNetworkCollectives {
 public:
  explicit InNetworkCollectives(ici::Network& network) : network_(network) {}

  // A dma.nvls.* send (message.kind not kUnicast). Throws ProgramFault on a
  // torus, over several ranks (`partitioned`) or a round that does not match.
  void send(RemoteSend message, bool partitioned);
  // Handles `c` if it belongs to one of its transfers; false otherwise.
  bool handle(const ici::Network::Completion& c);
  [[nodiscard]] bool idle() const { return legs_.empty(); }

  // The sender's data has left (credit its source flag).
  std::function<void(const RemoteSend& sender, double time)> on_sent;
  // `bytes` bytes (`data`, empty in timing-only runs) reached `chip`'s HBM at
  // `address`: credit its core 0 flag.
  std::function<void(std::uint32_t chip, std::uint64_t address, std::uint64_t bytes,
                     const std::vector<std::uint8_t>& data, std::uint32_t flag, std::int32_t credit, double time)>
      on_delivered;

 private:
  struct Operation {
    bool reduce = false;
    const ici::Fabric::Domain* domain = nullptr;
    std::uint32_t dst_rank = 0;    // reduce: the destination's rank in the domain
    std::uint32_t first_chip = 0;  // reduce: the chip that opened the round (for messages)
    std::uint64_t bytes = 0;
    bool bf16 = false;
    std::uint64_t dst_address = 0;
    std::uint32_t dst_flag = 0;
    std::int32_t dst_credit = 0;
    std::vector<std::pair<std::uint16_t, std::uint64_t>> parts;  // (switch index, bytes)
    std::vector<RemoteSend> senders;                             // by rank (reduce), or the one sender
    std::vector<bool> joined;                                    // reduce: by rank
    std::uint32_t joined_count = 0;
    std::vector<std::uint32_t> sent_parts;  // by sender slot
    std::vector<std::uint32_t> at_switch;   // by part: contributions arrived
    std::vector<std::uint32_t> delivered;   // by rank: parts arrived
    std::uint32_t done = 0;                 // ranks that got their data (reduce: 0 or 1)
  };
  struct Leg {
    std::uint64_t op;
    std::uint32_t part;
    std::uint32_t slot;  // up: the sender slot; down: the receiving rank
    bool up;
  };
  void climb(std::uint64_t id, std::uint32_t slot, std::uint32_t rank, double start);
  void finish(std::uint64_t id, std::uint32_t rank, double time);

  ici::Network& network_;
  std::map<std::uint64_t, Operation> ops_;
  std::uint64_t next_op_ = 0;
  // Reduction rounds by (the domain's first chip, round): the operation.
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> rounds_;
  std::unordered_map<std::uint32_t, std::uint64_t> reduces_issued_;  // per chip
  std::unordered_map<ici::Network::TransferKey, Leg, ici::Network::TransferKeyHash> legs_;
};

}  // namespace tpuemu::chip
