#include "chip/waveform.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <unordered_set>

#include "dist/bytes.hpp"

namespace tpuemu::chip {
namespace {

std::string vcd_path(const std::string& path) {
  return path.ends_with(".vcd") ? path : path + ".vcd";
}

// VCD identifier of the signal at file position `n`: a, b, ..., z, ba, bb, ...
std::string identifier(std::size_t n) {
  std::string id;
  do {
    id.insert(id.begin(), static_cast<char>('a' + n % 26));
    n /= 26;
  } while (n > 0);
  return id;
}

std::string binary(std::uint32_t value) {
  if (value == 0) return "0";
  std::string bits;
  for (; value != 0; value >>= 1) bits.insert(bits.begin(), (value & 1U) != 0 ? '1' : '0');
  return bits;
}

// A scope of the file: its own signals (file positions) and its sub-scopes in order of appearance.
struct Scope {
  std::vector<std::size_t> signals;
  // Parallel vectors, not pairs: std::pair needs Scope complete here, which
  // clang with libstdc++ enforces (std::vector alone may hold an incomplete type).
  std::vector<std::string> child_names;
  std::vector<Scope> children;
  Scope& child(const std::string& name) {
    for (std::size_t i = 0; i < child_names.size(); ++i) {
      if (child_names[i] == name) return children[i];
    }
    child_names.push_back(name);
    return children.emplace_back();
  }
};

}  // namespace

Waveform::Waveform(const std::string& path, double clock_hz, std::uint64_t max_changes)
    : path_(vcd_path(path)), clock_hz_(clock_hz), max_changes_(max_changes) {
  std::ofstream probe(path_);
  if (!probe) throw std::runtime_error(fmt::format("--vcd {}: cannot write this file", path));
}

std::uint32_t Waveform::declare(const std::string& name, bool is_bit, std::uint32_t group) {
  signals_.push_back({name, is_bit, group});
  return static_cast<std::uint32_t>(signals_.size() - 1);
}

std::uint32_t Waveform::bit(const std::string& name, std::uint32_t group) {
  return declare(name, true, group);
}

std::uint32_t Waveform::word(const std::string& name, std::uint32_t group) {
  return declare(name, false, group);
}

std::string Waveform::overflow_message(std::uint64_t max_changes) {
  return fmt::format("the waveform would exceed {} value changes; run a smaller program or raise --vcd-max-changes",
                     max_changes);
}

void Waveform::change(std::uint32_t signal, double cycle, std::uint32_t value) {
  if (changes_.size() >= max_changes_) {
    overflowed_ = true;
    throw WaveformOverflow(overflow_message());
  }
  changes_.push_back({cycle, signal, value});
}

void Waveform::write() const {
  // File positions: by group, then declaration (absorbed signals come after
  // this process's, and a group is one process's).
  std::vector<std::size_t> order(signals_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [this](std::size_t a, std::size_t b) { return signals_[a].group < signals_[b].group; });
  std::vector<std::size_t> position(signals_.size());
  for (std::size_t p = 0; p < order.size(); ++p) position[order[p]] = p;

  Scope root;
  for (std::size_t p = 0; p < order.size(); ++p) {
    const std::string& name = signals_[order[p]].name;
    Scope* scope = &root;
    std::size_t start = 0;
    for (std::size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', start)) {
      scope = &scope->child(name.substr(start, dot - start));
      start = dot + 1;
    }
    scope->signals.push_back(p);
  }

  std::ofstream out(path_);
  out << "$version tpuemu $end\n$timescale 1 ps $end\n$scope module tpuemu $end\n";
  const auto write_scope = [&](const Scope& scope, const auto& self) -> void {
    for (const std::size_t p : scope.signals) {
      const Signal& s = signals_[order[p]];
      const std::string leaf = s.name.substr(s.name.rfind('.') + 1);
      out << fmt::format("$var wire {} {} {}{} $end\n", s.is_bit ? 1 : 32, identifier(p), leaf,
                         s.is_bit ? "" : " [31:0]");
    }
    for (std::size_t i = 0; i < scope.children.size(); ++i) {
      const std::string& name = scope.child_names[i];
      const Scope& child = scope.children[i];
      out << "$scope module " << name << " $end\n";
      self(child, self);
      out << "$upscope $end\n";
    }
  };
  write_scope(root, write_scope);
  out << "$upscope $end\n$enddefinitions $end\n$dumpvars\n";
  for (std::size_t p = 0; p < order.size(); ++p) {
    out << (signals_[order[p]].is_bit ? "0" : "b0 ") << identifier(p) << "\n";
  }
  out << "$end\n";

  // Changes by time, then file position, then recording order (the last wins).
  struct Timed {
    std::uint64_t ps;
    std::size_t position;
    std::size_t seq;
    std::uint32_t value;
  };
  std::vector<Timed> timed;
  timed.reserve(changes_.size());
  for (std::size_t i = 0; i < changes_.size(); ++i) {
    const Change& c = changes_[i];
    const auto ps = static_cast<std::uint64_t>(std::llround(c.cycle * 1e12 / clock_hz_));
    timed.push_back({ps, position[c.signal], i, c.value});
  }
  std::sort(timed.begin(), timed.end(), [](const Timed& a, const Timed& b) {
    if (a.ps != b.ps) return a.ps < b.ps;
    if (a.position != b.position) return a.position < b.position;
    return a.seq < b.seq;
  });
  std::vector<std::uint32_t> current(signals_.size(), 0);
  std::uint64_t stamped = UINT64_MAX;
  for (std::size_t i = 0; i < timed.size(); ++i) {
    const Timed& t = timed[i];
    if (i + 1 < timed.size() && timed[i + 1].ps == t.ps && timed[i + 1].position == t.position) continue;
    if (current[t.position] == t.value) continue;
    current[t.position] = t.value;
    if (stamped != t.ps) {
      out << '#' << t.ps << '\n';
      stamped = t.ps;
    }
    if (signals_[order[t.position]].is_bit) {
      out << (t.value != 0 ? '1' : '0') << identifier(t.position) << '\n';
    } else {
      out << 'b' << binary(t.value) << ' ' << identifier(t.position) << '\n';
    }
  }
  if (!out) throw std::runtime_error(fmt::format("--vcd {}: writing failed", path_));
}

std::vector<std::uint8_t> Waveform::serialize() const {
  dist::ByteWriter w;
  w.put(overflowed_);
  w.put<std::uint64_t>(signals_.size());
  for (const Signal& s : signals_) {
    w.put_string(s.name);
    w.put(s.is_bit);
    w.put(s.group);
  }
  w.put_vector(changes_);
  return w.take();
}

void Waveform::absorb(const std::vector<std::uint8_t>& bytes) {
  dist::ByteReader r(bytes);
  overflowed_ = r.get<bool>() || overflowed_;
  const auto base = static_cast<std::uint32_t>(signals_.size());
  std::unordered_set<std::string> names;
  for (const Signal& s : signals_) names.insert(s.name);
  for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
    Signal s;
    s.name = r.get_string();
    s.is_bit = r.get<bool>();
    s.group = r.get<std::uint32_t>();
    if (!names.insert(s.name).second) {
      throw std::logic_error(fmt::format("merging waveforms: signal '{}' was recorded twice", s.name));
    }
    signals_.push_back(std::move(s));
  }
  for (Change c : r.get_vector<Change>()) {
    c.signal += base;
    changes_.push_back(c);
  }
  if (changes_.size() > max_changes_) overflowed_ = true;  // the limit is the whole file's
}

}  // namespace tpuemu::chip
