// Names shared by the instruction table (isa/) and the chip presets (configs/):
// the slot classes a bundle is packed by, and the latency classes whose cycle
// counts a preset provides. Adding a class here means adding it to every
// preset (the preset validator rejects a preset that misses one).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tpuemu {

enum class SlotClass : std::uint8_t {
  kSalu,    // scalar ALU, scalar loads/stores, address arithmetic
  kValu,    // vector ALU
  kLoad,    // vector loads from VMEM
  kStore,   // vector stores to VMEM
  kMxu,     // pushes, multiplies and pops of the matrix units
  kXlu,     // cross-lane unit ops and their pops
  kEup,     // pops of the transcendental unit
  kDma,     // DMA issue
  kBranch,  // control transfer
  kSync,    // sync-flag ops and waits
  kMisc,    // trace markers, mode settings, halts
  kPseudo,  // no hardware slot: operand bindings, casts, scheduling barriers
};
inline constexpr std::size_t kSlotClassCount = 12;

// Slot classes that have a capacity in a preset (every class but kPseudo).
inline constexpr std::array kCappedSlotClasses{
    SlotClass::kSalu, SlotClass::kValu, SlotClass::kLoad,   SlotClass::kStore, SlotClass::kMxu, SlotClass::kXlu,
    SlotClass::kEup,  SlotClass::kDma,  SlotClass::kBranch, SlotClass::kSync,  SlotClass::kMisc};

enum class LatencyClass : std::uint8_t {
  kSalu,          // scalar ALU result ready
  kSmemLoad,      // sld result ready
  kValu,          // simple vector ALU result ready
  kValuConvert,   // conversions, packs and unpacks
  kVectorLoad,    // vld result ready
  kVectorStore,   // vst visible to later loads
  kMxuPush,       // weight push into msra
  kMxuMatmul,     // vmatmul issue to first result in the result FIFO (fill)
  kMxuPop,        // vpop of a ready result to its vreg
  kXluTranspose,  // last transpose chunk to first result ready
  kXluRotate,     // lane rotation result ready
  kXluPermute,    // permute / lane broadcast result ready
  kEup,           // transcendental op result ready in the EUP FIFO
  kPop,           // any unit FIFO pop to its register
  kBranch,        // branch resolution (delay slots are a separate parameter)
  kSync,          // sync-flag update visible
  kDmaIssue,      // DMA descriptor issue to first byte moving
  kNone,          // no result (pseudo ops)
};
inline constexpr std::size_t kLatencyClassCount = 18;

std::string_view to_string(SlotClass c);
std::string_view to_string(LatencyClass c);
// Lower-case preset keys: "salu", "valu_convert", ...
std::string_view preset_key(SlotClass c);
std::string_view preset_key(LatencyClass c);
std::optional<SlotClass> slot_class_from_key(std::string_view key);
std::optional<LatencyClass> latency_class_from_key(std::string_view key);

}  // namespace tpuemu
