#include "programs/llo_writer.hpp"

#include <algorithm>
#include <map>

#include "common/machine_classes.hpp"

namespace tpuemu::programs {

void LloWriter::comment(const std::string& text) {
  flush();
  out_ += "// " + text + "\n";
}

void LloWriter::label(const std::string& name) {
  flush();
  out_ += name + ":\n";
}

void LloWriter::raw(const std::string& line) {
  flush();
  out_ += line + "\n";
}

void LloWriter::op(SlotClass slot, const std::string& text, std::vector<std::string> reads,
                   std::vector<std::string> writes) {
  queue_.push_back({slot, text, std::move(reads), std::move(writes)});
}

void LloWriter::bundle(const std::vector<std::string>& ops, const std::string& note) {
  flush();
  std::string line = "{";
  for (std::size_t i = 0; i < ops.size(); ++i) line += (i ? " ;; " : " ") + ops[i];
  line += ops.empty() ? "}" : " }";
  if (!note.empty()) line += "  // " + note;
  out_ += line + "\n";
  ++bundles_;
}

void LloWriter::flush() {
  if (queue_.empty()) return;
  struct Slotted {
    std::vector<const Queued*> ops;
    std::array<std::size_t, kSlotClassCount> used{};
  };
  std::vector<Slotted> placed;
  std::map<std::string, std::size_t> last_write;  // register -> bundle of its latest writer
  std::map<std::string, std::size_t> last_read;   // register -> bundle of its latest reader
  std::size_t floor = 0;                          // ops stay in program order per register only
  for (const Queued& q : queue_) {
    std::size_t earliest = floor;
    for (const auto& r : q.reads) {
      if (auto it = last_write.find(r); it != last_write.end()) earliest = std::max(earliest, it->second + 1);
    }
    for (const auto& w : q.writes) {
      if (auto it = last_read.find(w); it != last_read.end()) earliest = std::max(earliest, it->second);
      if (auto it = last_write.find(w); it != last_write.end()) earliest = std::max(earliest, it->second + 1);
    }
    // A branch closes the block: it goes no earlier than the last bundle so far.
    if (q.slot == SlotClass::kBranch && !placed.empty()) earliest = std::max(earliest, placed.size() - 1);
    const std::size_t cls = static_cast<std::size_t>(q.slot);
    const std::uint64_t capacity = q.slot == SlotClass::kPseudo ? 1000 : chip_.slot_capacity_of(q.slot);
    std::size_t b = earliest;
    while (b < placed.size() && placed[b].used[cls] >= capacity) ++b;
    if (b >= placed.size()) placed.resize(b + 1);
    placed[b].ops.push_back(&q);
    ++placed[b].used[cls];
    for (const auto& r : q.reads) last_read[r] = std::max(last_read[r], b);
    for (const auto& w : q.writes) last_write[w] = b;
    // Memory and control ops are barriers: nothing after them moves before them
    // (a DMA reads VMEM that earlier stores wrote; loads follow the waits).
    if (q.slot == SlotClass::kBranch || q.slot == SlotClass::kSync || q.slot == SlotClass::kDma ||
        q.slot == SlotClass::kStore) {
      floor = b;
    }
  }
  for (const auto& s : placed) {
    std::string line = "{";
    for (std::size_t i = 0; i < s.ops.size(); ++i) line += (i ? " ;; " : " ") + s.ops[i]->text;
    line += s.ops.empty() ? "}" : " }";
    out_ += line + "\n";
    ++bundles_;
  }
  // The branch delay slots (the writer leaves them empty).
  if (queue_.back().slot == SlotClass::kBranch) {
    for (std::uint64_t i = 0; i < chip_.branch_delay_slots; ++i) {
      out_ += "{}\n";
      ++bundles_;
    }
  }
  queue_.clear();
}

}  // namespace tpuemu::programs
