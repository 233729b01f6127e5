#include "vpu/xlu.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "vpu/unhandled_op.hpp"

namespace tpuemu::vpu {
namespace {

using isa::OpId;

constexpr std::uint32_t kMaxChunks = kLanes / kSublanes;  // a transpose has at most 128 rows

bool is_transpose_op(OpId op) {
  return op == OpId::kVxposeStart || op == OpId::kVxposeCont || op == OpId::kVxposeEnd || op == OpId::kVxposeStartEnd;
}

// The op a chunk at position index/count must carry.
OpId expected_op(std::uint32_t index, std::uint32_t count) {
  if (count == 1) return OpId::kVxposeStartEnd;
  if (index == 1) return OpId::kVxposeStart;
  if (index == count) return OpId::kVxposeEnd;
  return OpId::kVxposeCont;
}

std::string describe(const TransposeChunk& chunk) {
  return fmt::format("{} [{}/{}] ({}) width {}", isa::mnemonic_text(chunk.op, 0), chunk.index, chunk.count,
                     chunk.narrow ? "narrow" : "short", chunk.width);
}

}  // namespace

Vreg rotate_lanes(const Vreg& source, std::uint32_t amount) {
  Vreg out;
  const std::size_t shift = amount % kLanes;
  for (std::size_t s = 0; s < kSublanes; ++s) {
    for (std::size_t lane = 0; lane < kLanes; ++lane) out.at(s, (lane + shift) % kLanes) = source.at(s, lane);
  }
  return out;
}

Vreg permute_lanes(const Vreg& source, const Vreg& pattern) {
  Vreg out;
  for (std::size_t s = 0; s < kSublanes; ++s) {
    for (std::size_t lane = 0; lane < kLanes; ++lane)
      out.at(s, lane) = source.at(s, pattern.at(s, lane) & (kLanes - 1));
  }
  return out;
}

void Transposer::check(const TransposeChunk& chunk) const {
  if (!is_transpose_op(chunk.op)) throw_unhandled_op("Transposer::feed", chunk.op, "a vxpose op");
  const auto fail = [&](const std::string& why) {
    throw std::runtime_error(fmt::format("transpose: {}: {}", describe(chunk), why));
  };
  if (chunk.count < 1 || chunk.count > kMaxChunks) {
    fail(fmt::format("a transpose has 1 to {} chunks (at most {} rows)", kMaxChunks, kLanes));
  }
  if (chunk.index < 1 || chunk.index > chunk.count) fail("chunk index outside 1..count");
  if (chunk.width < 1 || chunk.width > kLanes) fail(fmt::format("width must be 1..{}", kLanes));
  if (const OpId expected = expected_op(chunk.index, chunk.count); chunk.op != expected) {
    fail(fmt::format("chunk {}/{} must be {}", chunk.index, chunk.count, isa::mnemonic_text(expected, 0)));
  }
  const auto next = static_cast<std::uint32_t>(chunks_.size()) + 1;
  if (chunk.index != next) {
    fail(chunks_.empty() ? std::string("no transpose in progress: expected a start chunk [1/n]")
                         : fmt::format("out of order: expected chunk {}/{}", next, first_.count));
  }
  if (!chunks_.empty() &&
      (chunk.count != first_.count || chunk.width != first_.width || chunk.narrow != first_.narrow)) {
    fail(fmt::format("differs from the transpose's first chunk ({})", describe(first_)));
  }
}

std::vector<Vreg> Transposer::feed(const TransposeChunk& chunk, const Vreg& data) {
  check(chunk);
  if (chunks_.empty()) first_ = chunk;
  chunks_.push_back(data);
  if (chunk.index != chunk.count) return {};
  std::vector<Vreg> pops = transpose();
  chunks_.clear();
  return pops;
}

std::vector<Vreg> Transposer::transpose() const {
  const std::size_t width = first_.width;
  const std::size_t rows = chunks_.size() * kSublanes;
  std::vector<Vreg> pops((width + kSublanes - 1) / kSublanes);
  for (std::size_t k = 0; k < pops.size(); ++k) {
    for (std::size_t s = 0; s < kSublanes; ++s) {
      const std::size_t column = k * kSublanes + s;
      if (column >= width) break;
      for (std::size_t row = 0; row < rows; ++row) {
        pops[k].at(s, row) = chunks_[row / kSublanes].at(row % kSublanes, column);
      }
    }
  }
  return pops;
}

}  // namespace tpuemu::vpu
