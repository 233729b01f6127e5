#include "common/machine_classes.hpp"

namespace tpuemu {
namespace {

struct SlotName {
  SlotClass cls;
  std::string_view display;
  std::string_view key;
};
constexpr std::array<SlotName, kSlotClassCount> kSlotNames{{
    {SlotClass::kSalu, "SALU", "salu"},
    {SlotClass::kValu, "VALU", "valu"},
    {SlotClass::kLoad, "LOAD", "load"},
    {SlotClass::kStore, "STORE", "store"},
    {SlotClass::kMxu, "MXU", "mxu"},
    {SlotClass::kXlu, "XLU", "xlu"},
    {SlotClass::kEup, "EUP", "eup"},
    {SlotClass::kDma, "DMA", "dma"},
    {SlotClass::kBranch, "BRANCH", "branch"},
    {SlotClass::kSync, "SYNC", "sync"},
    {SlotClass::kMisc, "MISC", "misc"},
    {SlotClass::kPseudo, "pseudo", "pseudo"},
}};

struct LatencyName {
  LatencyClass cls;
  std::string_view key;
};
constexpr std::array<LatencyName, kLatencyClassCount> kLatencyNames{{
    {LatencyClass::kSalu, "salu"},
    {LatencyClass::kSmemLoad, "smem_load"},
    {LatencyClass::kValu, "valu"},
    {LatencyClass::kValuConvert, "valu_convert"},
    {LatencyClass::kVectorLoad, "vector_load"},
    {LatencyClass::kVectorStore, "vector_store"},
    {LatencyClass::kMxuPush, "mxu_push"},
    {LatencyClass::kMxuMatmul, "mxu_matmul"},
    {LatencyClass::kMxuPop, "mxu_pop"},
    {LatencyClass::kXluTranspose, "xlu_transpose"},
    {LatencyClass::kXluRotate, "xlu_rotate"},
    {LatencyClass::kXluPermute, "xlu_permute"},
    {LatencyClass::kEup, "eup"},
    {LatencyClass::kPop, "pop"},
    {LatencyClass::kBranch, "branch"},
    {LatencyClass::kSync, "sync"},
    {LatencyClass::kDmaIssue, "dma_issue"},
    {LatencyClass::kNone, "none"},
}};

}  // namespace

std::string_view to_string(SlotClass c) {
  return kSlotNames[static_cast<std::size_t>(c)].display;
}
std::string_view preset_key(SlotClass c) {
  return kSlotNames[static_cast<std::size_t>(c)].key;
}
std::string_view to_string(LatencyClass c) {
  return kLatencyNames[static_cast<std::size_t>(c)].key;
}
std::string_view preset_key(LatencyClass c) {
  return kLatencyNames[static_cast<std::size_t>(c)].key;
}

std::optional<SlotClass> slot_class_from_key(std::string_view key) {
  for (const auto& n : kSlotNames) {
    if (n.key == key || n.display == key) return n.cls;
  }
  return std::nullopt;
}

std::optional<LatencyClass> latency_class_from_key(std::string_view key) {
  for (const auto& n : kLatencyNames) {
    if (n.key == key) return n.cls;
  }
  return std::nullopt;
}

// The tables are indexed by the enum value: keep them in enum order.
static_assert([] {
  for (std::size_t i = 0; i < kSlotNames.size(); ++i) {
    if (static_cast<std::size_t>(kSlotNames[i].cls) != i) return false;
  }
  for (std::size_t i = 0; i < kLatencyNames.size(); ++i) {
    if (static_cast<std::size_t>(kLatencyNames[i].cls) != i) return false;
  }
  return true;
}());

}  // namespace tpuemu
